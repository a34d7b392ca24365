"""Kafka's group -> `__consumer_offsets` partition mapping."""

import pytest

from proving_ground.workload import DEFAULT_PARTITIONS, java_string_hashcode, kafka_abs, partition_for

pytestmark = pytest.mark.fast  # make test-fast


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("a", 97), ("abc", 96354), ("hello", 99162322),
    ("polygenelubricants", -2**31),  # Integer.MIN_VALUE
    ("Aa", 2112), ("BB", 2112),  # the classic Java collision
    ("\U0001F600", 1772899),  # outside the BMP: hashed as a UTF-16 surrogate pair
])
def test_java_string_hashcode_matches_java(text, expected):
    assert java_string_hashcode(text) == expected


@pytest.mark.parametrize("text", ["orders-active", "team-042-etl", "connect-sink", "zzzzzzzzzz"])
def test_java_string_hashcode_is_the_polynomial_wrapped_to_int32(text):
    # s[0]*31^(n-1) + ... + s[n-1], wrapped to a signed 32-bit int
    total = sum(ord(c) * 31 ** (len(text) - 1 - i) for i, c in enumerate(text)) % 2**32
    assert java_string_hashcode(text) == (total - 2**32 if total >= 2**31 else total)


def test_negative_hashes_map_through_the_mask_not_the_absolute_value():
    negative = next(t for t in (f"group-{i}" for i in range(1000)) if java_string_hashcode(t) < 0)
    h = java_string_hashcode(negative)
    assert partition_for(negative) == (h & 0x7FFFFFFF) % 50


def test_kafka_abs_masks_the_sign_bit_like_utils_abs():
    assert kafka_abs(-2**31) == 0  # Math.abs would stay negative here
    assert kafka_abs(-1) == 0x7FFFFFFF
    assert kafka_abs(96354) == 96354


def test_partition_for_uses_utils_abs_then_modulo():
    assert DEFAULT_PARTITIONS == 50
    assert partition_for("") == 0
    assert partition_for("a") == 97 % 50
    assert partition_for("hello") == 99162322 % 50
    assert partition_for("polygenelubricants") == 0
    assert partition_for("polygenelubricants", 7) == 0
    assert partition_for("abc", 1) == 0


def test_partition_for_refuses_no_partitions():
    with pytest.raises(ValueError):
        partition_for("a", 0)
