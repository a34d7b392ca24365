-- When retention will delete messages a group has not consumed yet, at its current lag: the oldest
-- message it has not read that is still in the log is lag_ms old, and time-based retention
-- deletes it once it is retention.ms old (Kafka deletes whole segments, so this is the earliest it
-- can happen, and a segment not yet rolled keeps it longer: hours_left below zero means due now).
-- Only messages still in the log are at risk: those retention already deleted are losses
-- (unconsumed_messages), never counted here too. One row per group and partition with unread
-- messages in the log of a topic with cleanup.policy=delete and a finite retention.ms.
with latest_configs as (
    select
        c.topic,
        c.retention_ms,
        c.cleanup_policy
    from {{ ref('stg_snapshots__topic_configs') }} as c
    inner join {{ ref('stg_snapshots__complete_snapshots') }} as l
        on c.snapshot_id = l.snapshot_id and l.is_latest
)

select
    g.group_id,
    g.topic,
    g.partition_id,
    g.unread_in_log,
    g.lag_ms as oldest_unconsumed_age_ms,
    g.is_time_lag_lower_bound,
    c.retention_ms,
    round((c.retention_ms - g.lag_ms) / 3600e3, 3) as hours_left,
    timestamp_millis(unix_millis(g.measured_at) + c.retention_ms - g.lag_ms) as deletion_expected_at,
    g.measured_at
from {{ ref('consumer_lag') }} as g
inner join latest_configs as c on g.topic = c.topic
where
    g.unread_in_log > 0 and c.retention_ms > 0
    and array_contains(split(c.cleanup_policy, ','), 'delete')
