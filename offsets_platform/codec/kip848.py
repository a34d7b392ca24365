"""Value decoders for the KIP-848 consumer group records (key types 3-8 and 16).

Layouts follow Kafka 4.3's group-coordinator schema files (ConsumerGroup*Value.json). Every
value is flexible from version 0: compact strings, bytes and arrays, and a tagged-field section
at the end of every struct. Unknown tagged fields are skipped (that is how newer brokers extend
a record without a new version); the ones the schemas declare (group metadata hash, classic
member metadata, assignment timestamp, per-partition assignment epochs) are decoded. Each decoder takes a reader positioned after the value version and returns the value
fields under snake_case names; topic ids are canonical UUID strings.
"""

from __future__ import annotations

from ._flexible import tagged_int64, texts, topic_id_partitions
from .reader import ByteReader


def consumer_group_metadata(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupMetadataValue: Epoch; tagged MetadataHash (tag 0, the schema's only tag)."""
    epoch = reader.int32("epoch")
    tagged = reader.tagged_fields("", {0: ("metadata_hash", ByteReader.int64)})
    return {"epoch": epoch, "metadata_hash": tagged.get("metadata_hash", 0)}


def consumer_group_partition_metadata(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupPartitionMetadataValue: Topics [TopicId, TopicName, NumPartitions, PartitionMetadata]."""
    topics = []
    for i in range(reader.array_length("topics", flexible=True, min_item_size=23)):
        path = f"topics[{i}]"
        topic = {
            "topic_id": reader.uuid(f"{path}.topic_id"),
            "topic_name": reader.string(f"{path}.topic_name", flexible=True),
            "num_partitions": reader.int32(f"{path}.num_partitions"),
        }
        racks = []
        for j in range(reader.array_length(f"{path}.partition_metadata", flexible=True, min_item_size=6)):
            inner = f"{path}.partition_metadata[{j}]"
            racks.append({
                "partition": reader.int32(f"{inner}.partition"),
                "racks": reader.string_array(f"{inner}.racks", flexible=True),
            })
            reader.tagged_fields(inner)
        topic["partition_metadata"] = racks
        reader.tagged_fields(path)
        topics.append(topic)
    reader.tagged_fields("")
    return {"topics": topics}


def _classic_member_metadata(reader: ByteReader, field: str) -> dict | None:
    # A nullable struct in a tagged field starts with a varint marker: 0 = null, 1 = present.
    if reader.uvarint(f"{field}.present") <= 0:
        return None
    session_timeout = reader.int32(f"{field}.session_timeout_ms")
    protocols = []
    for i in range(reader.array_length(f"{field}.supported_protocols", flexible=True, min_item_size=3)):
        path = f"{field}.supported_protocols[{i}]"
        protocols.append({
            "name": reader.string(f"{path}.name", flexible=True),
            "metadata": reader.bytes(f"{path}.metadata", flexible=True),
        })
        reader.tagged_fields(path)
    reader.tagged_fields(field)
    return {"session_timeout_ms": session_timeout, "supported_protocols": protocols}


def consumer_group_member_metadata(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupMemberMetadataValue, with the tagged ClassicMemberMetadata (tag 0)."""
    value = {
        "instance_id": reader.string("instance_id", flexible=True),
        "rack_id": reader.string("rack_id", flexible=True),
        "client_id": reader.string("client_id", flexible=True),
        "client_host": reader.string("client_host", flexible=True),
        "subscribed_topic_names": reader.string_array("subscribed_topic_names", flexible=True),
        "subscribed_topic_regex": reader.string("subscribed_topic_regex", flexible=True),
        "rebalance_timeout_ms": reader.int32("rebalance_timeout_ms"),
        "server_assignor": reader.string("server_assignor", flexible=True),
    }
    tagged = reader.tagged_fields("", {0: ("classic_member_metadata", _classic_member_metadata)})
    value["classic_member_metadata"] = tagged.get("classic_member_metadata")
    return value


def consumer_group_target_assignment_metadata(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupTargetAssignmentMetadataValue: AssignmentEpoch; tagged AssignmentTimestamp (tag 0, 4.3)."""
    epoch = reader.int32("assignment_epoch")
    tagged = reader.tagged_fields("", {0: ("assignment_timestamp", tagged_int64)})
    return {"assignment_epoch": epoch, "assignment_timestamp": tagged.get("assignment_timestamp", 0)}


def consumer_group_target_assignment_member(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupTargetAssignmentMemberValue: TopicPartitions [TopicId, Partitions]."""
    partitions = topic_id_partitions(reader, "topic_partitions")
    reader.tagged_fields("")
    return {"topic_partitions": partitions}


def consumer_group_current_member_assignment(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupCurrentMemberAssignmentValue: epochs, State, assigned and revoking partitions.

    Each partition list's struct carries the tagged AssignmentEpochs (tag 0) since 4.3.
    """
    value = {
        "member_epoch": reader.int32("member_epoch"),
        "previous_member_epoch": reader.int32("previous_member_epoch"),
        "state": reader.int8("state"),
        "assigned_partitions": topic_id_partitions(reader, "assigned_partitions", assignment_epochs=True),
        "partitions_pending_revocation": topic_id_partitions(reader, "partitions_pending_revocation",
                                                             assignment_epochs=True),
    }
    reader.tagged_fields("")
    return value


def consumer_group_regular_expression(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupRegularExpressionValue: the topics the key's regex resolved to.

    Topics is what the group is subscribed to through that regex (the coordinator resolves
    the regex against the cluster's topics); Version is the metadata image version the
    resolution was made at, Timestamp when.
    """
    value = {
        "topics": texts(reader, "topics"),
        "version": reader.int64("version"),
        "timestamp": reader.int64("timestamp"),
    }
    reader.tagged_fields("")
    return value


# key type -> key fields after the group id (all int16-length strings: keys are never flexible)
KIP848_KEY_FIELDS = {5: ("member_id",), 7: ("member_id",), 8: ("member_id",), 16: ("regular_expression",)}

# key type -> (record_type, label for messages, value decoder, value field names)
KIP848_RECORDS = {
    3: ("consumer_group_metadata", "consumer group metadata", consumer_group_metadata,
        ("epoch", "metadata_hash")),
    4: ("consumer_group_partition_metadata", "consumer group partition metadata",
        consumer_group_partition_metadata, ("topics",)),
    5: ("consumer_group_member_metadata", "consumer group member metadata", consumer_group_member_metadata,
        ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
         "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic_member_metadata")),
    6: ("consumer_group_target_assignment_metadata", "consumer group target assignment metadata",
        consumer_group_target_assignment_metadata, ("assignment_epoch", "assignment_timestamp")),
    7: ("consumer_group_target_assignment_member", "consumer group target assignment member",
        consumer_group_target_assignment_member, ("topic_partitions",)),
    8: ("consumer_group_current_member_assignment", "consumer group current member assignment",
        consumer_group_current_member_assignment,
        ("member_epoch", "previous_member_epoch", "state", "assigned_partitions", "partitions_pending_revocation")),
    16: ("consumer_group_regular_expression", "consumer group regular expression",
         consumer_group_regular_expression, ("topics", "version", "timestamp")),
}
