"""Kafka wire primitives for the encoders (layouts in ``encode``): the inverse of ``reader.ByteReader``."""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping

__all__ = ["array", "bytes_field", "int8", "int16", "int32", "int64", "string", "tagged_fields", "uuid_bytes",
           "uvarint"]


def int8(v: int) -> bytes:
    """Encode a signed 8-bit integer."""
    return struct.pack(">b", v)


def int16(v: int) -> bytes:
    """Encode a big-endian signed 16-bit integer."""
    return struct.pack(">h", v)


def int32(v: int) -> bytes:
    """Encode a big-endian signed 32-bit integer."""
    return struct.pack(">i", v)


def int64(v: int) -> bytes:
    """Encode a big-endian signed 64-bit integer."""
    return struct.pack(">q", v)


def uvarint(n: int) -> bytes:
    """Encode an unsigned varint (7 bits a byte, low groups first)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def uuid_bytes(value: str | _uuid.UUID) -> bytes:
    """Encode a UUID (canonical string or uuid.UUID) as its 16 bytes."""
    return (value if isinstance(value, _uuid.UUID) else _uuid.UUID(value)).bytes


def _length(n: int, flexible: bool, wide: bool) -> bytes:
    """A length prefix, -1 for null: compact (varint n + 1) when flexible, else int32 if wide or int16."""
    if flexible:
        return uvarint(n + 1)
    return int32(n) if wide else int16(n)


def string(s: str | None, flexible: bool = False) -> bytes:
    """Encode a string; None is written as null."""
    if s is None:
        return _length(-1, flexible, wide=False)
    data = s.encode("utf-8")
    return _length(len(data), flexible, wide=False) + data


def bytes_field(b: bytes | None, flexible: bool = False) -> bytes:
    """Encode a byte string; None is written as null."""
    if b is None:
        return _length(-1, flexible, wide=True)
    return _length(len(b), flexible, wide=True) + bytes(b)


def array(items: Iterable, encode_item: Callable[[object], bytes], flexible: bool = False) -> bytes:
    """Encode an array with its length prefix."""
    items = list(items)
    return _length(len(items), flexible, wide=True) + b"".join(encode_item(item) for item in items)


def tagged_fields(fields: Mapping[int, bytes] | None = None) -> bytes:
    """Encode a tagged-field section: count, then tag, size and data in ascending tag order."""
    fields = fields or {}
    out = [uvarint(len(fields))]
    for tag in sorted(fields):
        out += [uvarint(tag), uvarint(len(fields[tag])), bytes(fields[tag])]
    return b"".join(out)


def topic_partition_items(partitions, topic_key: str) -> Iterable[tuple]:
    """(topic, partitions) pairs from {topic: [partitions]} or [{topic_key: topic, "partitions": [...]}]."""
    if isinstance(partitions, Mapping):
        return partitions.items()
    return [(p[topic_key], p["partitions"]) for p in partitions]
