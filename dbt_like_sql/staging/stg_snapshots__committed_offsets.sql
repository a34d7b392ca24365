select
    snapshot_id,
    `group` as group_id,
    topic,
    `partition` as partition_id,
    committed_offset,
    leader_epoch,
    metadata
from {{ source('bronze', 'committed_offset_snapshots') }}
