-- Offset commit records of __consumer_offsets (and their tombstones), with Kafka's times also
-- as the milliseconds it stored, which hold what the timestamps cannot (outside the years 1-9999).
select
    source_partition,
    source_offset,
    source_timestamp as appended_at,
    records.group as group_id,
    topic,
    records.partition as partition_id,
    tombstone as is_tombstone,
    value_version,
    offset as committed_offset,
    leader_epoch,
    metadata,
    commit_timestamp as committed_at,
    expire_timestamp as legacy_expires_at,
    coalesce(unix_millis(commit_timestamp), commit_timestamp_out_of_range_ms) as committed_at_ms,
    coalesce(unix_millis(expire_timestamp), expire_timestamp_out_of_range_ms) as legacy_expires_at_ms
from {{ source('bronze', 'offset_commit_records') }} as records
