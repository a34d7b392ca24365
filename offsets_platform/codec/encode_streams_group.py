"""Builders for the streams group records (KIP-1071, key types 17 and 19-23, flexible values v0).

Like Kafka, tagged fields at their default are left out; ``tagged`` arguments (tag -> raw
bytes) add fields this code does not know, as a newer broker would.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from .encode_kip848 import assignment_metadata_value, nullable_int32_array_tag
from .encode_wire import array, int8, int16, int32, int64, string, tagged_fields
from .streams_group import STREAMS_GROUP_KEY_FIELDS

__all__ = [
    "streams_group_current_member_assignment_key", "streams_group_current_member_assignment_value",
    "streams_group_key", "streams_group_member_metadata_key", "streams_group_member_metadata_value",
    "streams_group_metadata_key", "streams_group_metadata_value", "streams_group_target_assignment_member_key",
    "streams_group_target_assignment_member_value", "streams_group_target_assignment_metadata_key",
    "streams_group_target_assignment_metadata_value", "streams_group_topology_key", "streams_group_topology_value",
]

_TASK_KINDS = ("active_tasks", "standby_tasks", "warmup_tasks")
_NULL_ARRAY = b"\x00"  # a null compact array: length + 1 = 0


def streams_group_key(key_type: int, group: str, member_id: str | None = None) -> bytes:
    """Build a streams group key.

    Args:
        key_type: 17 or 19-23; types 19, 21 and 22 also carry a member id.
        group: Group id.
        member_id: Member id (types 19, 21, 22).

    Returns:
        The key bytes.
    """
    out = int16(key_type) + string(group)
    return out + string(member_id) if key_type in STREAMS_GROUP_KEY_FIELDS else out


def streams_group_metadata_key(group: str) -> bytes:
    """Key type 17."""
    return streams_group_key(17, group)


def streams_group_member_metadata_key(group: str, member_id: str) -> bytes:
    """Key type 19."""
    return streams_group_key(19, group, member_id)


def streams_group_target_assignment_metadata_key(group: str) -> bytes:
    """Key type 20."""
    return streams_group_key(20, group)


def streams_group_target_assignment_member_key(group: str, member_id: str) -> bytes:
    """Key type 21."""
    return streams_group_key(21, group, member_id)


def streams_group_current_member_assignment_key(group: str, member_id: str) -> bytes:
    """Key type 22."""
    return streams_group_key(22, group, member_id)


def streams_group_topology_key(group: str) -> bytes:
    """Key type 23."""
    return streams_group_key(23, group)


def _text(s: str | None) -> bytes:
    return string(s, True)


def _strings(items: Iterable[str]) -> bytes:
    return array(items, _text, True)


def _key_values(items: Iterable[Mapping] | None) -> bytes:
    """[{"key", "value"}] as a compact array; None as a null array."""
    if items is None:
        return _NULL_ARRAY
    return array(items, lambda kv: _text(kv["key"]) + _text(kv["value"]) + tagged_fields(), True)


def streams_group_metadata_value(epoch: int, metadata_hash: int = 0, validated_topology_epoch: int = -1,
                                 last_assignment_configs: Iterable[Mapping] | None = None,
                                 tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupMetadataValue v0.

    Args:
        epoch: Group epoch.
        metadata_hash: Hash of the group's topics' metadata.
        validated_topology_epoch: Tag 0, written when not -1.
        last_assignment_configs: Tag 1, [{"key", "value"}], written when not None.
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    fields = dict(tagged or {})
    if validated_topology_epoch != -1:
        fields[0] = int32(validated_topology_epoch)
    if last_assignment_configs is not None:
        fields[1] = _key_values(last_assignment_configs)
    return int16(0) + int32(epoch) + int64(metadata_hash) + tagged_fields(fields)


def streams_group_member_metadata_value(client_id: str, client_host: str, process_id: str, topology_epoch: int = 0,
                                        rebalance_timeout_ms: int = -1, instance_id: str | None = None,
                                        rack_id: str | None = None, user_endpoint: Mapping | None = None,
                                        client_tags: Iterable[Mapping] = (),
                                        tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupMemberMetadataValue v0.

    Args:
        user_endpoint: None, or {"host", "port"} (port as uint16).
        client_tags: [{"key", "value"}].
        Other arguments: the schema fields of the same names.

    Returns:
        The value bytes.
    """
    if user_endpoint is None:
        endpoint = int8(-1)  # an untagged nullable struct: int8 -1 = null, 1 = present
    else:
        endpoint = int8(1) + _text(user_endpoint["host"]) + struct.pack(">H", user_endpoint["port"]) + tagged_fields()
    return (int16(0) + _text(instance_id) + _text(rack_id) + _text(client_id) + _text(client_host)
            + int32(rebalance_timeout_ms) + int32(topology_epoch) + _text(process_id) + endpoint
            + _key_values(client_tags) + tagged_fields(tagged))


