-- A snapshot writes broker_configs last: a snapshot with a row there is complete. The latest
-- is the one with the greatest snapshot_at (one row even if two snapshots share that time).
select
    snapshot_id,
    snapshot_at,
    offsets_retention_minutes,
    offsets_retention_source,
    row_number() over (order by snapshot_at desc) = 1 as is_latest
from {{ source('bronze', 'broker_configs') }}
