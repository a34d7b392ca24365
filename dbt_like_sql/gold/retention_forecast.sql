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
-- Its timestamp comes from the snapshots' max timestamps (ListOffsets, KIP-734): the largest
-- record timestamp of the partition when its log end was e is the largest of the records below e,
-- so between the two snapshots whose log ends bracket the message it is interpolated the way
-- consumer_lag interpolates its write time, assuming timestamps grow with offsets. Where the
-- snapshots hold no max timestamps (taken before they were recorded), the write time stands for
-- it: exact on a LogAppendTime topic, an assumption on a CreateTime one (timestamp_source).
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

log_history as (
    select
        o.topic,
        o.partition_id,
        o.log_end_offset,
        o.max_timestamp_ms,
        s.snapshot_at,
        lag(o.log_end_offset) over w as previous_end,
        lag(o.max_timestamp_ms) over w as previous_max_timestamp_ms,
        max(o.log_end_offset) over (
            partition by o.topic, o.partition_id order by s.snapshot_at
            rows between unbounded preceding and 1 preceding
        ) as highest_end_before
    from {{ ref('stg_snapshots__log_offsets') }} as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id
    window w as (partition by o.topic, o.partition_id order by s.snapshot_at)
),

rises as (
    -- the snapshots whose log end passed every earlier one's, as consumer_lag finds the first
    -- snapshot whose log end passed an offset
    select
        topic,
        partition_id,
        log_end_offset,
        named_struct(
            'end', log_end_offset, 'max_ms', max_timestamp_ms,
            'previous_end', previous_end, 'previous_max_ms', previous_max_timestamp_ms
        ) as crossing
    from log_history
    where highest_end_before is null or log_end_offset > highest_end_before
),

at_risk as (
    select
        g.group_id,
        g.topic,
        g.partition_id,
        g.unread_in_log,
        g.lag_ms,
        g.is_time_lag_lower_bound,
        greatest(g.committed_offset, g.log_start_offset) as oldest_unread_offset,
        g.measured_at,
        c.retention_ms,
        c.message_timestamp_type
    from {{ ref('consumer_lag') }} as g
    inner join latest_configs as c on g.topic = c.topic
    where g.unread_in_log > 0
),

crossings as (
    -- the first snapshot whose log end passed the oldest unread message, and the one before it:
    -- the lowest rise above the offset, found in one window over both as consumer_lag does
    select
        group_id,
        topic,
        partition_id,
        crossing
    from (
        select
            group_id,
            topic,
            partition_id,
            is_at_risk,
            last(crossing, true) over (
                partition by topic, partition_id order by at_offset desc, is_at_risk desc
                rows between unbounded preceding and current row
            ) as crossing
        from (
            select
                group_id,
                topic,
                partition_id,
                oldest_unread_offset as at_offset,
                true as is_at_risk,
                null as crossing
            from at_risk
            union all
            select
                null,
                topic,
                partition_id,
                log_end_offset,
                false,
                crossing
            from rises
        ) as offsets_and_rises
    ) as in_offset_order
    where is_at_risk
),

stamped as (
    select
        r.*,
        case
            when x.crossing.max_ms is null then unix_millis(r.measured_at) - r.lag_ms
            -- no earlier snapshot brackets it: at most the largest timestamp when it was first seen
            when x.crossing.previous_max_ms is null then x.crossing.max_ms
            else
                -- in floating point, as consumer_lag interpolates: the product of the two spans can
                -- pass a bigint's range
                x.crossing.previous_max_ms + cast(
                    cast(x.crossing.max_ms - x.crossing.previous_max_ms as double)
                    * (r.oldest_unread_offset + 1 - x.crossing.previous_end)
                    / (x.crossing.end - x.crossing.previous_end) as bigint
                )
        end as oldest_unconsumed_timestamp_ms,
        case when x.crossing.max_ms is null then 'write_time' else 'max_timestamp' end as timestamp_source,
        case
            when x.crossing.max_ms is null then r.is_time_lag_lower_bound
            else x.crossing.previous_max_ms is null
        end as is_timestamp_upper_bound
    from at_risk as r
    left join crossings as x on r.group_id = x.group_id and r.topic = x.topic and r.partition_id = x.partition_id
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
