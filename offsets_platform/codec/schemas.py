"""Arrow schemas of the tables the batch decoder produces.

Every table has ``row``: the index of the record in the input batch, which the caller joins
back to the source partition, offset, timestamp and raw bytes.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("ms", tz="UTC")
TOPIC_PARTITIONS = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))

OFFSET_COMMIT_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("key_version", pa.int16()),
    ("group", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("tombstone", pa.bool_()),
    ("value_version", pa.int16()),
    ("offset", pa.int64()),
    ("leader_epoch", pa.int32()),
    ("metadata", pa.string()),
    ("commit_timestamp", TIMESTAMP),
    ("expire_timestamp", TIMESTAMP),
])

GROUP_METADATA_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("key_version", pa.int16()),
    ("group", pa.string()),
    ("tombstone", pa.bool_()),
    ("value_version", pa.int16()),
    ("protocol_type", pa.string()),
    ("generation", pa.int32()),
    ("protocol", pa.string()),
    ("leader", pa.string()),
    ("current_state_timestamp", TIMESTAMP),
    ("member_count", pa.int32()),
])

GROUP_MEMBER_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("group", pa.string()),
    ("member_index", pa.int32()),
    ("member_id", pa.string()),
    ("group_instance_id", pa.string()),
    ("client_id", pa.string()),
    ("client_host", pa.string()),
    ("rebalance_timeout", pa.int32()),
    ("session_timeout", pa.int32()),
    ("subscription_version", pa.int16()),
    ("subscribed_topics", pa.list_(pa.string())),
    ("subscription_user_data", pa.binary()),
    ("owned_partitions", TOPIC_PARTITIONS),
    ("subscription_generation_id", pa.int32()),
    ("rack_id", pa.string()),
    ("assignment_version", pa.int16()),
    ("assigned_partitions", TOPIC_PARTITIONS),
    ("assignment_user_data", pa.binary()),
    ("subscription_bytes", pa.binary()),
    ("assignment_bytes", pa.binary()),
    # why a consumer-protocol payload did not decode (its bytes are kept above); a subscription
    # that does not decode leaves the group's subscriptions unknown, as in Kafka
    ("subscription_error", pa.string()),
    ("assignment_error", pa.string()),
])

# The records of the KIP-848 (types 3-8, 16), share (10-15) and streams (17, 19-23) groups: the
# key fields and the fields models filter on are typed, every value field is in value_json.
CONSUMER_GROUP_RECORD_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("record_type", pa.string()),
    ("key_version", pa.int16()),
    ("group", pa.string()),
    ("member_id", pa.string()),
    ("regular_expression", pa.string()),  # key of type 16 (consumer_group_regular_expression)
    ("tombstone", pa.bool_()),
    ("value_version", pa.int16()),
    ("group_epoch", pa.int32()),
    ("assignment_epoch", pa.int32()),
    ("member_epoch", pa.int32()),
    ("member_state", pa.int8()),
    ("subscribed_topic_names", pa.list_(pa.string())),
    ("subscribed_topic_regex", pa.string()),
    ("client_id", pa.string()),
    ("client_host", pa.string()),
    ("rack_id", pa.string()),
    # type 16: the topics the key's regex resolved to; the group is subscribed to them
    ("resolved_topics", pa.list_(pa.string())),
    # type 23 (streams_group_topology): the topics the topology reads by name (source and
    # repartition source topics of every subtopology), and its source topic regexes
    ("source_topics", pa.list_(pa.string())),
    ("source_topic_regexes", pa.list_(pa.string())),
    ("value_json", pa.string()),
])

# Records this codec does not decode. skipped_by_kafka tells the two kinds apart: true for a
# record type Kafka 4.3 does not define, which its loader skips too (with a warning); false for
# bytes Kafka's loader would fail on (malformed, or a value version it does not know).
REJECTED_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("key_version", pa.int16()),
    ("reason", pa.string()),
    ("skipped_by_kafka", pa.bool_()),
])
