-- KIP-490 facts: each time a partition's log start offset moved past a watched group's committed
-- offset between two snapshots, the messages in [max(previous log start, committed), new log
-- start) were deleted (retention or DeleteRecords) before the group consumed them. Only topics
-- with cleanup.policy=delete. Kafka moves a partition's log start when retention deletes old
-- segments or DeleteRecords asks (UnifiedLog.deleteOldSegments, maybeIncrementLogStartOffset),
-- and a fetch below it fails with OFFSET_OUT_OF_RANGE (UnifiedLog.read, checkLogStartOffset), so
-- a committed offset below the new log start marks messages the group can no longer read. Kafka
-- keeps no count of them (KIP-490 proposed one).
--
-- When between the two snapshots the log start moved is not known, so neither is the committed
-- offset in force at that moment: it is one of the offsets the group held during the interval
-- (the one the earlier snapshot saw, each one the log shows committed in between, the one the
-- later snapshot saw). The lowest of them gives count_lost, the most the group can have lost;
-- the highest gives count_lost_at_least. The later offset alone would miss a loss whenever the
-- consumer reset past the deleted range and committed before the next snapshot.
--
-- Watched groups: a topic listed in the watched_groups variable is watched by the groups listed,
-- on every partition; a listed group that held no offset at some point of the interval consumed
-- none of what was deleted. Any other topic's partition is watched by the groups that held an
-- offset on that partition during the interval.
{% set watched = var('watched_groups', {}) %}
with snapshots as (
    select
        snapshot_id,
        snapshot_at
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

moves as (
    select * from (
        select
            o.topic,
            o.partition_id,
            o.snapshot_id,
            s.snapshot_at,
            o.log_start_offset,
            lag(o.log_start_offset) over w as previous_log_start_offset,
            lag(o.snapshot_id) over w as previous_snapshot_id,
            lag(s.snapshot_at) over w as previous_snapshot_at
        from {{ ref('stg_snapshots__log_offsets') }} as o
        inner join snapshots as s on o.snapshot_id = s.snapshot_id
        window w as (partition by o.topic, o.partition_id order by s.snapshot_at)
    )
    where log_start_offset > previous_log_start_offset
),

configs as (
    select
        c.snapshot_id,
        c.topic,
        c.retention_ms,
        c.retention_bytes,
        c.cleanup_policy
    from {{ ref('stg_snapshots__topic_configs') }} as c
),

window_bounds as (
    -- the span of every move's interval, as constants the log's scan can skip files with
    select
        min(previous_snapshot_at) as earliest,
        max(snapshot_at) as latest
    from moves
),

held as (
    -- every offset a group held on a moved partition during the move's interval; a tombstone in
    -- the log holds none (null)
    select
        m.topic,
        m.partition_id,
        m.snapshot_id,
        o.group_id,
        o.committed_offset,
        o.snapshot_id = m.previous_snapshot_id as at_start,
        o.snapshot_id = m.snapshot_id as at_end
    from moves as m
    inner join {{ ref('stg_snapshots__committed_offsets') }} as o
        on
            m.topic = o.topic and m.partition_id = o.partition_id
            and o.snapshot_id in (m.previous_snapshot_id, m.snapshot_id)
    union all
    select /*+ broadcast(m) */
        m.topic,
        m.partition_id,
        m.snapshot_id,
        r.group_id,
        case when not r.is_tombstone then r.committed_offset end,
        false,
        false
    from moves as m
    inner join {{ ref('stg_kafka__offset_commits') }} as r
        on
            m.topic = r.topic and m.partition_id = r.partition_id
            and m.previous_snapshot_at < r.appended_at and m.snapshot_at >= r.appended_at
    where
        r.appended_at > (select earliest from window_bounds)
        and r.appended_at <= (select latest from window_bounds)
),

held_per_group as (
    select
        topic,
        partition_id,
        snapshot_id,
        group_id,
        min(committed_offset) as lowest_offset,
        max(committed_offset) as highest_offset,
        max(case when at_start then committed_offset end) as committed_offset_at_start,
        max(case when at_end then committed_offset end) as committed_offset,
        cast(count_if(not at_start and not at_end) as int) as count_log_records_between,
        -- held an offset from one snapshot to the other without a gap
        bool_or(at_start) and bool_or(at_end) and not bool_or(committed_offset is null) as held_throughout
    from held
    group by topic, partition_id, snapshot_id, group_id
),

configured_watch as (
    select *
    from
        values
        {%- for topic, groups in watched.items() %}{% for group in groups %}
        ({{ topic | sql_string }}, {{ group | sql_string }}),
    {%- endfor %}{% endfor %}
        ('', '') as t (topic, group_id)
),

configured_watchers as (
    select
        m.topic,
        m.partition_id,
        m.snapshot_id,
        w.group_id
    from moves as m inner join configured_watch as w on m.topic = w.topic
),

watchers as (
    -- per move, the groups listed for the topic, or else the groups that held an offset on the
    -- partition. One join, so that Spark reads the log once: it repeats a CTE's scan for every
    -- reference.
    select
        coalesce(g.topic, c.topic) as topic,
        coalesce(g.partition_id, c.partition_id) as partition_id,
        coalesce(g.snapshot_id, c.snapshot_id) as snapshot_id,
        coalesce(g.group_id, c.group_id) as group_id,
        case when c.group_id is not null then 'configured' else 'default' end as watched_by,
        g.lowest_offset,
        g.highest_offset,
        g.committed_offset_at_start,
        g.committed_offset,
        coalesce(g.count_log_records_between, 0) as count_log_records_between,
        coalesce(g.held_throughout, false) as held_throughout
    from held_per_group as g
    full outer join configured_watchers as c
        on
            g.topic = c.topic and g.partition_id = c.partition_id and g.snapshot_id = c.snapshot_id
            and g.group_id = c.group_id
    where
        c.group_id is not null
        or (g.highest_offset is not null and g.topic not in (select topic from configured_watch))
),

facts as (
    select
        m.topic,
        m.partition_id,
        w.group_id,
        w.watched_by,
        m.snapshot_at as observed_at,
        m.previous_snapshot_at,
        m.previous_log_start_offset,
        m.log_start_offset,
        w.committed_offset_at_start,
        w.committed_offset,
        w.count_log_records_between,
        greatest(
            m.previous_log_start_offset,
            case
                when w.watched_by = 'default' or w.held_throughout then w.lowest_offset
                else m.previous_log_start_offset
            end
        ) as lost_from_offset,
        greatest(m.previous_log_start_offset, coalesce(w.highest_offset, m.previous_log_start_offset))
            as certainly_lost_from_offset,
        c.retention_ms,
        c.retention_bytes,
        c.cleanup_policy
    from moves as m
    inner join watchers as w on m.topic = w.topic and m.partition_id = w.partition_id and m.snapshot_id = w.snapshot_id
    inner join configs as c on m.snapshot_id = c.snapshot_id and m.topic = c.topic
    where array_contains(split(c.cleanup_policy, ','), 'delete')
)

select
    topic,
    partition_id,
    group_id,
    watched_by,
    observed_at,
    previous_snapshot_at,
    previous_log_start_offset,
    log_start_offset,
    committed_offset_at_start,
    committed_offset,
    count_log_records_between,
    lost_from_offset,
    log_start_offset as lost_to_offset,
    log_start_offset - lost_from_offset as count_lost,
    greatest(log_start_offset - certainly_lost_from_offset, 0) as count_lost_at_least,
    retention_ms,
    retention_bytes,
    cleanup_policy
from facts
where log_start_offset > lost_from_offset
