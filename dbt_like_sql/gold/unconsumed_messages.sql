-- KIP-490 facts: each time a partition's log start offset moved past a watched group's committed
-- offset between two snapshots, the messages in [max(previous log start, committed), new log
-- start) were deleted (retention or DeleteRecords) before the group consumed them. Only topics
-- with cleanup.policy=delete. Watched groups per topic come from the `watched_groups` variable;
-- a topic not listed there watches every group with offsets on it. A watched group without a
-- committed offset on the partition consumed none of it, so everything deleted counts.
{% set watched = var('watched_groups', {}) %}
with snapshots as (
    select snapshot_id, snapshot_at from {{ source('bronze', 'broker_configs') }}
),
moves as (
    select * from (
        select o.topic, o.`partition`, o.snapshot_id, s.snapshot_at, o.log_start_offset,
               lag(o.log_start_offset) over w as previous_log_start_offset,
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
offsets as (
    select snapshot_id, `group`, topic, `partition`, committed_offset
    from {{ source('bronze', 'committed_offset_snapshots') }}
),
configured_watch as (
    select * from values
    {%- for topic, groups in watched.items() %}{% for group in groups %}
        ({{ topic | sql_string }}, {{ group | sql_string }}),
    {%- endfor %}{% endfor %}
        ('', '') as t(topic, `group`)
),
watchers as (
    -- per move: the configured groups of the topic, or every group with offsets on the topic then
    select m.topic, m.snapshot_id, w.`group`, 'configured' as watched_by
    from moves m join configured_watch w on w.topic = m.topic
    union
    select m.topic, m.snapshot_id, o.`group`, 'default' as watched_by
    from moves m join offsets o on o.snapshot_id = m.snapshot_id and o.topic = m.topic
    where m.topic not in (select topic from configured_watch)
),
facts as (
    select m.topic, m.`partition`, w.`group`, w.watched_by, m.snapshot_at as observed_at,
           m.previous_snapshot_at, m.previous_log_start_offset, m.log_start_offset, o.committed_offset,
           greatest(m.previous_log_start_offset, coalesce(o.committed_offset, m.previous_log_start_offset))
               as lost_from_offset,
           c.retention_ms, c.retention_bytes, c.cleanup_policy
    from moves m
    join (select distinct topic, snapshot_id, `group`, watched_by from watchers) w
      on w.topic = m.topic and w.snapshot_id = m.snapshot_id
    join configs c on c.snapshot_id = m.snapshot_id and c.topic = m.topic
    left join offsets o
      on o.snapshot_id = m.snapshot_id and o.`group` = w.`group` and o.topic = m.topic
     and o.`partition` = m.`partition`
    where array_contains(split(c.cleanup_policy, ','), 'delete')
)
select topic, `partition`, `group`, watched_by, observed_at, previous_snapshot_at,
       previous_log_start_offset, log_start_offset, committed_offset,
       lost_from_offset, log_start_offset as lost_to_offset,
       log_start_offset - lost_from_offset as lost_count,
       retention_ms, retention_bytes, cleanup_policy
from facts
where log_start_offset > lost_from_offset
