select
    snapshot_id,
    topic,
    retention_ms,
    retention_bytes,
    cleanup_policy
from {{ source('bronze', 'topic_configs') }}
