-- The records of the groups of Kafka 4.x's new protocols: KIP-848 consumer groups, share groups
-- (KIP-932) and streams groups (KIP-1071), each record type named in record_type.
select
    source_partition,
    source_offset,
    source_timestamp as appended_at,
    record_type,
    records.group as group_id,
    member_id,
    regular_expression,
    tombstone as is_tombstone,
    value_version,
    subscribed_topic_names,
    subscribed_topic_regex,
    client_id,
    client_host,
    resolved_topics,
    source_topics
from {{ source('bronze', 'consumer_group_records') }} as records  -- noqa: AL05
