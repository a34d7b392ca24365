-- Committed offsets as the latest complete admin-API snapshot saw them (OffsetFetch of all
-- partitions, KIP-88), with bounds on when each was committed: the snapshots do not carry
-- commit times, so the first snapshot that saw the current value is an upper bound and the last
-- snapshot that saw another value (or none) a lower bound.
with snapshots as (
    -- broker_configs is written last in a snapshot: a snapshot with it is complete.
    select snapshot_id, snapshot_at from {{ source('bronze', 'broker_configs') }}
),
latest as (
    select snapshot_id, snapshot_at from snapshots order by snapshot_at desc limit 1
),
current_offsets as (
    select o.`group`, o.topic, o.`partition`, o.committed_offset, o.leader_epoch, o.metadata,
           l.snapshot_at
    from {{ source('bronze', 'committed_offset_snapshots') }} o
    join latest l on o.snapshot_id = l.snapshot_id
),
history as (
    select o.`group`, o.topic, o.`partition`, o.committed_offset, s.snapshot_at
    from {{ source('bronze', 'committed_offset_snapshots') }} o
    join snapshots s on o.snapshot_id = s.snapshot_id
),
last_other_value as (
    select c.`group`, c.topic, c.`partition`, max(h.snapshot_at) as changed_after
    from current_offsets c
    join history h
      on h.`group` = c.`group` and h.topic = c.topic and h.`partition` = c.`partition`
     and h.committed_offset <> c.committed_offset
    group by c.`group`, c.topic, c.`partition`
),
first_seen as (
    select c.`group`, c.topic, c.`partition`, min(h.snapshot_at) as first_seen_at,
           max(o.changed_after) as changed_after
    from current_offsets c
    left join last_other_value o
      on o.`group` = c.`group` and o.topic = c.topic and o.`partition` = c.`partition`
    join history h
      on h.`group` = c.`group` and h.topic = c.topic and h.`partition` = c.`partition`
     and h.committed_offset = c.committed_offset
     and (o.changed_after is null or h.snapshot_at > o.changed_after)
    group by c.`group`, c.topic, c.`partition`
),
previous_snapshot as (
    -- the snapshot before first_seen_at, when the value was not there yet (a lower bound)
    select f.`group`, f.topic, f.`partition`, max(s.snapshot_at) as committed_after
    from first_seen f
    join snapshots s on s.snapshot_at < f.first_seen_at
    group by f.`group`, f.topic, f.`partition`
)
select c.`group`, c.topic, c.`partition`, c.committed_offset, c.leader_epoch, c.metadata,
       f.first_seen_at,
       p.committed_after,
       c.snapshot_at
from current_offsets c
join first_seen f on f.`group` = c.`group` and f.topic = c.topic and f.`partition` = c.`partition`
left join previous_snapshot p
  on p.`group` = c.`group` and p.topic = c.topic and p.`partition` = c.`partition`
