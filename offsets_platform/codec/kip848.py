"""Value decoders for the KIP-848 consumer group records (key types 3-8).

Layouts follow Kafka's group-coordinator schema files (ConsumerGroup*Value.json, newest
versions). Every value is flexible from version 0: compact strings, bytes and arrays, and a
tagged-field section at the end of every struct. Unknown tagged fields are skipped; the ones
the schemas declare (group metadata hash and creation time, classic member metadata) are
decoded. Each decoder takes a reader positioned after the value version and returns the value
fields under snake_case names; topic ids are canonical UUID strings.
"""

from __future__ import annotations

from .reader import ByteReader

# Key types whose key carries a member id after the group id.
MEMBER_KEY_TYPES = frozenset({5, 7, 8})


def _topic_id_partitions(reader: ByteReader, field: str) -> list[dict]:
    count = reader.array_length(field, flexible=True, min_item_size=18)
    items = []
    for i in range(count):
        path = f"{field}[{i}]"
        items.append({
            "topic_id": reader.uuid(f"{path}.topic_id"),
            "partitions": reader.int32_array(f"{path}.partitions", flexible=True),
        })
        reader.tagged_fields(path)
    return items


def consumer_group_metadata(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupMetadataValue: Epoch; tagged MetadataHash (tag 0), CreationTimeMs (tag 1)."""
    epoch = reader.int32("epoch")
    tagged = reader.tagged_fields("", {0: ("metadata_hash", ByteReader.int64),
                                         1: ("creation_time_ms", ByteReader.int64)})
    created = tagged.get("creation_time_ms", -1)
    return {
        "epoch": epoch,
        "metadata_hash": tagged.get("metadata_hash", 0),
        "creation_time_ms": None if created == -1 else created,
    }


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
    """ConsumerGroupTargetAssignmentMetadataValue: AssignmentEpoch."""
    epoch = reader.int32("assignment_epoch")
    reader.tagged_fields("")
    return {"assignment_epoch": epoch}


def consumer_group_target_assignment_member(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupTargetAssignmentMemberValue: TopicPartitions [TopicId, Partitions]."""
    partitions = _topic_id_partitions(reader, "topic_partitions")
    reader.tagged_fields("")
    return {"topic_partitions": partitions}


def consumer_group_current_member_assignment(reader: ByteReader, version: int) -> dict:
    """ConsumerGroupCurrentMemberAssignmentValue: epochs, State, assigned and revoking partitions."""
    value = {
        "member_epoch": reader.int32("member_epoch"),
        "previous_member_epoch": reader.int32("previous_member_epoch"),
        "state": reader.int8("state"),
        "assigned_partitions": _topic_id_partitions(reader, "assigned_partitions"),
        "partitions_pending_revocation": _topic_id_partitions(reader, "partitions_pending_revocation"),
    }
    reader.tagged_fields("")
    return value


# key type -> (record_type, label for messages, value decoder, value field names)
KIP848_RECORDS = {
    3: ("consumer_group_metadata", "consumer group metadata", consumer_group_metadata,
        ("epoch", "metadata_hash", "creation_time_ms")),
    4: ("consumer_group_partition_metadata", "consumer group partition metadata",
        consumer_group_partition_metadata, ("topics",)),
    5: ("consumer_group_member_metadata", "consumer group member metadata", consumer_group_member_metadata,
        ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
         "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic_member_metadata")),
    6: ("consumer_group_target_assignment_metadata", "consumer group target assignment metadata",
        consumer_group_target_assignment_metadata, ("assignment_epoch",)),
    7: ("consumer_group_target_assignment_member", "consumer group target assignment member",
        consumer_group_target_assignment_member, ("topic_partitions",)),
    8: ("consumer_group_current_member_assignment", "consumer group current member assignment",
        consumer_group_current_member_assignment,
        ("member_epoch", "previous_member_epoch", "state", "assigned_partitions", "partitions_pending_revocation")),
}
