-- Offset commits per minute of commit time, counted per partition of __consumer_offsets and
-- per run of records read together; coordinator_metrics adds the minutes up into its buckets.
-- An incremental run counts just the records appended since the last run. A row is keyed by the
-- first record it counts (its partition and offset there), so the merge stays exact however
-- often a run is repeated: a run repeated after a crash reads the same first records again,
-- with any appended since, and its counts replace the earlier ones.
select
    source_partition,
    min(source_offset) as first_source_offset,
    timestamp_seconds(floor(unix_seconds(committed_at) / 60) * 60) as minute_start_at,
    count(*) as count_offset_commits
from {{ ref('stg_kafka__offset_commits', new_only=true) }}
where not is_tombstone and committed_at is not null
group by source_partition, floor(unix_seconds(committed_at) / 60)
