-- Lag of every group on every partition it has committed an offset for, as of the latest
-- snapshot: in messages (log end - committed, as Kafka's tool counts it, but at least 0: Kafka's
-- tool prints a negative lag for an offset committed past the log end, where the group has
-- nothing to read, and a negative one would lower the group's total) and in time (how long
-- ago the oldest message the group has not read, of those retention has not deleted, was written:
-- the message at the committed offset, or at the log start when retention deleted past the
-- committed offset; the age of a message that no longer exists would only say when it was lost).
-- The write time is estimated from the snapshots' log end offsets: that message was written
-- between the last snapshot whose log end was at or below it and the first one above it,
-- interpolated linearly. Written before the first snapshot, the age is a lower bound.
with snapshots as (
    select
        snapshot_id,
        snapshot_at,
        is_latest
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

log_offsets as (
    select
        snapshot_id,
        topic,
        partition_id,
        log_start_offset,
        log_end_offset
    from {{ ref('stg_snapshots__log_offsets') }}
),

log_now as (
    select
        o.topic,
        o.partition_id,
        o.log_start_offset,
        o.log_end_offset,
        s.snapshot_at
    from log_offsets as o inner join snapshots as s on o.snapshot_id = s.snapshot_id and s.is_latest
),

log_history as (
    select
        o.topic,
        o.partition_id,
        o.log_end_offset,
        s.snapshot_at,
        lag(o.log_end_offset) over (partition by o.topic, o.partition_id order by s.snapshot_at) as previous_end,
        lag(s.snapshot_at) over (partition by o.topic, o.partition_id order by s.snapshot_at) as previous_at
    from log_offsets as o inner join snapshots as s on o.snapshot_id = s.snapshot_id
),

lagging as (
    select
        c.group_id,
        c.topic,
        c.partition_id,
        c.committed_offset,
        n.log_start_offset,
        n.log_end_offset,
        greatest(c.committed_offset, n.log_start_offset) as oldest_unread_offset,
        n.snapshot_at as measured_at
    from {{ ref('committed_offsets') }} as c
    inner join log_now as n on c.topic = n.topic and c.partition_id = n.partition_id
),

written as (
    -- the snapshot interval in which the log end first passed the committed offset
    select
        g.group_id,
        g.topic,
        g.partition_id,
        min_by(named_struct(
            'at', h.snapshot_at, 'end', h.log_end_offset,
            'previous_at', h.previous_at, 'previous_end', h.previous_end
        ),
        h.snapshot_at) as crossing
    from lagging as g
    inner join log_history as h
        on g.topic = h.topic and g.partition_id = h.partition_id and g.oldest_unread_offset < h.log_end_offset
    where g.oldest_unread_offset < g.log_end_offset
    group by g.group_id, g.topic, g.partition_id
),

estimated as (
    select
        g.*,
        case
            when g.oldest_unread_offset >= g.log_end_offset then g.measured_at
            when w.crossing.previous_at is null then w.crossing.at
            else
                -- in floating point: the product of the two spans can pass a bigint's range (two
                -- months between snapshots and ten billion messages), which ANSI arithmetic refuses;
                -- where it does not, the double product rounds as the bigint's division did
                timestamp_micros(unix_micros(w.crossing.previous_at) + cast(
                    cast(unix_micros(w.crossing.at) - unix_micros(w.crossing.previous_at) as double)
                    * (g.oldest_unread_offset + 1 - w.crossing.previous_end)
                    / (w.crossing.end - w.crossing.previous_end) as bigint
                ))
        end as oldest_unread_written_at,
        g.oldest_unread_offset < g.log_end_offset and w.crossing.previous_at is null as is_time_lag_lower_bound
    from lagging as g
    left join written as w on g.group_id = w.group_id and g.topic = w.topic and g.partition_id = w.partition_id
)

select
    group_id,
    topic,
    partition_id,
    committed_offset,
    log_start_offset,
    log_end_offset,
    greatest(log_end_offset - committed_offset, 0) as lag_messages,
    greatest(unix_millis(measured_at) - unix_millis(oldest_unread_written_at), 0) as lag_ms,
    is_time_lag_lower_bound,
    committed_offset < log_start_offset as is_below_log_start,
    greatest(log_start_offset - committed_offset, 0) as messages_below_log_start,
    greatest(log_end_offset - oldest_unread_offset, 0) as unread_in_log,
    measured_at
from estimated
