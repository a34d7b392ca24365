"""Malformed records raise DecodeError naming the field where decoding failed."""

import struct
import time

import pytest

from offsets_platform.codec import DecodeError, decode_record
from offsets_platform.codec import encode as enc

pytestmark = pytest.mark.fast  # make test-fast


KEY = enc.offset_commit_key("g", "t", 0)
V3 = enc.offset_commit_value(10, 1_700_000_000_000, "", 2, version=3)  # 24 bytes
SUB = enc.consumer_subscription(["a"], version=0)
GROUP_KEY = enc.group_metadata_key("grp")


def member(**overrides):
    fields = dict(member_id="m", group_instance_id=None, client_id="c", client_host="h",
                  rebalance_timeout=1, session_timeout=2, subscription=SUB, assignment=b"")
    return {**fields, **overrides}


def raises(key, value, *fragments):
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    return str(info.value)


def test_exact_message_for_a_truncated_commit_timestamp():
    message = raises(KEY, V3[:19])
    assert message == "offset commit value v3: field 'commit_timestamp' needs 8 bytes at position 16, only 3 left"


@pytest.mark.parametrize("cut,field", [(0, "version"), (1, "version"), (2, "offset"), (9, "offset"),
                                       (10, "leader_epoch"), (14, "metadata"), (15, "metadata"),
                                       (16, "commit_timestamp"), (23, "commit_timestamp")])
def test_truncated_offset_commit_value(cut, field):
    raises(KEY, V3[:cut], f"field '{field}'")


def test_truncated_v1_expire_timestamp():
    value = enc.offset_commit_value(1, 2, "x", expire_timestamp=3, version=1)
    raises(KEY, value[:-1], "offset commit value v1", "'expire_timestamp'")


def test_metadata_length_past_the_end():
    value = struct.pack(">hqih", 3, 1, 0, 500) + b"short"
    raises(KEY, value, "'metadata' needs 500 bytes at position 16")


@pytest.mark.parametrize("key", [b"", b"\x00"])
def test_key_too_short_for_a_type(key):
    raises(key, V3, "record key", "'key_type'")


def test_null_key():
    raises(None, V3, "'key_type'", "null")


@pytest.mark.parametrize("cut,field", [(2, "group"), (4, "group"), (5, "topic"), (8, "partition"), (11, "partition")])
def test_truncated_offset_commit_key(cut, field):
    raises(KEY[:cut], V3, "offset commit key v1", f"'{field}'")


def test_key_with_trailing_bytes():
    raises(KEY + b"\x00", V3, "'partition' is followed by 1 unexpected bytes")


def test_group_key_truncated():
    raises(GROUP_KEY[:-1], None, "group metadata key v2", "'group'")


@pytest.mark.parametrize("version", [5, 6, -1, 32767])
def test_offset_commit_value_version_out_of_range(version):
    raises(KEY, struct.pack(">h", version) + V3[2:], "offset commit value", "'version'", str(version), "0-4")


def test_group_metadata_value_version_out_of_range():
    raises(GROUP_KEY, struct.pack(">h", 5) + b"\x00" * 30, "group metadata value", "'version'", "0-4")


def test_kip848_value_version_out_of_range():
    key = enc.consumer_group_metadata_key("cg")
    raises(key, struct.pack(">hi", 1, 5) + b"\x00", "consumer group metadata value", "'version'", "0-0")


def test_trailing_bytes_after_a_value():
    raises(KEY, V3 + b"\x00\x00", "offset commit value v3", "2 unexpected bytes")


def test_invalid_utf8():
    bad_group = struct.pack(">hh", 1, 2) + b"\xff\xfe" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 0)
    raises(bad_group, V3, "'group' is not valid UTF-8")
    bad_meta = struct.pack(">hqih", 3, 1, 0, 2) + b"\xc3\x28" + struct.pack(">q", 5)
    raises(KEY, bad_meta, "'metadata' is not valid UTF-8")


def test_negative_lengths_other_than_minus_one():
    raises(KEY, struct.pack(">hqh", 0, 1, -2) + b"\x00" * 8, "'metadata' has invalid length -2")
    value = enc.group_metadata_value("consumer", 1, "range", "m", 5, [member()], version=2)
    at = 2 + (2 + 8) + 4 + (2 + 5) + (2 + 1) + 8  # version, protocol_type .. timestamp: then members
    raises(GROUP_KEY, value[:at] + struct.pack(">i", -3) + value[at + 4:], "'members' has invalid length -3")


def test_null_member_array_is_refused():
    value = enc.group_metadata_value("consumer", 1, None, None, -1, [], version=2)
    raises(GROUP_KEY, value[:-4] + struct.pack(">i", -1), "'members' is null")


