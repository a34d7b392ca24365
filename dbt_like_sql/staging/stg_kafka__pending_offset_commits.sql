-- Offset commits of transactions still open when ingest last reached the end of the committed log.
select
    commits.group as group_id,
    topic,
    commits.partition as partition_id,
    source_partition,
    source_offset,
    observed_at
from {{ source('bronze', 'pending_offset_commits') }} as commits
