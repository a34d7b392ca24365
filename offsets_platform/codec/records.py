"""Decode one `__consumer_offsets` record: key dispatch plus the classic value formats.

Key = int16 record type then the key fields; value = int16 version then the value fields, or
None for a tombstone. Offset commit (OffsetCommitKey/Value.json, values v0-v4) and classic
group metadata (GroupMetadataKey/Value.json, values v0-v4) are decoded here, KIP-848 values
(types 3-8, 16) in ``kip848``, share groups (10-15) in ``share_group``, streams groups (17,
19-23) in ``streams_group``: every record type Kafka 4.3's group coordinator defines.

What Kafka 4.3's loader does, and so what this module does (CoordinatorRecordSerde.deserialize
and CoordinatorLoaderImpl in coordinator-common):
- a record type it does not define (GroupCoordinatorRecordSerde throws
  UnknownRecordTypeException) is logged and skipped, the load goes on: reported here as
  record_type "unknown", not refused;
- a value version outside the schema's validVersions (UnknownRecordVersionException) and bytes
  that do not parse fail the whole partition's load: refused here with a DecodeError.
A newer broker extends a record with tagged fields (no new version), which are skipped, so its
records still decode. Keys and values must be consumed exactly: leftover bytes mean the record
is not what its type says, so they are refused.
"""

from __future__ import annotations

from .consumer_protocol import decode_assignment, decode_subscription
from .kip848 import KIP848_KEY_FIELDS, KIP848_RECORDS
from .reader import ByteReader, DecodeError
from .share_group import SHARE_GROUP_KEY_FIELDS, SHARE_GROUP_RECORDS
from .streams_group import STREAMS_GROUP_KEY_FIELDS, STREAMS_GROUP_RECORDS


def _offset_commit_value(reader: ByteReader, version: int) -> dict:
    flexible = version >= 4
    offset = reader.int64("offset")
    leader_epoch = reader.int32("leader_epoch") if version >= 3 else -1
    metadata = reader.string("metadata", flexible)
    commit_timestamp = reader.int64("commit_timestamp")
    expire_timestamp = reader.int64("expire_timestamp") if version == 1 else -1
    if flexible:
        reader.tagged_fields("")
    return {
        "offset": offset,
        "leader_epoch": None if leader_epoch == -1 else leader_epoch,
        "metadata": metadata,
        "commit_timestamp": commit_timestamp,
        "expire_timestamp": None if expire_timestamp == -1 else expire_timestamp,
    }


def _group_member(reader: ByteReader, version: int, index: int, consumer: bool) -> dict:
    flexible = version >= 4
    path = f"members[{index}]"
    member = {
        "member_id": reader.string(f"{path}.member_id", flexible),
        "group_instance_id": reader.string(f"{path}.group_instance_id", flexible) if version >= 3 else None,
        "client_id": reader.string(f"{path}.client_id", flexible),
        "client_host": reader.string(f"{path}.client_host", flexible),
        "rebalance_timeout": reader.int32(f"{path}.rebalance_timeout") if version >= 1 else None,
        "session_timeout": reader.int32(f"{path}.session_timeout"),
    }
    subscription = reader.bytes(f"{path}.subscription", flexible)
    assignment = reader.bytes(f"{path}.assignment", flexible)
    if flexible:
        reader.tagged_fields(path)
    # Only the "consumer" protocol type carries the consumer protocol; others are opaque. Kafka
    # stores both payloads as opaque bytes and loads the record whatever they hold; it parses the
    # subscription only for the topic list (ClassicGroup.computeSubscribedTopics), and a payload
    # that does not parse leaves the group's subscriptions unknown. So a payload that does not
    # decode is kept as bytes with the reason, and the record is not rejected.
    member["subscription"] = member["assignment"] = None
    member["subscription_error"] = member["assignment_error"] = None
    if consumer:
        for name, payload, decode in (("subscription", subscription, decode_subscription),
                                      ("assignment", assignment, decode_assignment)):
            try:
                member[name] = decode(payload, reader.context, f"{path}.{name}")
            except DecodeError as error:
                member[f"{name}_error"] = str(error)
    member["subscription_bytes"] = subscription
    member["assignment_bytes"] = assignment
    return member


def _group_metadata_value(reader: ByteReader, version: int) -> dict:
    flexible = version >= 4
    protocol_type = reader.string("protocol_type", flexible)
    generation = reader.int32("generation")
    protocol = reader.string("protocol", flexible)
    leader = reader.string("leader", flexible)
    timestamp = reader.int64("current_state_timestamp") if version >= 2 else -1
    count = reader.array_length("members", flexible, min_item_size=8 if flexible else 20)
    consumer = protocol_type == "consumer"
    members = [_group_member(reader, version, i, consumer) for i in range(count)]
    if flexible:
        reader.tagged_fields("")
    return {
        "protocol_type": protocol_type,
        "generation": generation,
        "protocol": protocol,
        "leader": leader,
        "current_state_timestamp": None if timestamp == -1 else timestamp,
        "members": members,
    }


