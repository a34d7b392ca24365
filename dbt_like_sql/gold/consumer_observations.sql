-- The window consumer_status judges: the latest consumer_status_window observations of the
-- committed offset of every group, topic and partition whose lag now is known (consumer_lag's
-- rows).
-- An observation is a committed offset at a time:
-- - from the log: every offset commit record at its commit time (the record's own time when the
--   commit time is outside the years 1-9999), at most one per partition and interval of
--   consumer_status_min_distance_seconds (the latest commit in it), as Burrow's min-distance
--   keeps a consumer that commits every few seconds from filling the window within a minute.
--   log_observations keeps them, folding in each refresh's new commits, as long as they can be in
--   a window;
-- - from snapshots, only for partitions the log holds no commit of: each value of the committed
--   offset at the first snapshot that saw it (the commit time's upper bound).
-- A prune of the committed offset snapshots keeps, of those partitions, the rows that start each
-- key's latest consumer_status_window runs (offsets_platform.models.committed_snapshot_pruning).
-- A model of its own so that the window is computed once per refresh: consumer_status uses it
-- in three places, and Spark computes a subquery used in three places three times.
{% set window_size = var('consumer_status_window') | int %}
with clock as (
    select unix_millis(timestamp {{ var("as_of") | sql_string }}) as now_ms
),

judged as (
    -- the partitions with a committed offset now and a known log end: consumer_status's rows
    select
        group_id,
        topic,
        partition_id
    from {{ ref('consumer_lag') }}
),

commit_observations as (
    -- the latest commit per interval, kept by log_observations while it can be in a window, of
    -- the partitions consumer_status judges
    select
        l.group_id,
        l.topic,
        l.partition_id,
        l.committed_offset,
        l.observed_at_ms as at_ms,
        l.source_offset as seq,
        'log' as source
    from {{ ref('log_observations') }} as l
    left semi join judged as j
        on l.group_id = j.group_id and l.topic = j.topic and l.partition_id = j.partition_id
    where l.observed_at_ms is not null
),

snapshots as (
    select
        snapshot_id,
        unix_millis(snapshot_at) as at_ms
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

snapshot_values as (
    -- the snapshots' values of the partitions the log holds no commit of and consumer_status
    -- judges: both filters keep or drop a partition's rows whole, so they come before the window,
    -- which then sorts only what it needs (where the log is read, next to nothing) instead of
    -- every committed offset of every snapshot
    select
        o.group_id,
        o.topic,
        o.partition_id,
        o.committed_offset,
        s.at_ms,
        lag(o.committed_offset) over (
            partition by o.group_id, o.topic, o.partition_id
            order by s.at_ms
        ) as previous_value
    from {{ ref('stg_snapshots__committed_offsets') }} as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id
    left semi join judged as j
        on o.group_id = j.group_id and o.topic = j.topic and o.partition_id = j.partition_id
    left anti join (select distinct
        group_id,
        topic,
        partition_id
    from {{ ref('log_observations') }}) as l
        on o.group_id = l.group_id and o.topic = l.topic and o.partition_id = l.partition_id
),

snapshot_observations as (
    select
        group_id,
        topic,
        partition_id,
        committed_offset,
        at_ms,
        cast(0 as bigint) as seq,
        'snapshot' as source
    from snapshot_values
    where previous_value is null or previous_value <> committed_offset
),

numbered as (
    select
        o.*,
        row_number() over (
            partition by o.group_id, o.topic, o.partition_id
            order by o.at_ms desc, o.seq desc
        ) as from_last
    from (
        select * from commit_observations
        union all
        select * from snapshot_observations
    ) as o
    -- both kinds hold only the partitions consumer_status judges already
    where o.at_ms <= (select now_ms from clock)
),

observation_window as (
    select * from numbered
    where from_last <= {{ window_size }}
)

select
    group_id,
    topic,
    partition_id,
    cast(from_last as int) as rank_from_latest,
    committed_offset,
    at_ms as observed_at_ms,
    timestamp_millis(at_ms) as observed_at,
    source as observed_from
from observation_window
