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
-- per interval and one window per partition: a new commit in an interval already kept replaces
-- its row (a group's commits all live in one partition of the log, GroupCoordinatorService.partitionFor
-- hashing the group id, and ingest reads committed records in offset order, so the new one has
-- the higher source offset). It returns the new rows that are kept, and the earlier rows that are
-- not any more flagged is_pruned, which deletes them: those a new row pushed out of the window,
-- those an as_of that moved forward pushed out, and those whose interval's new row is not kept.
-- A new row that is not kept and replaces nothing is left out. An observation that falls out of
-- the window up to one as_of stays out of it up to any later one, so this equals a full run as
-- long as as_of does not go back (the runner runs it full when it does).
-- Ranking every kept row with the new ones, rather than only the partitions the new commits
-- touch, costs about a second more after 100,000 new records and 40% of the time after 3 M
-- (benchmarks/README.md): the partitions' rows meet in one shuffle, and the new commits are
-- read once.
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
    -- the new commits, and in an incremental run the rows kept so far (is_earlier)
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
        source_offset,
        false as is_earlier
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
            source_offset,
            true
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
        max(source_offset) as source_offset,
        bool_or(is_earlier) as had_earlier,
        bool_or(not is_earlier) as is_new
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
    source_offset,
    from_last > {{ window_size }} as is_pruned
from ranked
{% if is_incremental() %}
    -- the new rows kept, and the earlier rows not kept any more; earlier rows that stay are left
    -- as they are
    where (is_new and from_last <= {{ window_size }}) or (had_earlier and from_last > {{ window_size }})
{% else %}
    -- a full run writes only what it keeps. A filter on row_number alone lets Spark keep each
    -- partition's top rows before it shuffles them (its window group limit), instead of sorting
    -- every interval of the log.
    where from_last <= {{ window_size }}
{% endif %}