_OFFSET_COMMIT = ("offset_commit", "offset commit", _offset_commit_value,
                  ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp"))
_GROUP_METADATA = ("group_metadata", "group metadata", _group_metadata_value,
                   ("protocol_type", "generation", "protocol", "leader", "current_state_timestamp", "members"))

# key type -> (record_type, label for messages, value decoder, value field names)
RECORD_SPECS = {0: _OFFSET_COMMIT, 1: _OFFSET_COMMIT, 2: _GROUP_METADATA, **KIP848_RECORDS,
                **SHARE_GROUP_RECORDS, **STREAMS_GROUP_RECORDS}
"""Key type -> (record_type, label, value decoder, value field names), for every type Kafka 4.3 defines."""

# key type -> key fields after the group id (int16-length strings; no key is flexible)
_KEY_FIELDS = {**KIP848_KEY_FIELDS, **SHARE_GROUP_KEY_FIELDS, **STREAMS_GROUP_KEY_FIELDS}
# record_type -> the value versions Kafka 4.3's schemas define (validVersions); every other
# type is at version 0 only.
_VALUE_VERSIONS = {"offset_commit": (0, 4), "group_metadata": (0, 4)}
# ... except that Kafka reads a legacy offset commit key (type 0) with LegacyOffsetCommitValue,
# whose only version is 0.
_KEY_TYPE_VALUE_VERSIONS = {0: (0, 0)}

RECORD_TYPES: dict[int, str] = {key_type: spec[0] for key_type, spec in RECORD_SPECS.items()}
"""Key type (the int16 at the start of every key) -> record_type name."""


def _as_bytes(data, what: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"record {what} must be bytes, not {type(data).__name__}")


def decode_key(key: bytes) -> dict:
    """Decode a record key.

    Args:
        key: The raw key bytes.

    Returns:
        {"record_type", "key_version", "group"} plus "topic" and "partition" for offset
        commits, "member_id" for member records, "regular_expression" for type 16. A key type
        Kafka 4.3 does not define gives record_type "unknown" and group None.

    Raises:
        DecodeError: if the key is null, truncated, malformed, or has bytes left over.
    """
    if key is None:
        raise DecodeError("record key: field 'key_type' is missing: the key is null")
    reader = ByteReader(_as_bytes(key, "key"), "record key")
    key_type = reader.int16("key_type")
    spec = RECORD_SPECS.get(key_type)
    if spec is None:
        return {"record_type": "unknown", "key_version": key_type, "group": None}
    record_type, label = spec[0], spec[1]
    reader.context = f"{label} key v{key_type}"
    result = {"record_type": record_type, "key_version": key_type, "group": reader.string("group")}
    last = "group"
    if record_type == "offset_commit":
        result["topic"] = reader.string("topic")
        result["partition"] = reader.int32("partition")
        last = "partition"
    else:
        for last in _KEY_FIELDS.get(key_type, ()):
            result[last] = reader.string(last)
    reader.expect_end(last)
    return result


def decode_record(key: bytes, value: bytes | None) -> dict:
    """Decode one `__consumer_offsets` record.

    Args:
        key: The raw key bytes.
        value: The raw value bytes, or None for a tombstone.

    Returns:
        A dict with "record_type", "key_version", "group", the other key fields, "tombstone",
        "value_version" and the value fields under snake_case names (all None for a
        tombstone). For an unknown key type: record_type "unknown", group None and
        value_version None; the value is not looked at.

    Raises:
        DecodeError: if the key or value is truncated or malformed; the message names the
            field where decoding failed.
    """
    result = decode_key(key)
    result["tombstone"] = value is None
    spec = RECORD_SPECS.get(result["key_version"])
    if spec is None:
        result["value_version"] = None
        return result
    record_type, label, decode_value, field_names = spec
    if value is None:
        result["value_version"] = None
        result.update(dict.fromkeys(field_names))
        return result
    reader = ByteReader(_as_bytes(value, "value"), f"{label} value")
    version = reader.int16("version")
    low, high = _KEY_TYPE_VALUE_VERSIONS.get(result["key_version"]) or _VALUE_VERSIONS.get(record_type, (0, 0))
    if not low <= version <= high:
        # Kafka 4.3's loader fails the partition on such a record (UnknownRecordVersionException).
        raise reader.error("version", f"is {version}, outside the versions {low}-{high} Kafka 4.3 defines "
                                      "for this record (Kafka's loader refuses it too)")
    reader.context = f"{label} value v{version}"
    result["value_version"] = version
    result.update(decode_value(reader, version))
    reader.expect_end()
    return result
