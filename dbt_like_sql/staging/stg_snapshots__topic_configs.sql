-- cleanup.policy is a list: Kafka splits it at commas, trims each value and compares it
-- lower-cased (ConfigDef.parseType for LIST, LogConfig's compact and delete), so
-- 'compact, delete' holds both.
select
    snapshot_id,
    topic,
    retention_ms,
    retention_bytes,
    cleanup_policy,
    coalesce(exists(split(cleanup_policy, ','), p -> lower(trim(p)) = 'delete'), false) as is_delete_policy,
    coalesce(exists(split(cleanup_policy, ','), p -> lower(trim(p)) = 'compact'), false) as is_compact_policy,
    message_timestamp_type
from {{ source('bronze', 'topic_configs') }}
