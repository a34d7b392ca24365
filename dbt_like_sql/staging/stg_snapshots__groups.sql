select
    snapshot_id,
    snapshot_at,
    groups.group as group_id,
    group_type,
    state,
    protocol_type,
    protocol,
    member_count as count_members,
    coordinator_id
from {{ source('bronze', 'group_snapshots') }} as groups  -- noqa: AL05
