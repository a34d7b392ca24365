-- What the project itself sent to a broker (OffsetDelete, DeleteGroups), and Kafka's answers.
select
    audit_id,
    plan_id,
    action_id,
    origin,
    action,
    audit.group as group_id,
    topic,
    audit.partition as partition_id,
    outcome,
    error,
    requested_by,
    at as recorded_at
from {{ source('cleanup', 'cleanup_audit') }} as audit
