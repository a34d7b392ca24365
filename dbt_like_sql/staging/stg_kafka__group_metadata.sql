-- Classic group metadata records of __consumer_offsets (and their tombstones).
select
    source_partition,
    source_offset,
    source_timestamp as appended_at,
    records.group as group_id,
    tombstone as is_tombstone,
    value_version,
    protocol_type,
    generation,
    protocol,
    leader,
    member_count as count_members,
    current_state_timestamp as current_state_at,
    coalesce(unix_millis(current_state_timestamp), current_state_timestamp_out_of_range_ms) as current_state_at_ms
from {{ source('bronze', 'group_metadata_records') }} as records  -- noqa: AL05
