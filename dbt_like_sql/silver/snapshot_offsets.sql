-- Committed offsets as the latest complete admin-API snapshot saw them (OffsetFetch of all
-- partitions, KIP-88), with bounds on when each was committed: the snapshots do not carry
-- commit times, so the first snapshot that saw the current value is an upper bound and the last
-- snapshot that saw another value (or none) a lower bound.
with snapshots as (
    select
        snapshot_id,
        snapshot_at,
        is_latest
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

offsets as (
    select
        snapshot_id,
        group_id,
        topic,
        partition_id,
        committed_offset,
        leader_epoch,
        metadata
    from {{ ref('stg_snapshots__committed_offsets') }}
),

current_offsets as (
    select
        o.group_id,
        o.topic,
        o.partition_id,
        o.committed_offset,
        o.leader_epoch,
        o.metadata,
        s.snapshot_at
    from offsets as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id and s.is_latest
),

history as (
    select
        o.group_id,
        o.topic,
        o.partition_id,
        o.committed_offset,
        s.snapshot_at
    from offsets as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id
),

last_other_value as (
    select
        c.group_id,
        c.topic,
        c.partition_id,
        max(h.snapshot_at) as changed_after
    from current_offsets as c
    inner join history as h
        on
            c.group_id = h.group_id and c.topic = h.topic and c.partition_id = h.partition_id
            and c.committed_offset <> h.committed_offset
    group by c.group_id, c.topic, c.partition_id
),

first_seen as (
    select
        c.group_id,
        c.topic,
        c.partition_id,
        min(h.snapshot_at) as first_seen_at,
        max(o.changed_after) as changed_after
    from current_offsets as c
    left join last_other_value as o
        on c.group_id = o.group_id and c.topic = o.topic and c.partition_id = o.partition_id
    inner join history as h
        on
            c.group_id = h.group_id and c.topic = h.topic and c.partition_id = h.partition_id
            and c.committed_offset = h.committed_offset
            and (o.changed_after is null or o.changed_after < h.snapshot_at)
    group by c.group_id, c.topic, c.partition_id
),

previous_snapshot as (
    -- the snapshot before first_seen_at, when the value was not there yet (a lower bound)
    select
        f.group_id,
        f.topic,
        f.partition_id,
        max(s.snapshot_at) as last_unseen_at
    from first_seen as f
    inner join snapshots as s on f.first_seen_at > s.snapshot_at
    group by f.group_id, f.topic, f.partition_id
)

select
    c.group_id,
    c.topic,
    c.partition_id,
    c.committed_offset,
    c.leader_epoch,
    c.metadata,
    f.first_seen_at,
    p.last_unseen_at,
    c.snapshot_at
from current_offsets as c
inner join first_seen as f on c.group_id = f.group_id and c.topic = f.topic and c.partition_id = f.partition_id
left join previous_snapshot as p
    on c.group_id = p.group_id and c.topic = p.topic and c.partition_id = p.partition_id
