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
-- An incremental run ranks the new commits together with the rows kept so far, in one aggregate
-- per interval and one window per partition, and returns what is kept: the table's whole new
-- content (incremental_strategy: replace). A new commit in an interval already kept replaces its
-- row (a group's commits all live in one partition of the log, GroupCoordinatorService.partitionFor
-- hashing the group id, and ingest reads committed records in offset order, so the new one has
-- the higher source offset). An observation that falls out of the window up to one as_of stays
-- out of it up to any later one, so this equals a full run as long as as_of does not go back (the
-- runner runs it full when it does). The state is a window per partition whatever the history,
-- so a run costs the new commits and the state; and since only the top rows of each partition
-- are returned, Spark keeps them before its shuffle (its window group limit), in an incremental
-- run as in a full one, where returning the rows that left the window sorted them all
-- (benchmarks/README.md).
{% set window_size = var('consumer_status_window') | int %}
{% set min_distance_ms = (var('consumer_status_min_distance_seconds') | int) * 1000 %}
-- the interval of the commits without a usable time: below any interval of a time
{% set untimed = -9223372036854775807 %}
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

observations as (
    -- one row per interval: its latest commit, new or kept before
    select
        group_id,
        topic,
        partition_id,
        interval_id,
        max_by(committed_offset, source_offset) as committed_offset,
        max_by(observed_at_ms, source_offset) as observed_at_ms,
        max(source_offset) as source_offset
    from rows
    group by group_id, topic, partition_id, interval_id
),

ranked as (
    select
        *,
        row_number() over (
            -- the observations up to as_of share a partition, where only a window is kept; one
            -- after as_of or without a time is alone in its own, so it is always kept
            partition by
                group_id, topic, partition_id,
                if(observed_at_ms <= (select now_ms from clock), null, interval_id)
            order by observed_at_ms desc, source_offset desc
        ) as from_last
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
-- only what is kept. A filter on row_number alone lets Spark keep each partition's top rows
-- before it shuffles them (its window group limit), instead of sorting every interval.
where from_last <= {{ window_size }}
