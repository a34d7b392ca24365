"""Builders for the share group records (KIP-932, key types 10-15, flexible values v0).

Like Kafka, tagged fields at their default are left out; ``tagged`` arguments (tag -> raw
bytes) add fields this code does not know, as a newer broker would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .encode_kip848 import assignment_metadata_value, topic_id_partitions
from .encode_wire import array, int8, int16, int32, int64, string, tagged_fields, uuid_bytes
from .share_group import SHARE_GROUP_KEY_FIELDS

__all__ = [
    "share_group_current_member_assignment_key", "share_group_current_member_assignment_value",
    "share_group_key", "share_group_member_metadata_key", "share_group_member_metadata_value",
    "share_group_metadata_key", "share_group_metadata_value", "share_group_state_partition_metadata_key",
    "share_group_state_partition_metadata_value", "share_group_target_assignment_member_key",
    "share_group_target_assignment_member_value", "share_group_target_assignment_metadata_key",
    "share_group_target_assignment_metadata_value",
]


def share_group_key(key_type: int, group: str, member_id: str | None = None) -> bytes:
    """Build a share group key.

    Args:
        key_type: 10-15; types 10, 13 and 14 also carry a member id.
        group: Group id.
        member_id: Member id (types 10, 13, 14).

    Returns:
        The key bytes.
    """
    out = int16(key_type) + string(group)
    return out + string(member_id) if key_type in SHARE_GROUP_KEY_FIELDS else out


def share_group_member_metadata_key(group: str, member_id: str) -> bytes:
    """Key type 10."""
    return share_group_key(10, group, member_id)


def share_group_metadata_key(group: str) -> bytes:
    """Key type 11."""
    return share_group_key(11, group)


def share_group_target_assignment_metadata_key(group: str) -> bytes:
    """Key type 12."""
    return share_group_key(12, group)


def share_group_target_assignment_member_key(group: str, member_id: str) -> bytes:
    """Key type 13."""
    return share_group_key(13, group, member_id)


def share_group_current_member_assignment_key(group: str, member_id: str) -> bytes:
    """Key type 14."""
    return share_group_key(14, group, member_id)


def share_group_state_partition_metadata_key(group: str) -> bytes:
    """Key type 15."""
    return share_group_key(15, group)


def _strings(items: Iterable[str]) -> bytes:
    return array(items, lambda t: string(t, True), True)


def share_group_member_metadata_value(client_id: str, client_host: str, subscribed_topic_names: Iterable[str],
                                      rack_id: str | None = None, tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupMemberMetadataValue v0 (fields as named in the schema)."""
    return (int16(0) + string(rack_id, True) + string(client_id, True) + string(client_host, True)
            + _strings(subscribed_topic_names) + tagged_fields(tagged))


def share_group_metadata_value(epoch: int, metadata_hash: int = 0, tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupMetadataValue v0: Epoch, MetadataHash."""
    return int16(0) + int32(epoch) + int64(metadata_hash) + tagged_fields(tagged)


def share_group_target_assignment_metadata_value(assignment_epoch: int, assignment_timestamp: int = 0,
                                                 tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupTargetAssignmentMetadataValue v0: AssignmentEpoch, tagged AssignmentTimestamp (tag 0)."""
    return assignment_metadata_value(assignment_epoch, assignment_timestamp, tagged)


def share_group_target_assignment_member_value(topic_partitions, tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupTargetAssignmentMemberValue v0; topic_partitions as {topic_id: [partitions]}."""
    return int16(0) + topic_id_partitions(topic_partitions) + tagged_fields(tagged)


def share_group_current_member_assignment_value(member_epoch: int, previous_member_epoch: int, state: int,
                                                assigned_partitions,
                                                tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupCurrentMemberAssignmentValue v0; assigned_partitions as {topic_id: [partitions]}."""
    return (int16(0) + int32(member_epoch) + int32(previous_member_epoch) + int8(state)
            + topic_id_partitions(assigned_partitions) + tagged_fields(tagged))


def share_group_state_partition_metadata_value(initializing_topics: Iterable[Mapping] = (),
                                               initialized_topics: Iterable[Mapping] = (),
                                               deleting_topics: Iterable[Mapping] = (),
                                               tagged: Mapping[int, bytes] | None = None) -> bytes:
    """ShareGroupStatePartitionMetadataValue v0.

    Args:
        initializing_topics: [{"topic_id", "topic_name", "partitions"}].
        initialized_topics: Same form.
        deleting_topics: [{"topic_id", "topic_name"}].
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    def with_partitions(t):
        return (uuid_bytes(t["topic_id"]) + string(t["topic_name"], True) + array(t["partitions"], int32, True)
                + tagged_fields())

    def info(t):
        return uuid_bytes(t["topic_id"]) + string(t["topic_name"], True) + tagged_fields()
    return (int16(0) + array(initializing_topics, with_partitions, True) + array(initialized_topics, with_partitions, True)
            + array(deleting_topics, info, True) + tagged_fields(tagged))
