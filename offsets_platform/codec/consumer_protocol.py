"""The consumer protocol payloads carried inside classic group metadata members.

Subscription (ConsumerProtocolSubscription.json, v0-v3): topics []string, user_data nullable
bytes; v1 adds owned_partitions [{topic, partitions []int32}]; v2 generation_id int32; v3
rack_id nullable string. Assignment (ConsumerProtocolAssignment.json, v0-v3, same fields in
every version): assigned_partitions [{topic, partitions}], user_data nullable bytes.
Neither is ever flexible.

The broker reads only the v0 prefix of a subscription and ignores what follows (KIP-496), and
clients parse newer versions with the newest format they know. This decoder does the same:
the v0 prefix must decode, later fields are best effort (None when missing or unreadable) and
trailing bytes are ignored.
"""

from __future__ import annotations

from .reader import ByteReader, DecodeError


def _version(reader: ByteReader, field: str) -> int:
    version = reader.int16(field)
    if version < 0:
        raise reader.error(field, f"is {version}; the consumer protocol starts at version 0")
    return version


def _topic_partitions(reader: ByteReader, field: str) -> list[dict]:
    count = reader.array_length(field, min_item_size=6)
    return [
        {
            "topic": reader.string(f"{field}[{i}].topic"),
            "partitions": reader.int32_array(f"{field}[{i}].partitions"),
        }
        for i in range(count)
    ]


def decode_subscription(data: bytes | None, context: str, field: str = "subscription") -> dict:
    """Decode a consumer protocol subscription the way the broker does.

    Args:
        data: The member's subscription bytes.
        context: Error-message prefix, e.g. "group metadata value v3".
        field: Path of the payload for error messages, e.g. "members[0].subscription".

    Returns:
        {"version", "topics", "user_data", "owned_partitions", "generation_id", "rack_id"};
        fields the version does not carry, or that are cut off, are None.

    Raises:
        DecodeError: if even the v0 prefix (version, topics, user_data) cannot be read.
    """
    if data is None:
        raise DecodeError(f"{context}: field '{field}' is null, expected a consumer protocol subscription")
    reader = ByteReader(data, context)
    version = _version(reader, f"{field}.version")
    result = {
        "version": version,
        "topics": reader.string_array(f"{field}.topics"),
        "user_data": reader.bytes(f"{field}.user_data"),
        "owned_partitions": None,
        "generation_id": None,
        "rack_id": None,
    }
    # Fields after the v0 prefix are read one at a time so that a payload cut short keeps
    # everything read before the cut, as the broker's prefix-only parse would.
    try:
        if version >= 1:
            result["owned_partitions"] = _topic_partitions(reader, f"{field}.owned_partitions")
        if version >= 2:
            result["generation_id"] = reader.int32(f"{field}.generation_id")
        if version >= 3:
            result["rack_id"] = reader.string(f"{field}.rack_id")
    except DecodeError:
        pass
    return result


def decode_assignment(data: bytes | None, context: str, field: str = "assignment") -> dict | None:
    """Decode a consumer protocol assignment.

    Args:
        data: The member's assignment bytes.
        context: Error-message prefix.
        field: Path of the payload for error messages, e.g. "members[0].assignment".

    Returns:
        {"version", "partitions": {topic: [partition, ...]}, "user_data"}, or None when the
        bytes are empty or null: the coordinator stores an empty assignment for members the
        leader left out of its SyncGroup request.

    Raises:
        DecodeError: if the bytes are present but the assignment cannot be read.
    """
    if not data:
        return None
    reader = ByteReader(data, context)
    version = _version(reader, f"{field}.version")
    partitions: dict[str, list[int]] = {}
    for entry in _topic_partitions(reader, f"{field}.assigned_partitions"):
        partitions.setdefault(entry["topic"], []).extend(entry["partitions"])
    return {"version": version, "partitions": partitions, "user_data": reader.bytes(f"{field}.user_data")}
