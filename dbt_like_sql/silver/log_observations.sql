-- The observations of each partition's committed offset that the log gives consumer_status's
-- window (consumer_observations): the latest commit per partition and interval of
-- consumer_status_min_distance_seconds, at its commit time (the record's own time when the commit
-- time is outside the years 1-9999), kept only while it can still be in a window.
--
-- The state the window needs, so that a refresh reads the commits new since the last one and not
-- the whole log: a partition keeps its latest consumer_status_window observations up to as_of,
-- every observation after as_of (a later refresh may count them), and one row of the commits
-- without a usable time (never observed, but they mean the log holds commits of the partition,
-- so consumer_observations does not take its observations from snapshots).
-- An incremental run ranks the new commits together with the rows kept so far, the latest per
-- interval and then the window per partition, and returns what is kept: the table's whole new
-- content (incremental_strategy: replace). A new commit in an interval already kept replaces its
-- row (a group's commits all live in one partition of the log, GroupCoordinatorService.partitionFor
-- hashing the group id, and ingest reads committed records in offset order, so the new one has
-- the higher source offset). An observation that falls out of the window up to one as_of stays
-- out of it up to any later one, so this equals a full run as long as as_of does not go back (the
-- runner runs it full when it does). The state is a window per partition whatever the history,
-- so a run costs the new commits and the state: one shuffle of them by partition and one sort,
-- where an aggregate per interval and a window per partition had shuffled and sorted them twice
-- (benchmarks/README.md).
{% set window_size = var('consumer_status_window') | int %}
{% set min_distance_ms = (var('consumer_status_min_distance_seconds') | int) * 1000 %}
-- the interval of the commits without a usable time: below any interval of a time
{% set untimed = -9223372036854775807 %}
-- Intervals of a minimum distance follow one another in time, so their order is the commits';
-- at a distance of 0 an interval is a commit's source offset, and the commit times decide.
{% set in_time_order = 'interval_id' if min_distance_ms > 0 else 'observed_at_ms, source_offset' %}
with clock as (
    select unix_millis(timestamp {{ var("as_of") | sql_string }}) as now_ms
),

new_commits as (
    select
        group_id,
        topic,
        partition_id,
        committed_offset,
        coalesce(unix_millis(committed_at), unix_millis(appended_at)) as at_ms,
        source_offset
    from {{ ref('stg_kafka__offset_commits', new_only=true) }}
    where not is_tombstone
),

rows as (
    -- the new commits, and in an incremental run the rows kept so far
    select
        group_id,
        topic,
        partition_id,
        {% if min_distance_ms > 0 %}
            coalesce(floor(at_ms / {{ min_distance_ms }}), {{ untimed }}) as interval_id,
        {% else %}
            if(at_ms is null, {{ untimed }}, source_offset) as interval_id,
        {% endif %}
        committed_offset,
        at_ms as observed_at_ms,
        source_offset
    from new_commits
    {% if is_incremental() %}
        union all
        select
            group_id,
            topic,
            partition_id,
            interval_id,
            committed_offset,
            observed_at_ms,
            source_offset
        from {{ this }}
    {% endif %}
),

by_partition as (
    -- every row of a partition in one task: the latest commit per interval and the window below
    -- both need only this one shuffle, and one sort serves both (benchmarks/README.md)
    select /*+ repartition(group_id, topic, partition_id) */ *
    from rows
),

observations as (
    -- one row per interval: its latest commit, new or kept before
    select
        group_id,
        topic,
        partition_id,
        interval_id,
        committed_offset,
        observed_at_ms,
        source_offset,
        observed_at_ms <= (select now_ms from clock) as is_up_to_as_of
    from (
        select
            *,
            row_number() over (
                partition by group_id, topic, partition_id, interval_id order by source_offset desc
            ) as from_latest_in_interval
        from by_partition
    ) as in_intervals
    where from_latest_in_interval = 1
),

ranked as (
    -- the observations up to as_of, counted from the last one: intervals in time order, so the
    -- order of the sort above. Those after as_of come after them (an interval is one row now)
    -- and those without a time before them; both are always kept (is_up_to_as_of not true).
    select
        *,
        count_if(is_up_to_as_of) over (partition by group_id, topic, partition_id)
        - count_if(is_up_to_as_of) over (
            partition by group_id, topic, partition_id order by {{ in_time_order }}
            rows between unbounded preceding and current row
        ) + 1 as from_last
    from observations
)

select
    group_id,
    topic,
    partition_id,
    interval_id,
    committed_offset,
    observed_at_ms,
    source_offset
from ranked
where not coalesce(is_up_to_as_of, false) or from_last <= {{ window_size }}
