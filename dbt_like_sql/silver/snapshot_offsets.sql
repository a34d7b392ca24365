-- Committed offsets as the latest complete admin-API snapshot saw them (OffsetFetch of all
-- partitions, KIP-88), with bounds on when each was committed: the snapshots do not carry
-- commit times, so the first snapshot that saw the current value is an upper bound and the last
-- snapshot that saw another value (or none) a lower bound.
with snapshots as (
    select snapshot_id, snapshot_at, is_latest from {{ ref('stg_snapshots__complete_snapshots') }} as s
),
offsets as (
    select snapshot_id, group_id, topic, partition_id, committed_offset, leader_epoch, metadata
    from {{ ref('stg_snapshots__committed_offsets') }} as o
),
current_offsets as (
    select o.group_id, o.topic, o.partition_id, o.committed_offset, o.leader_epoch, o.metadata,
           s.snapshot_at
    from offsets as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id and s.is_latest
),
history as (
    select o.group_id, o.topic, o.partition_id, o.committed_offset, s.snapshot_at
    from offsets as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id
),
last_other_value as (
    select c.group_id, c.topic, c.partition_id, max(h.snapshot_at) as changed_after
    from current_offsets c
    join history h
      on h.group_id = c.group_id and h.topic = c.topic and h.partition_id = c.partition_id
     and h.committed_offset <> c.committed_offset
    group by c.group_id, c.topic, c.partition_id
),
first_seen as (
    select c.group_id, c.topic, c.partition_id, min(h.snapshot_at) as first_seen_at,
           max(o.changed_after) as changed_after
    from current_offsets c
    left join last_other_value o
      on o.group_id = c.group_id and o.topic = c.topic and o.partition_id = c.partition_id
    join history h
      on h.group_id = c.group_id and h.topic = c.topic and h.partition_id = c.partition_id
     and h.committed_offset = c.committed_offset
     and (o.changed_after is null or h.snapshot_at > o.changed_after)
    group by c.group_id, c.topic, c.partition_id
),
previous_snapshot as (
    -- the snapshot before first_seen_at, when the value was not there yet (a lower bound)
    select f.group_id, f.topic, f.partition_id, max(s.snapshot_at) as committed_after
    from first_seen f
    join snapshots s on s.snapshot_at < f.first_seen_at
    group by f.group_id, f.topic, f.partition_id
)
select c.group_id as `group`, c.topic, c.partition_id as `partition`, c.committed_offset, c.leader_epoch, c.metadata,
       f.first_seen_at,
       p.committed_after,
       c.snapshot_at
from current_offsets c
join first_seen f on f.group_id = c.group_id and f.topic = c.topic and f.partition_id = c.partition_id
left join previous_snapshot p
  on p.group_id = c.group_id and p.topic = c.topic and p.partition_id = c.partition_id
