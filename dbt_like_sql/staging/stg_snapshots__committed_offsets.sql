select
    snapshot_id,
    offsets.group as group_id,
    topic,
    offsets.partition as partition_id,
    committed_offset,
    leader_epoch,
    metadata,
    fetched_at
from {{ source('bronze', 'committed_offset_snapshots') }} as offsets
