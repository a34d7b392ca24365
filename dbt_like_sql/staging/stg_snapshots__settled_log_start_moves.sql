-- How far the prunes of the log offset snapshots (offsets_platform.models.snapshot_pruning)
-- settled the moves of log starts: each wrote the latest complete snapshot before its cutoff, after
-- copying the losses of every move seen at or before it to settled_unconsumed_messages.
select
    settled_through_at,
    settled_at
from {{ source('bronze', 'settled_log_start_moves') }}
