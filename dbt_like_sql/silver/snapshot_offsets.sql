-- Committed offsets as the latest complete admin-API snapshot saw them (OffsetFetch of all
-- partitions, KIP-88), with bounds on when each was committed: the snapshots do not carry
-- commit times, so the first snapshot that saw the current value is an upper bound and the last
-- snapshot that saw another value (or none) a lower bound.
-- A prune of the committed offset snapshots keeps the row that starts each key's latest run
-- (offsets_platform.models.committed_snapshot_pruning): a rule here that reads more of a key's
-- history needs the prune to keep it too.
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

history as (
    -- every value each complete snapshot saw, and whether it starts a run: the snapshots in a
    -- row (of those that saw the partition's offset) that saw one value
    select
        o.group_id,
        o.topic,
        o.partition_id,
        o.committed_offset,
        o.leader_epoch,
        o.metadata,
        s.snapshot_at,
        s.is_latest,
        lag(o.committed_offset) over (
            partition by o.group_id, o.topic, o.partition_id order by s.snapshot_at
        ) is distinct from o.committed_offset as starts_run
    from offsets as o
    inner join snapshots as s on o.snapshot_id = s.snapshot_id
),

runs as (
    -- each value with the first snapshot of its run: for the latest snapshot's value, the first
    -- snapshot that saw it since another value was seen. A window over each group's snapshots
    -- of a partition in time, where joining the latest values with every snapshot's would pair
    -- them all.
    select
        *,
        max(case when starts_run then snapshot_at end) over (
            partition by group_id, topic, partition_id order by snapshot_at
            rows between unbounded preceding and current row
        ) as first_seen_at
    from history
),

previous_snapshots as (
    -- the complete snapshot before each one: before first_seen_at, the value was not there yet
    -- (a lower bound)
    select
        snapshot_at,
        lag(snapshot_at) over (order by snapshot_at) as previous_snapshot_at
    from (select distinct snapshot_at from snapshots) as snapshot_times
)

select
    r.group_id,
    r.topic,
    r.partition_id,
    r.committed_offset,
    r.leader_epoch,
    r.metadata,
    r.first_seen_at,
    p.previous_snapshot_at as last_unseen_at,
    r.snapshot_at
from runs as r
left join previous_snapshots as p on r.first_seen_at = p.snapshot_at
where r.is_latest
