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
-- The record timestamp of that message, which time-based retention reads (retention_forecast),
-- is interpolated the same way between the partition's max timestamps at those two snapshots
-- (ListOffsets MAX_TIMESTAMP, KIP-734): the largest record timestamp when the log end was e is the
-- largest of the records below e. It assumes timestamps grow with offsets; it is null where the
-- snapshots recorded no max timestamp.
{#- a value between `before` (at the snapshot before the crossing) and `after` (at the crossing),
    in the share of the messages written between the two that reach the oldest unread one: in
    floating point, since the product of the two spans can pass a bigint's range (two months between
    snapshots and ten billion messages), which ANSI arithmetic refuses; where it does not, the
    double product rounds as a bigint division would #}
{% macro interpolated(before, after) -%}
    {{ before }} + cast(
        cast({{ after }} - {{ before }} as double)
        * (g.oldest_unread_offset + 1 - w.crossing.previous_end)
        / (w.crossing.end - w.crossing.previous_end) as bigint
    )
{%- endmacro %}
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
        log_end_offset,
        max_timestamp_ms
    from {{ ref('stg_snapshots__log_offsets') }}
),

log_offsets_at as (
    select
        o.*,
        s.snapshot_at,
        s.is_latest
    from log_offsets as o inner join snapshots as s on o.snapshot_id = s.snapshot_id
),

log_now as (
    select
        topic,
        partition_id,
        log_start_offset,
        log_end_offset,
        snapshot_at
    from log_offsets_at
    where is_latest
),

first_past_log_start as (
    -- The oldest unread offset is at least the log start now, so the log end first passed it at
    -- or after the first snapshot whose log end passed the log start now (at the first when that
    -- is unknown). Only the snapshots from the one before that on can bracket it: the history
    -- window below sorts those, not every snapshot the lake holds (retention deleted what the
    -- older ones saw). A partition the latest snapshot did not see has no lag to estimate.
    select /*+ broadcast(n) */
        o.topic,
        o.partition_id,
        min(case when n.log_start_offset is null or o.log_end_offset > n.log_start_offset then o.snapshot_at end)
            as first_at
    from log_offsets_at as o
    inner join log_now as n on o.topic = n.topic and o.partition_id = n.partition_id
    group by o.topic, o.partition_id
),

history_from as (
    select /*+ broadcast(f) */
        f.topic,
        f.partition_id,
        coalesce(max(case when o.snapshot_at < f.first_at then o.snapshot_at end), min(f.first_at)) as from_at
    from log_offsets_at as o
    inner join first_past_log_start as f on o.topic = f.topic and o.partition_id = f.partition_id
    group by f.topic, f.partition_id
),

log_history as (
    select /*+ broadcast(f) */
        o.topic,
        o.partition_id,
        o.log_end_offset,
        o.max_timestamp_ms,
        o.snapshot_at,
        lag(o.log_end_offset) over w as previous_end,
        lag(o.snapshot_at) over w as previous_at,
        lag(o.max_timestamp_ms) over w as previous_max_timestamp_ms,
        max(o.log_end_offset) over (
            partition by o.topic, o.partition_id order by o.snapshot_at
            rows between unbounded preceding and 1 preceding
        ) as highest_end_before
    from log_offsets_at as o
    inner join history_from as f
        on o.topic = f.topic and o.partition_id = f.partition_id and o.snapshot_at >= f.from_at
    window w as (partition by o.topic, o.partition_id order by o.snapshot_at)
),

rises as (
    -- the snapshots whose log end passed every earlier one's. The first snapshot whose log end
    -- passed an offset is one of them (those before it all ended at or below the offset), and
    -- of them it is the one with the lowest log end above the offset (their log ends rise in time)
    select
        topic,
        partition_id,
        log_end_offset,
        named_struct(
            'at', snapshot_at, 'end', log_end_offset, 'max_ms', max_timestamp_ms,
            'previous_at', previous_at, 'previous_end', previous_end, 'previous_max_ms', previous_max_timestamp_ms
        ) as crossing
    from log_history
    where highest_end_before is null or log_end_offset > highest_end_before
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
    -- the snapshot interval in which the log end first passed the oldest unread offset: the
    -- offsets and the rises of their partition in one order of offsets, from the highest, an
    -- offset before a rise to its own value (whose log end has not passed it); the last rise
    -- seen is then the lowest above the offset. One sort of both, where a join paired
    -- every offset with every snapshot of its partition. The frame runs up to the current row:
    -- Spark recomputes a frame that runs to the partition's end for every row.
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
            is_lagging,
            last(crossing, true) over (
                partition by topic, partition_id order by at_offset desc, is_lagging desc
                rows between unbounded preceding and current row
            ) as crossing
        from (
            select
                group_id,
                topic,
                partition_id,
                oldest_unread_offset as at_offset,
                true as is_lagging,
                null as crossing
            from lagging
            where oldest_unread_offset < log_end_offset
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
    where is_lagging
),

estimated as (
    select
        g.*,
        case
            when g.oldest_unread_offset >= g.log_end_offset then g.measured_at
            when w.crossing.previous_at is null then w.crossing.at
            else timestamp_micros(
                {{ interpolated('unix_micros(w.crossing.previous_at)', 'unix_micros(w.crossing.at)') }}
            )
        end as oldest_unread_written_at,
        g.oldest_unread_offset < g.log_end_offset and w.crossing.previous_at is null as is_time_lag_lower_bound,
        -- null too where nothing is unread in the log (no crossing)
        case
            when w.crossing.max_ms is null then null
            -- no earlier snapshot brackets it: at most the largest timestamp when it was first seen
            when w.crossing.previous_max_ms is null then w.crossing.max_ms
            else {{ interpolated('w.crossing.previous_max_ms', 'w.crossing.max_ms') }}
        end as oldest_unread_timestamp_ms,
        case when w.crossing.max_ms is not null then w.crossing.previous_max_ms is null end
            as is_oldest_unread_timestamp_upper_bound
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
    measured_at,
    oldest_unread_timestamp_ms,
    is_oldest_unread_timestamp_upper_bound
from estimated