def test_huge_lengths_fail_fast_without_allocating():
    start = time.perf_counter()
    raises(KEY, struct.pack(">hqh", 0, 1, 0x7FFF) + b"x", "'metadata' needs 32767 bytes")
    header = struct.pack(">h", 1) + struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 1) + b"\xff\xff\xff\xff"
    raises(GROUP_KEY, header + struct.pack(">i", 0x7FFFFFFF), "'members' declares 2147483647 elements")
    # Flexible: a compact length near 2**32 in a v4 group value.
    flexible = struct.pack(">h", 4) + b"\xff\xff\xff\xff\x0f" + b"x"
    raises(GROUP_KEY, flexible, "'protocol_type'")
    assert time.perf_counter() - start < 1


def test_varint_longer_than_five_bytes():
    value = struct.pack(">hqi", 4, 1, 0) + b"\x80\x80\x80\x80\x80\x01"
    raises(KEY, value, "offset commit value v4", "'metadata'", "longer than 5 bytes")


def test_truncated_tagged_field():
    value = enc.offset_commit_value(1, 2, "", version=4, tagged={3: b"abcdef"})
    raises(KEY, value[:-2], "'tagged_fields[3]' needs 6 bytes")


# Kafka loads a group record whatever its members' payloads hold (opaque bytes); a subscription
# that does not parse leaves the group's subscriptions unknown. So the record decodes, and the
# member says why its payload did not.
def test_subscription_whose_v0_prefix_cannot_be_read_keeps_the_record_and_names_the_member_field():
    bad = b"\x00\x00\x00\x00\x00\x05ab"
    value = enc.group_metadata_value("consumer", 1, "range", "m", 5, [member(), member(subscription=bad)], version=3)
    record = decode_record(GROUP_KEY, value)
    good, unreadable = record["members"]
    assert good["subscription"] is not None and good["subscription_error"] is None
    assert unreadable["subscription"] is None and unreadable["subscription_bytes"] == bad
    assert "group metadata value v3" in unreadable["subscription_error"]
    assert "'members[1].subscription.topics" in unreadable["subscription_error"]


@pytest.mark.parametrize("payload,field", [(b"", "members[0].subscription.version"),
                                           (b"\x00", "members[0].subscription.version"),
                                           (b"\xff\xff\x00\x00\x00\x00", "members[0].subscription.version"),
                                           (b"\x00\x01\x00\x00\x00\x00", "members[0].subscription.user_data")])
def test_unreadable_subscription_prefix(payload, field):
    value = enc.group_metadata_value("consumer", 1, "range", "m", 5, [member(subscription=payload)], version=3)
    (kept,) = decode_record(GROUP_KEY, value)["members"]
    assert kept["subscription"] is None and f"'{field}" in kept["subscription_error"]


def test_malformed_assignment_keeps_the_record_and_names_its_field():
    # Kafka never parses an assignment to load a group (the group coordinator keeps it as bytes)
    value = enc.group_metadata_value("consumer", 1, "range", "m", 5,
                                     [member(assignment=b"\x00\x01\x00\x00\x00\x09")], version=3)
    (kept,) = decode_record(GROUP_KEY, value)["members"]
    assert kept["subscription"] is not None and kept["assignment"] is None
    assert "'members[0].assignment.assigned_partitions" in kept["assignment_error"]


def test_opaque_payloads_are_not_parsed_for_other_protocol_types():
    value = enc.group_metadata_value("connect", 1, "x", "m", 5, [member(subscription=b"\x01", assignment=b"\x02")])
    assert decode_record(GROUP_KEY, value)["members"][0]["subscription_bytes"] == b"\x01"


def test_kip848_truncations_name_nested_fields():
    key = enc.consumer_group_current_member_assignment_key("cg", "m")
    topic = "00000000-0000-0000-0000-000000000001"
    value = enc.consumer_group_current_member_assignment_value(1, 0, 0, {topic: [1, 2]})
    raises(key, value[:33], "consumer group current member assignment value v0", "'assigned_partitions[0].partitions")
    key5 = enc.consumer_group_member_metadata_key("cg", "m")
    value5 = enc.consumer_group_member_metadata_value(
        "c", "h", ["t"], classic_member_metadata={"session_timeout_ms": 1, "supported_protocols": []})
    raises(key5, value5[:-3], "field 'classic_member_metadata' needs 7 bytes")
    inner = value5[:value5.index(b"\x01\x00\x07")] + b"\x01\x00\x02\x01\x00"  # tag 0, size 2: cut struct
    raises(key5, inner, "field 'classic_member_metadata.session_timeout_ms' needs 4 bytes")


def test_key_of_wrong_type_is_a_type_error():
    with pytest.raises(TypeError):
        decode_record("not bytes", None)
