"""Builders for the classic records: offset commits, group metadata, consumer protocol payloads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .encode_wire import array, bytes_field, int16, int32, int64, string, tagged_fields, topic_partition_items

__all__ = ["consumer_assignment", "consumer_subscription", "group_metadata_key", "group_metadata_value",
           "offset_commit_key", "offset_commit_value"]


# -- offset commit (key types 0 and 1, values v0-v4) ------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int, key_version: int = 1) -> bytes:
    """Build an offset commit key.

    Args:
        group: Group id.
        topic: Topic name.
        partition: Partition index.
        key_version: 1 (current brokers) or 0 (brokers before 0.10).

    Returns:
        The key bytes.
    """
    return int16(key_version) + string(group) + string(topic) + int32(partition)


def offset_commit_value(offset: int, commit_timestamp: int, metadata: str | None = "",
                        leader_epoch: int = -1, expire_timestamp: int = -1, version: int = 3,
                        tagged: Mapping[int, bytes] | None = None) -> bytes:
    """Build an offset commit value.

    Args:
        offset: Committed offset.
        commit_timestamp: Commit time, epoch ms.
        metadata: Client metadata string (None writes a null string).
        leader_epoch: Leader epoch, -1 for none (written from v3).
        expire_timestamp: Legacy expiry, epoch ms (written in v1 only).
        version: Value version 0-4.
        tagged: Extra tagged fields (v4 only).

    Returns:
        The value bytes.
    """
    flexible = version >= 4
    out = int16(version) + int64(offset)
    if version >= 3:
        out += int32(leader_epoch)
    out += string(metadata, flexible) + int64(commit_timestamp)
    if version == 1:
        out += int64(expire_timestamp)
    if flexible:
        out += tagged_fields(tagged)
    return out


# -- classic group metadata (key type 2, values v0-v4) ---------------------------------------

def group_metadata_key(group: str) -> bytes:
    """Build a classic group metadata key (type 2).

    Args:
        group: Group id.

    Returns:
        The key bytes.
    """
    return int16(2) + string(group)


def _payload(member: Mapping, name: str) -> bytes | None:
    # Accept raw bytes under "subscription" or, as decode_record returns them, "subscription_bytes".
    raw = member.get(f"{name}_bytes", member.get(name))
    return raw if raw is None or isinstance(raw, (bytes, bytearray)) else None


def _group_member(member: Mapping, version: int) -> bytes:
    flexible = version >= 4
    out = string(member["member_id"], flexible)
    if version >= 3:
        out += string(member.get("group_instance_id"), flexible)
    out += string(member.get("client_id", ""), flexible) + string(member.get("client_host", ""), flexible)
    if version >= 1:
        out += int32(member.get("rebalance_timeout") or 0)
    out += int32(member.get("session_timeout") or 0)
    out += bytes_field(_payload(member, "subscription") or b"", flexible)
    out += bytes_field(_payload(member, "assignment") or b"", flexible)
    if flexible:
        out += tagged_fields(member.get("tagged_fields"))
    return out


def group_metadata_value(protocol_type: str | None, generation: int, protocol: str | None,
                         leader: str | None, current_state_timestamp: int | None,
                         members: Iterable[Mapping], version: int = 3,
                         tagged: Mapping[int, bytes] | None = None) -> bytes:
    """Build a classic group metadata value.

    Args:
        protocol_type: "consumer", "connect", "" ...
        generation: Generation id.
        protocol: Chosen assignor name, or None.
        leader: Leader member id, or None.
        current_state_timestamp: Epoch ms of the last state change (written from v2; None
            writes -1).
        members: Dicts with member_id, group_instance_id, client_id, client_host,
            rebalance_timeout, session_timeout and bytes under subscription/assignment (or
            subscription_bytes/assignment_bytes).
        version: Value version 0-4.
        tagged: Extra top-level tagged fields (v4 only).

    Returns:
        The value bytes.
    """
    flexible = version >= 4
    out = int16(version) + string(protocol_type, flexible) + int32(generation)
    out += string(protocol, flexible) + string(leader, flexible)
    if version >= 2:
        out += int64(-1 if current_state_timestamp is None else current_state_timestamp)
    out += array(members, lambda m: _group_member(m, version), flexible)
    if flexible:
        out += tagged_fields(tagged)
    return out


# -- consumer protocol payloads (never flexible) -----------------------------------------------

def _topic_partitions(partitions) -> bytes:
    return array(topic_partition_items(partitions, "topic"),
                 lambda tp: string(tp[0]) + array(tp[1], int32))


def consumer_subscription(topics: Iterable[str], user_data: bytes | None = None,
                          owned_partitions=None, generation_id: int = -1,
                          rack_id: str | None = None, version: int = 3) -> bytes:
    """Build a consumer protocol subscription (ConsumerProtocolSubscription v0-v3).

    Args:
        topics: Subscribed topics.
        user_data: Assignor user data, or None.
        owned_partitions: {topic: [partitions]} or [{"topic", "partitions"}] (v1+).
        generation_id: Generation the owned partitions belong to (v2+).
        rack_id: Client rack, or None (v3+).
        version: Payload version 0-3.

    Returns:
        The subscription bytes.
    """
    out = int16(version) + array(topics, string) + bytes_field(user_data)
    if version >= 1:
        out += _topic_partitions(owned_partitions or [])
    if version >= 2:
        out += int32(generation_id)
    if version >= 3:
        out += string(rack_id)
    return out


def consumer_assignment(partitions, user_data: bytes | None = None, version: int = 3) -> bytes:
    """Build a consumer protocol assignment (ConsumerProtocolAssignment v0-v3).

    Args:
        partitions: {topic: [partitions]} or [{"topic", "partitions"}].
        user_data: Assignor user data, or None.
        version: Payload version 0-3 (all share one layout).

    Returns:
        The assignment bytes.
    """
    return int16(version) + _topic_partitions(partitions) + bytes_field(user_data)
