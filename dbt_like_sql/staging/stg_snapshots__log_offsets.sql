select
    snapshot_id,
    topic,
    log_offsets.partition as partition_id,
    log_start_offset,
    log_end_offset,
    listed_at,
    max_timestamp_ms
from {{ source('bronze', 'log_offset_snapshots') }} as log_offsets
