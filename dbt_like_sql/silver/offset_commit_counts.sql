-- Offset commits per minute of commit time, counted per partition of __consumer_offsets and
-- per run of records read together; coordinator_metrics adds the minutes up into its buckets.
-- An incremental run counts just the records appended since the last run. A row is keyed by the
-- first record it counts (its partition and offset there), so the merge stays exact however
-- often a run is repeated: a run repeated after a crash reads the same first records again,
-- with any appended since, and its counts replace the earlier ones.
-- Pruning removes commit records no model needs once every model has read them, and counts
-- them first (pruned_offset_commit_counts, below counted_below_offset): an incremental run never
-- sees those records again, and a full run takes their counts from there and counts the records
-- from counted_below_offset on, so that a record still kept below it is not counted twice.
{% if is_incremental() %}
    select
        source_partition,
        min(source_offset) as first_source_offset,
        timestamp_seconds(floor(unix_seconds(committed_at) / 60) * 60) as minute_start_at,
        count(*) as count_offset_commits
    from {{ ref('stg_kafka__offset_commits', new_only=true) }}
    where not is_tombstone and committed_at is not null
    group by source_partition, floor(unix_seconds(committed_at) / 60)
{% else %}
    with pruned as (
        select * from {{ ref('stg_kafka__pruned_offset_commit_counts') }}
    ),

    counted_below as (
        select
            source_partition,
            max(counted_below_offset) as counted_below_offset
        from pruned
        group by source_partition
    )

    select
        r.source_partition,
        min(r.source_offset) as first_source_offset,
        timestamp_seconds(floor(unix_seconds(r.committed_at) / 60) * 60) as minute_start_at,
        count(*) as count_offset_commits
    from {{ ref('stg_kafka__offset_commits', new_only=true) }} as r
    left join counted_below as c on r.source_partition = c.source_partition
    where
        not r.is_tombstone and r.committed_at is not null
        and r.source_offset >= coalesce(c.counted_below_offset, 0)
    group by r.source_partition, floor(unix_seconds(r.committed_at) / 60)
    union all
    select
        source_partition,
        first_source_offset,
        minute_start_at,
        count_offset_commits
    from pruned
{% endif %}
