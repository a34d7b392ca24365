select
    snapshot_id,
    snapshot_at,
    `group` as group_id,
    group_type,
    state,
    protocol_type,
    protocol,
    member_count,
    coordinator_id
from {{ source('bronze', 'group_snapshots') }}
