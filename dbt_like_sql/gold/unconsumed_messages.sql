-- KIP-490 facts: each time a partition's log start offset moved past a watched group's committed
-- offset between two snapshots, the messages in [max(previous log start, committed), new log
-- start) were deleted (retention or DeleteRecords) before the group consumed them. Only topics
-- with cleanup.policy=delete.
--
-- When between the two snapshots the log start moved is not known, so neither is the committed
-- offset in force at that moment: it is one of the offsets the group held during the interval
-- (the one the earlier snapshot saw, each one the log shows committed in between, the one the
-- later snapshot saw). The lowest of them gives `lost_count`, the most the group can have lost;
-- the highest gives `lost_count_at_least`. The later offset alone would miss a loss whenever the
-- consumer reset past the deleted range and committed before the next snapshot.
--
-- Watched groups: a topic listed in the `watched_groups` variable is watched by the groups listed,
-- on every partition; a listed group that held no offset at some point of the interval consumed
-- none of what was deleted. Any other topic's partition is watched by the groups that held an
-- offset on that partition during the interval.
{% set watched = var('watched_groups', {}) %}
with snapshots as (
    select snapshot_id, snapshot_at from {{ source('bronze', 'broker_configs') }}
),
moves as (
    select * from (
        select o.topic, o.`partition`, o.snapshot_id, s.snapshot_at, o.log_start_offset,
               lag(o.log_start_offset) over w as previous_log_start_offset,
               lag(o.snapshot_id) over w as previous_snapshot_id,
               lag(s.snapshot_at) over w as previous_snapshot_at
        from {{ source('bronze', 'log_offset_snapshots') }} o join snapshots s on o.snapshot_id = s.snapshot_id
        window w as (partition by o.topic, o.`partition` order by s.snapshot_at)
    )
    where log_start_offset > previous_log_start_offset
),
configs as (
    select c.snapshot_id, c.topic, c.retention_ms, c.retention_bytes, c.cleanup_policy
    from {{ source('bronze', 'topic_configs') }} c
),
held as (
    -- every offset a group held on a moved partition during the move's interval; a tombstone in
    -- the log holds none (null)
    select m.topic, m.`partition`, m.snapshot_id, o.`group`, o.committed_offset,
           o.snapshot_id = m.previous_snapshot_id as at_start, o.snapshot_id = m.snapshot_id as at_end
    from moves m
    join {{ source('bronze', 'committed_offset_snapshots') }} o
      on o.topic = m.topic and o.`partition` = m.`partition`
     and o.snapshot_id in (m.previous_snapshot_id, m.snapshot_id)
    union all
    select /*+ BROADCAST(m) */ m.topic, m.`partition`, m.snapshot_id, r.`group`,
           case when not r.tombstone then r.offset end, false, false
    from moves m
    join {{ source('bronze', 'offset_commit_records') }} r
      on r.topic = m.topic and r.`partition` = m.`partition`
     and r.source_timestamp > m.previous_snapshot_at and r.source_timestamp <= m.snapshot_at
),
held_per_group as (
    select topic, `partition`, snapshot_id, `group`,
           min(committed_offset) as lowest_offset,
           max(committed_offset) as highest_offset,
           max(case when at_start then committed_offset end) as committed_offset_at_start,
           max(case when at_end then committed_offset end) as committed_offset,
           cast(count_if(not at_start and not at_end) as int) as log_records_between,
           -- held an offset from one snapshot to the other without a gap
           bool_or(at_start) and bool_or(at_end) and not bool_or(committed_offset is null) as held_throughout
    from held
    group by topic, `partition`, snapshot_id, `group`
),
configured_watch as (
    select * from values
    {%- for topic, groups in watched.items() %}{% for group in groups %}
        ({{ topic | sql_string }}, {{ group | sql_string }}),
    {%- endfor %}{% endfor %}
        ('', '') as t(topic, `group`)
),
watchers as (
    select m.topic, m.`partition`, m.snapshot_id, w.`group`, 'configured' as watched_by
    from moves m join configured_watch w on w.topic = m.topic
    union all
    select topic, `partition`, snapshot_id, `group`, 'default' as watched_by
    from held_per_group
    where highest_offset is not null and topic not in (select topic from configured_watch)
),
facts as (
    select m.topic, m.`partition`, w.`group`, w.watched_by, m.snapshot_at as observed_at,
           m.previous_snapshot_at, m.previous_log_start_offset, m.log_start_offset,
           g.committed_offset_at_start, g.committed_offset, coalesce(g.log_records_between, 0) as log_records_between,
           greatest(m.previous_log_start_offset,
                    case when w.watched_by = 'default' or g.held_throughout then g.lowest_offset
                         else m.previous_log_start_offset end) as lost_from_offset,
           greatest(m.previous_log_start_offset, coalesce(g.highest_offset, m.previous_log_start_offset))
               as certainly_lost_from_offset,
           c.retention_ms, c.retention_bytes, c.cleanup_policy
    from moves m
    join watchers w on w.topic = m.topic and w.`partition` = m.`partition` and w.snapshot_id = m.snapshot_id
    join configs c on c.snapshot_id = m.snapshot_id and c.topic = m.topic
    left join held_per_group g
      on g.snapshot_id = m.snapshot_id and g.`group` = w.`group` and g.topic = m.topic
     and g.`partition` = m.`partition`
    where array_contains(split(c.cleanup_policy, ','), 'delete')
)
select topic, `partition`, `group`, watched_by, observed_at, previous_snapshot_at,
       previous_log_start_offset, log_start_offset, committed_offset_at_start, committed_offset,
       log_records_between,
       lost_from_offset, log_start_offset as lost_to_offset,
       log_start_offset - lost_from_offset as lost_count,
       greatest(log_start_offset - certainly_lost_from_offset, 0) as lost_count_at_least,
       retention_ms, retention_bytes, cleanup_policy
from facts
where log_start_offset > lost_from_offset
