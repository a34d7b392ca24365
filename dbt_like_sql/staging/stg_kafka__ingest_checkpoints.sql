-- What ingest read of each partition of the log, batch by batch: every record below next_offset
-- reached bronze, unless it was gone before ingest read it.
select
    source_partition,
    next_offset,
    record_count as count_records,
    checkpointed_at
from {{ source('bronze', 'offsets_topic_checkpoints') }}
