"""Builders for the KIP-848 consumer group records (key types 3-8 and 16, flexible values v0).

Like Kafka, tagged fields at their default are left out; ``tagged`` arguments (tag -> raw
bytes) add fields this code does not know, as a newer broker would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .encode_wire import (array, bytes_field, int8, int16, int32, int64, string, tagged_fields,
                          uuid_bytes, uvarint)
from .kip848 import KIP848_KEY_FIELDS

__all__ = [
    "consumer_group_current_member_assignment_key", "consumer_group_current_member_assignment_value",
    "consumer_group_key", "consumer_group_member_metadata_key", "consumer_group_member_metadata_value",
    "consumer_group_metadata_key", "consumer_group_metadata_value", "consumer_group_partition_metadata_key",
    "consumer_group_partition_metadata_value", "consumer_group_regular_expression_key",
    "consumer_group_regular_expression_value", "consumer_group_target_assignment_member_key",
    "consumer_group_target_assignment_member_value", "consumer_group_target_assignment_metadata_key",
    "consumer_group_target_assignment_metadata_value",
]


def consumer_group_key(key_type: int, group: str, member_id: str | None = None) -> bytes:
    """Build a KIP-848 key.

    Args:
        key_type: 3-8; types 3, 4 and 6 carry the group only, 5, 7 and 8 also a member id.
        group: Group id.
        member_id: Member id (types 5, 7, 8).

    Returns:
        The key bytes.
    """
    out = int16(key_type) + string(group)
    return out + string(member_id) if KIP848_KEY_FIELDS.get(key_type) == ("member_id",) else out


def consumer_group_metadata_key(group: str) -> bytes:
    """Key type 3."""
    return consumer_group_key(3, group)


def consumer_group_partition_metadata_key(group: str) -> bytes:
    """Key type 4."""
    return consumer_group_key(4, group)


def consumer_group_member_metadata_key(group: str, member_id: str) -> bytes:
    """Key type 5."""
    return consumer_group_key(5, group, member_id)


def consumer_group_target_assignment_metadata_key(group: str) -> bytes:
    """Key type 6."""
    return consumer_group_key(6, group)


def consumer_group_target_assignment_member_key(group: str, member_id: str) -> bytes:
    """Key type 7."""
    return consumer_group_key(7, group, member_id)


def consumer_group_current_member_assignment_key(group: str, member_id: str) -> bytes:
    """Key type 8."""
    return consumer_group_key(8, group, member_id)


def consumer_group_regular_expression_key(group: str, regular_expression: str) -> bytes:
    """Key type 16: group id and the regular expression."""
    return int16(16) + string(group) + string(regular_expression)


def consumer_group_regular_expression_value(topics: Iterable[str], version: int, timestamp: int,
                                            tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupRegularExpressionValue v0.

    Args:
        topics: The topics the regex resolved to.
        version: Metadata image version of the resolution.
        timestamp: When the regex was resolved (ms).
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    return (int16(0) + array(topics, lambda t: string(t, True), True) + int64(version) + int64(timestamp)
            + tagged_fields(tagged))


def consumer_group_metadata_value(epoch: int, metadata_hash: int = 0,
                                  tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupMetadataValue v0.

    Args:
        epoch: Group epoch.
        metadata_hash: Hash of the subscribed topics' metadata (tag 0; written when not 0).
        tagged: Extra tagged fields (tags Kafka does not define, as a newer broker might write).

    Returns:
        The value bytes; like Kafka, tagged fields at their default are left out.
    """
    fields = dict(tagged or {})
    if metadata_hash != 0:
        fields[0] = int64(metadata_hash)
    return int16(0) + int32(epoch) + tagged_fields(fields)