def streams_group_target_assignment_metadata_value(assignment_epoch: int, assignment_timestamp: int = 0,
                                                   tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupTargetAssignmentMetadataValue v0: AssignmentEpoch, tagged AssignmentTimestamp (tag 0)."""
    return assignment_metadata_value(assignment_epoch, assignment_timestamp, tagged)


def _task_ids(tasks, assignment_epochs: bool) -> bytes:
    """{subtopology_id: [partitions]} or [{"subtopology_id", "partitions", "assignment_epochs"?}]."""
    if isinstance(tasks, Mapping):
        tasks = [{"subtopology_id": s, "partitions": p} for s, p in tasks.items()]

    def item(t):
        tags = nullable_int32_array_tag(t.get("assignment_epochs")) if assignment_epochs else {}
        return _text(t["subtopology_id"]) + array(t["partitions"], int32, True) + tagged_fields(tags)
    return array(tasks, item, True)


def streams_group_target_assignment_member_value(active_tasks=(), standby_tasks=(), warmup_tasks=(),
                                                 tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupTargetAssignmentMemberValue v0; tasks as {subtopology_id: [partitions]} or lists of dicts."""
    return (int16(0) + b"".join(_task_ids(t, False) for t in (active_tasks, standby_tasks, warmup_tasks))
            + tagged_fields(tagged))


def streams_group_current_member_assignment_value(member_epoch: int, previous_member_epoch: int, state: int,
                                                  active_tasks=(), standby_tasks=(), warmup_tasks=(),
                                                  active_tasks_pending_revocation=(),
                                                  standby_tasks_pending_revocation=(),
                                                  warmup_tasks_pending_revocation=(),
                                                  tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupCurrentMemberAssignmentValue v0; task lists as in the target assignment, items may
    carry "assignment_epochs" (tag 0)."""
    tasks = (active_tasks, standby_tasks, warmup_tasks, active_tasks_pending_revocation,
             standby_tasks_pending_revocation, warmup_tasks_pending_revocation)
    return (int16(0) + int32(member_epoch) + int32(previous_member_epoch) + int8(state)
            + b"".join(_task_ids(t, True) for t in tasks) + tagged_fields(tagged))


def _topic_info(t: Mapping) -> bytes:
    return (_text(t["name"]) + int32(t.get("partitions", 0)) + int16(t.get("replication_factor", 0))
            + _key_values(t.get("topic_configs", ())) + tagged_fields())


def _copartition_group(g: Mapping) -> bytes:
    def indexes(name):
        return array(g.get(name, ()), int16, True)
    return (indexes("source_topics") + indexes("source_topic_regex") + indexes("repartition_source_topics")
            + tagged_fields())


def _subtopology(s: Mapping) -> bytes:
    return (_text(s["subtopology_id"]) + _strings(s.get("source_topics", ())) + _strings(s.get("source_topic_regex", ()))
            + array(s.get("state_changelog_topics", ()), _topic_info, True)
            + _strings(s.get("repartition_sink_topics", ()))
            + array(s.get("repartition_source_topics", ()), _topic_info, True)
            + array(s.get("copartition_groups", ()), _copartition_group, True) + tagged_fields())


def streams_group_topology_value(epoch: int, subtopologies: Iterable[Mapping],
                                 tagged: Mapping[int, bytes] | None = None) -> bytes:
    """StreamsGroupTopologyValue v0.

    Args:
        epoch: The topology epoch.
        subtopologies: Dicts with subtopology_id and optional source_topics, source_topic_regex,
            state_changelog_topics and repartition_source_topics ([{"name", "partitions",
            "replication_factor", "topic_configs"}]), repartition_sink_topics and
            copartition_groups ([{"source_topics", "source_topic_regex", "repartition_source_topics"}]
            of int16 indexes).
        tagged: Extra tagged fields.

    Returns:
        The value bytes.
    """
    return int16(0) + int32(epoch) + array(subtopologies, _subtopology, True) + tagged_fields(tagged)
