-- When retention will delete messages a group has not consumed yet, at its current lag. Kafka
-- deletes the oldest segments while now minus a segment's largest record timestamp exceeds
-- retention.ms (UnifiedLog.deleteRetentionMsBreachedSegments, LogSegment.largestTimestamp). Record
-- timestamps are the broker's append times on a LogAppendTime topic, the producers' on a
-- CreateTime one, and those can be far older than the write: a mirror's target topic keeps the
-- source's timestamps. The oldest message the group has not read that is still in the log is
-- deleted at the earliest once its own timestamp is retention.ms old, as its segment's largest
-- timestamp is at least its own (a segment not yet rolled, or one holding a newer timestamp,
-- keeps it longer: hours_left below zero means due now).
--
-- Its timestamp is consumer_lag's oldest_unread_timestamp_ms: interpolated between the
-- snapshots' max timestamps (ListOffsets, KIP-734) where consumer_lag interpolates the message's
-- write time, assuming timestamps grow with offsets. Where the snapshots hold no max timestamps
-- (taken before they were recorded), the write time stands for it: exact on a LogAppendTime
-- topic, an assumption on a CreateTime one (timestamp_source).
-- Only messages still in the log are at risk: those retention already deleted are losses
-- (unconsumed_messages), never counted here too. One row per group and partition with unread
-- messages in the log of a topic whose cleanup.policy includes delete and whose retention.ms is
-- finite.
with snapshots as (
    select
        snapshot_id,
        snapshot_at,
        is_latest
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

latest_configs as (
    select
        c.topic,
        c.retention_ms,
        c.message_timestamp_type
    from {{ ref('stg_snapshots__topic_configs') }} as c
    inner join snapshots as l on c.snapshot_id = l.snapshot_id and l.is_latest
    where c.is_delete_policy and c.retention_ms > 0
),

at_risk as (
    select
        g.group_id,
        g.topic,
        g.partition_id,
        g.unread_in_log,
        g.lag_ms,
        g.is_time_lag_lower_bound,
        g.oldest_unread_timestamp_ms,
        g.is_oldest_unread_timestamp_upper_bound,
        g.measured_at,
        c.retention_ms,
        c.message_timestamp_type
    from {{ ref('consumer_lag') }} as g
    inner join latest_configs as c on g.topic = c.topic
    where g.unread_in_log > 0
),

stamped as (
    select
        *,
        coalesce(oldest_unread_timestamp_ms, unix_millis(measured_at) - lag_ms) as oldest_unconsumed_timestamp_ms,
        case when oldest_unread_timestamp_ms is null then 'write_time' else 'max_timestamp' end as timestamp_source,
        coalesce(is_oldest_unread_timestamp_upper_bound, is_time_lag_lower_bound) as is_timestamp_upper_bound
    from at_risk
)

select
    group_id,
    topic,
    partition_id,
    unread_in_log,
    lag_ms as oldest_unconsumed_age_ms,
    is_timestamp_upper_bound as is_time_lag_lower_bound,
    retention_ms,
    round((try_add(oldest_unconsumed_timestamp_ms, retention_ms) - unix_millis(measured_at)) / 3600e3, 3) as hours_left,
    {{ lake_timestamp('try_add(oldest_unconsumed_timestamp_ms, retention_ms)') }} as deletion_expected_at,
    measured_at,
    message_timestamp_type,
    oldest_unconsumed_timestamp_ms,
    timestamp_source
from stamped
