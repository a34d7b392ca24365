"""Value decoders for the share group records (KIP-932, key types 10-15).

Layouts follow Kafka 4.3's group-coordinator schema files (ShareGroup*Value.json), all at
version 0 and flexible. Type 9 (ShareGroupPartitionMetadata) existed only in Kafka 4.0's early
access share groups; 4.3 no longer defines it, so it is an unknown type here as it is for
Kafka's loader. Each decoder takes a reader positioned after the value version and returns the
value fields under snake_case names; topic ids are canonical UUID strings.
"""

from __future__ import annotations

from ._flexible import tagged_int64, text, texts, topic_id_partitions
from .reader import ByteReader


def share_group_member_metadata(reader: ByteReader, version: int) -> dict:
    """ShareGroupMemberMetadataValue: RackId (nullable), ClientId, ClientHost, SubscribedTopicNames."""
    value = {
        "rack_id": reader.string("rack_id", flexible=True),
        "client_id": text(reader, "client_id"),
        "client_host": text(reader, "client_host"),
        "subscribed_topic_names": texts(reader, "subscribed_topic_names"),
    }
    reader.tagged_fields("")
    return value


def share_group_metadata(reader: ByteReader, version: int) -> dict:
    """ShareGroupMetadataValue: Epoch, MetadataHash (a plain field here, unlike type 3's tag)."""
    value = {"epoch": reader.int32("epoch"), "metadata_hash": reader.int64("metadata_hash")}
    reader.tagged_fields("")
    return value


def share_group_target_assignment_metadata(reader: ByteReader, version: int) -> dict:
    """ShareGroupTargetAssignmentMetadataValue: AssignmentEpoch; tagged AssignmentTimestamp (tag 0, 4.3)."""
    epoch = reader.int32("assignment_epoch")
    tagged = reader.tagged_fields("", {0: ("assignment_timestamp", tagged_int64)})
    return {"assignment_epoch": epoch, "assignment_timestamp": tagged.get("assignment_timestamp", 0)}


def share_group_target_assignment_member(reader: ByteReader, version: int) -> dict:
    """ShareGroupTargetAssignmentMemberValue: TopicPartitions [TopicId, Partitions]."""
    partitions = topic_id_partitions(reader, "topic_partitions")
    reader.tagged_fields("")
    return {"topic_partitions": partitions}


def share_group_current_member_assignment(reader: ByteReader, version: int) -> dict:
    """ShareGroupCurrentMemberAssignmentValue: epochs, State, AssignedPartitions (no revocation list)."""
    value = {
        "member_epoch": reader.int32("member_epoch"),
        "previous_member_epoch": reader.int32("previous_member_epoch"),
        "state": reader.int8("state"),
        "assigned_partitions": topic_id_partitions(reader, "assigned_partitions"),
    }
    reader.tagged_fields("")
    return value


def _topic_partitions_info(reader: ByteReader, field: str) -> list[dict]:
    # TopicPartitionsInfo: TopicId uuid, TopicName string, Partitions []int32 (18 bytes at least).
    topics = []
    for i in range(reader.array_length(field, flexible=True, min_item_size=19)):
        path = f"{field}[{i}]"
        topics.append({
            "topic_id": reader.uuid(f"{path}.topic_id"),
            "topic_name": text(reader, f"{path}.topic_name"),
            "partitions": reader.int32_array(f"{path}.partitions", flexible=True),
        })
        reader.tagged_fields(path)
    return topics


def _topic_info(reader: ByteReader, field: str) -> list[dict]:
    # TopicInfo: TopicId uuid, TopicName string.
    topics = []
    for i in range(reader.array_length(field, flexible=True, min_item_size=18)):
        path = f"{field}[{i}]"
        topics.append({"topic_id": reader.uuid(f"{path}.topic_id"), "topic_name": text(reader, f"{path}.topic_name")})
        reader.tagged_fields(path)
    return topics


def share_group_state_partition_metadata(reader: ByteReader, version: int) -> dict:
    """ShareGroupStatePartitionMetadataValue: share-group state initializing, initialized, deleting."""
    value = {
        "initializing_topics": _topic_partitions_info(reader, "initializing_topics"),
        "initialized_topics": _topic_partitions_info(reader, "initialized_topics"),
        "deleting_topics": _topic_info(reader, "deleting_topics"),
    }
    reader.tagged_fields("")
    return value


# key type -> key fields after the group id
SHARE_GROUP_KEY_FIELDS = {10: ("member_id",), 13: ("member_id",), 14: ("member_id",)}

# key type -> (record_type, label for messages, value decoder, value field names)
SHARE_GROUP_RECORDS = {
    10: ("share_group_member_metadata", "share group member metadata", share_group_member_metadata,
         ("rack_id", "client_id", "client_host", "subscribed_topic_names")),
    11: ("share_group_metadata", "share group metadata", share_group_metadata, ("epoch", "metadata_hash")),
    12: ("share_group_target_assignment_metadata", "share group target assignment metadata",
         share_group_target_assignment_metadata, ("assignment_epoch", "assignment_timestamp")),
    13: ("share_group_target_assignment_member", "share group target assignment member",
         share_group_target_assignment_member, ("topic_partitions",)),
    14: ("share_group_current_member_assignment", "share group current member assignment",
         share_group_current_member_assignment,
         ("member_epoch", "previous_member_epoch", "state", "assigned_partitions")),
    15: ("share_group_state_partition_metadata", "share group state partition metadata",
         share_group_state_partition_metadata, ("initializing_topics", "initialized_topics", "deleting_topics")),
}
