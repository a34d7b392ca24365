"""Which `__consumer_offsets` partition Kafka picks for a group.

Kafka's coordinator maps a group to `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`
(GroupMetadataManager.partitionFor). `Utils.abs` is `x & 0x7fffffff`, not `Math.abs`: for
Integer.MIN_VALUE the mask gives 0 where `Math.abs` would stay negative.
"""

from __future__ import annotations

from functools import lru_cache

DEFAULT_PARTITIONS = 50
"""Kafka's default `offsets.topic.num.partitions`."""


def java_string_hashcode(text: str) -> int:
    """Return Java's `String.hashCode()` of `text` as a signed 32-bit int.

    Java hashes UTF-16 code units, so characters outside the Basic Multilingual Plane count
    as two (a surrogate pair), exactly as the JVM sees them.

    Args:
        text: the string to hash.

    Returns:
        The hash, in [-2**31, 2**31 - 1].
    """
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(value: int) -> int:
    """Return Kafka's `Utils.abs(value)`: the value with its sign bit masked off.

    Args:
        value: a signed 32-bit int.

    Returns:
        `value & 0x7fffffff`.
    """
    return value & 0x7FFFFFFF


@lru_cache(maxsize=65536)
def partition_for(group: str, partition_count: int = DEFAULT_PARTITIONS) -> int:
    """Return the `__consumer_offsets` partition holding `group`'s records.

    Args:
        group: the group id.
        partition_count: partitions of `__consumer_offsets` (default 50).

    Returns:
        A partition number in [0, partition_count).
    """
    if partition_count <= 0:
        raise ValueError(f"partition_count must be positive, got {partition_count}")
    return kafka_abs(java_string_hashcode(group)) % partition_count
