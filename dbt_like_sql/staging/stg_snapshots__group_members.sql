select
    snapshot_id,
    snapshot_at,
    members.group as group_id,
    member_id,
    group_instance_id,
    client_id,
    client_host,
    subscribed_topics,
    subscribed_topic_regex
from {{ source('bronze', 'group_member_snapshots') }} as members  -- noqa: AL05
