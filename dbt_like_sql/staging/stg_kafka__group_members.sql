-- The members listed in classic group metadata records, one row per member and record.
select
    source_partition,
    source_offset,
    members.group as group_id,
    member_index,
    member_id,
    group_instance_id,
    client_id,
    client_host,
    subscription_version,
    subscribed_topics,
    subscription_error
from {{ source('bronze', 'group_metadata_members') }} as members  -- noqa: AL05