def consumer_group_partition_metadata_value(topics: Iterable[Mapping],
                                            tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupPartitionMetadataValue v0.

    Args:
        topics: Dicts with topic_id, topic_name, num_partitions and optional
            partition_metadata [{"partition", "racks"}].
        tagged: Extra top-level tagged fields.

    Returns:
        The value bytes.
    """
    def rack(p):
        return int32(p["partition"]) + array(p["racks"], lambda r: string(r, True), True) + tagged_fields()

    def topic(t):
        return (uuid_bytes(t["topic_id"]) + string(t["topic_name"], True) + int32(t["num_partitions"])
                + array(t.get("partition_metadata") or [], rack, True) + tagged_fields())
    return int16(0) + array(topics, topic, True) + tagged_fields(tagged)


def _classic_member_metadata(classic: Mapping) -> bytes:
    def protocol(p):
        return string(p["name"], True) + bytes_field(p["metadata"], True) + tagged_fields()
    body = int32(classic["session_timeout_ms"]) + array(classic["supported_protocols"], protocol, True)
    # Tagged nullable struct: varint 1 marks it present, before the struct itself.
    return uvarint(1) + body + tagged_fields()


def consumer_group_member_metadata_value(client_id: str, client_host: str, subscribed_topic_names: Iterable[str],
                                         rebalance_timeout_ms: int = -1, instance_id: str | None = None,
                                         rack_id: str | None = None, subscribed_topic_regex: str | None = None,
                                         server_assignor: str | None = None,
                                         classic_member_metadata: Mapping | None = None,
                                         tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupMemberMetadataValue v0.

    Args:
        classic_member_metadata: None, or {"session_timeout_ms", "supported_protocols":
            [{"name", "metadata"}]} for a member still on the classic protocol (tag 0).
        Other arguments: the schema fields of the same names.

    Returns:
        The value bytes.
    """
    fields = dict(tagged or {})
    if classic_member_metadata is not None:
        fields[0] = _classic_member_metadata(classic_member_metadata)
    return (int16(0) + string(instance_id, True) + string(rack_id, True) + string(client_id, True)
            + string(client_host, True) + array(subscribed_topic_names, lambda t: string(t, True), True)
            + string(subscribed_topic_regex, True) + int32(rebalance_timeout_ms)
            + string(server_assignor, True) + tagged_fields(fields))


def assignment_metadata_value(assignment_epoch: int, assignment_timestamp: int = 0,
                              tagged: Mapping[int, bytes] | None = None) -> bytes:
    """{Consumer,Share,Streams}GroupTargetAssignmentMetadataValue v0: the three share one layout.

    Args:
        assignment_epoch: Epoch of the target assignment.
        assignment_timestamp: When the assignment was computed (tag 0, since 4.3; written when not 0).
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    fields = dict(tagged or {})
    if assignment_timestamp != 0:
        fields[0] = int64(assignment_timestamp)
    return int16(0) + int32(assignment_epoch) + tagged_fields(fields)


def consumer_group_target_assignment_metadata_value(assignment_epoch: int, assignment_timestamp: int = 0,
                                                    tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupTargetAssignmentMetadataValue v0 (see ``assignment_metadata_value``)."""
    return assignment_metadata_value(assignment_epoch, assignment_timestamp, tagged)


def nullable_int32_array_tag(values) -> dict[int, bytes]:
    """Tag 0 holding a nullable compact []int32 (AssignmentEpochs), or no tag for None."""
    if values is None:
        return {}
    return {0: array(values, int32, True)}


def topic_id_partitions(partitions) -> bytes:
    """A compact []{TopicId, Partitions} from {topic_id: [partitions]} or [{"topic_id", "partitions"}].

    A dict item may carry "assignment_epochs" (tag 0 of ConsumerGroupCurrentMemberAssignmentValue's
    struct); Kafka leaves the tag out when it is null.
    """
    if isinstance(partitions, Mapping):
        items = [(topic, parts, None) for topic, parts in partitions.items()]
    else:
        items = [(p["topic_id"], p["partitions"], p.get("assignment_epochs")) for p in partitions]

    def item(tp):
        return uuid_bytes(tp[0]) + array(tp[1], int32, True) + tagged_fields(nullable_int32_array_tag(tp[2]))
    return array(items, item, True)


def consumer_group_target_assignment_member_value(topic_partitions,
                                                  tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupTargetAssignmentMemberValue v0.

    Args:
        topic_partitions: {topic_id: [partitions]} or [{"topic_id", "partitions"}].
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    return int16(0) + topic_id_partitions(topic_partitions) + tagged_fields(tagged)


def consumer_group_current_member_assignment_value(member_epoch: int, previous_member_epoch: int, state: int,
                                                   assigned_partitions, partitions_pending_revocation=(),
                                                   tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0.

    Args:
        member_epoch: Current member epoch.
        previous_member_epoch: Epoch before the last bump.
        state: MemberState code (int8).
        assigned_partitions: {topic_id: [partitions]} or [{"topic_id", "partitions"}].
        partitions_pending_revocation: Same form.
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    return (int16(0) + int32(member_epoch) + int32(previous_member_epoch) + int8(state)
            + topic_id_partitions(assigned_partitions) + topic_id_partitions(partitions_pending_revocation)
            + tagged_fields(tagged))
