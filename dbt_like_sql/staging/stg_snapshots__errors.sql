select
    snapshot_id,
    snapshot_at,
    scope,
    errors.name as subject,
    operation,
    errors.error as error_name,
    message
from {{ source('bronze', 'snapshot_errors') }} as errors  -- noqa: AL05
