-- The latest offset commit of each partition in each minute, per bronze file of
-- offset_commit_records: consumer_status builds its window from these rows (about one per
-- partition and minute) when its min distance is a whole number of minutes, the default, rather
-- than from every commit in the log on every refresh. The time is the commit's, else the record's,
-- as consumer_status takes it; the latest is the last in the log. Keyed by file as
-- offset_commit_counts is: ingest only appends files, so an incremental run reads just the new
-- ones and the merge stays exact however often it is repeated (a minute whose commits span two
-- files has a row from each; consumer_status takes the later).
select
    regexp_extract(source_path, '[^/]+$', 0) as source_file,
    group_id,
    topic,
    partition_id,
    timestamp_millis(minute * 60000) as minute_start_at,
    committed_offset,
    observed_at_ms,
    source_offset
from (
    -- aggregate first: the file name extracted once per row of the aggregate, not once per record
    select
        input_file_name() as source_path,
        group_id,
        topic,
        partition_id,
        floor(at_ms / 60000) as minute,
        max_by(committed_offset, source_offset) as committed_offset,
        max_by(at_ms, source_offset) as observed_at_ms,
        max(source_offset) as source_offset
    from (
        select
            group_id,
            topic,
            partition_id,
            committed_offset,
            source_offset,
            coalesce(unix_millis(committed_at), unix_millis(appended_at)) as at_ms
        from {{ ref('stg_kafka__offset_commits', new_only=true) }}
        where not is_tombstone
    )
    -- a commit without any time (both outside the years 1-9999) is no observation
    where at_ms is not null
    group by 1, 2, 3, 4, 5
)
