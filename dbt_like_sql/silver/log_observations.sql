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
-- An incremental run folds the new commits into the partitions they touch, and into those that
-- hold more than a window up to as_of (an observation that was after the last as_of and is now
-- before it): a new commit in an interval already kept replaces its row (a group's commits all
-- live in one partition of the log, GroupCoordinatorService.partitionFor hashing the group id, and
-- ingest reads committed records in offset order, so the new one is the later), and the rows that fell out of
-- the window come back flagged is_pruned, which deletes them (a new row is flagged too when it
-- is not kept: its interval may have a row from before). An observation that falls out of
-- the window up to one as_of stays out of it up to any later one, so this equals a full run as
-- long as as_of does not go back (the runner runs it full when it does).
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

new_observations as (
    select
        group_id,
        topic,
        partition_id,
        interval_id,
        max_by(committed_offset, source_offset) as committed_offset,
        max_by(at_ms, source_offset) as observed_at_ms,
        max(source_offset) as source_offset,
        false as is_earlier
    from (
        select
            *,
            {% if min_distance_ms > 0 %}
                coalesce(floor(at_ms / {{ min_distance_ms }}), {{ untimed }}) as interval_id
            {% else %}
                if(at_ms is null, {{ untimed }}, source_offset) as interval_id
            {% endif %}
        from new_commits
    ) as c
    group by group_id, topic, partition_id, interval_id
),

candidates as (
    select * from new_observations
    {% if is_incremental() %}
        union all
        -- the rows kept so far of the partitions to fold, but for intervals the new commits replace
        select
            t.group_id,
            t.topic,
            t.partition_id,
            t.interval_id,
            t.committed_offset,
            t.observed_at_ms,
            t.source_offset,
            true
        from {{ this }} as t
        left semi join (
            select
                group_id,
                topic,
                partition_id
            from new_observations
            union
            select
                group_id,
                topic,
                partition_id
            from {{ this }}
            group by group_id, topic, partition_id
            having count_if(observed_at_ms <= (select now_ms from clock)) > {{ window_size }}
        ) as folded
            on t.group_id = folded.group_id and t.topic = folded.topic and t.partition_id = folded.partition_id
        left anti join new_observations as n
            on
                t.group_id = n.group_id and t.topic = n.topic and t.partition_id = n.partition_id
                and t.interval_id = n.interval_id
    {% endif %}
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
    from candidates
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
    -- every new row, flagged when it is not kept (its interval may have a row in the table), and
    -- the earlier rows that are not kept any more; earlier rows that stay are left as they are
    where not is_earlier or from_last > {{ window_size }}
{% else %}
    -- a full run writes only what it keeps. A filter on row_number alone lets Spark keep each
    -- partition's top rows before it shuffles them (its window group limit), instead of sorting
    -- every interval of the log.
    where from_last <= {{ window_size }}
{% endif %}
