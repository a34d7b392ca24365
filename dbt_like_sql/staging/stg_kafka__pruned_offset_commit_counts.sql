-- Offset commits counted before pruning removed their records (offsets_platform.models.pruning):
-- every commit record of a partition below counted_below_offset is counted here.
select
    source_partition,
    first_source_offset,
    minute_start_at,
    count_offset_commits,
    counted_below_offset
from {{ source('bronze', 'pruned_offset_commit_counts') }}
