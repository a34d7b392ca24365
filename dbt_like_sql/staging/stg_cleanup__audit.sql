-- What the project itself sent to a broker (OffsetDelete, DeleteGroups), and Kafka's answers.
select
    audit_id,
    plan_id,
    action_id,
    origin,
    action,
    `group` as group_id,
    topic,
    `partition` as partition_id,
    outcome,
    error,
    requested_by,
    at as recorded_at
from {{ source('cleanup', 'cleanup_audit') }}
