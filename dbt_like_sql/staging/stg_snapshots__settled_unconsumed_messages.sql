-- The losses of unconsumed_messages whose move of the log start a prune of the log offset
-- snapshots (offsets_platform.models.snapshot_pruning) settled: it copied them before marking the
-- move settled (stg_snapshots__settled_log_start_moves) and removing what judged it.
select
    topic,
    partition_id,
    group_id,
    watched_by,
    observed_at,
    previous_snapshot_at,
    previous_log_start_offset,
    log_start_offset,
    committed_offset_at_start,
    committed_offset,
    count_log_records_between,
    lost_from_offset,
    lost_to_offset,
    count_lost,
    count_lost_at_least,
    is_held_throughout,
    is_abandoned,
    interval_start_at,
    interval_end_at,
    retention_ms,
    retention_bytes,
    cleanup_policy,
    is_commit_chain_complete
from {{ source('bronze', 'settled_unconsumed_messages') }}
