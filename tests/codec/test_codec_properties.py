"""Property tests: whatever the bytes, decode_record answers or raises DecodeError, nothing else."""

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from offsets_platform.codec import DecodeError, decode_record
from offsets_platform.codec import encode as enc

pytestmark = pytest.mark.fast  # make test-fast


TOPIC_ID = "6f1e8f3c-9d2a-4b7e-8c5d-0a1b2c3d4e5f"


def valid_records() -> list[tuple[bytes, bytes | None]]:
    """One record of every type and version the codec reads."""
    sub = enc.consumer_subscription(["a", "b"], b"u", {"a": [0, 1]}, 3, "rack")
    asg = enc.consumer_assignment({"a": [0, 1]}, b"x")
    member = {"member_id": "m", "group_instance_id": "i", "client_id": "c", "client_host": "h",
              "rebalance_timeout": 1, "session_timeout": 2, "subscription": sub, "assignment": asg}
    oc_key = enc.offset_commit_key("group", "topic", 3)
    records = [(oc_key, enc.offset_commit_value(1, 2, "meta", 4, 5, v, tagged={1: b"t"} if v == 4 else None))
               for v in range(5)]
    records += [(enc.group_metadata_key("g"), enc.group_metadata_value(pt, 1, "range", "m", 9, [member, member], v))
                for v in range(5) for pt in ("consumer", "connect")]
    records += [
        (enc.consumer_group_metadata_key("cg"), enc.consumer_group_metadata_value(3, 77)),
        (enc.consumer_group_partition_metadata_key("cg"), enc.consumer_group_partition_metadata_value(
            [{"topic_id": TOPIC_ID, "topic_name": "t", "num_partitions": 2,
              "partition_metadata": [{"partition": 0, "racks": ["r1"]}]}])),
        (enc.consumer_group_member_metadata_key("cg", "m"), enc.consumer_group_member_metadata_value(
            "c", "h", ["t"], 5, "i", "r", "re", "uniform",
            {"session_timeout_ms": 1, "supported_protocols": [{"name": "range", "metadata": sub}]})),
        (enc.consumer_group_target_assignment_metadata_key("cg"),
         enc.consumer_group_target_assignment_metadata_value(4)),
        (enc.consumer_group_target_assignment_member_key("cg", "m"),
         enc.consumer_group_target_assignment_member_value({TOPIC_ID: [0, 1]})),
        (enc.consumer_group_current_member_assignment_key("cg", "m"),
         enc.consumer_group_current_member_assignment_value(2, 1, 0, {TOPIC_ID: [0]}, {TOPIC_ID: [1]})),
    ]
    return records


VALID = valid_records()


def decodes_or_refuses(key, value):
    try:
        result = decode_record(key, value)
    except DecodeError as exc:
        assert str(exc)
        return None
    assert isinstance(result, dict) and "record_type" in result
    return result


def test_every_valid_record_decodes():
    for key, value in VALID:
        assert decodes_or_refuses(key, value) is not None


@settings(max_examples=400, deadline=None)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_random_bytes(key, value):
    decodes_or_refuses(key, value)


@settings(max_examples=400, deadline=None)
@given(key_type=st.integers(0, 8), key_rest=st.binary(max_size=30), version=st.integers(-1, 5),
       value_rest=st.binary(max_size=120))
def test_random_bytes_behind_a_plausible_header(key_type, key_rest, version, value_rest):
    decodes_or_refuses(struct.pack(">h", key_type) + key_rest, struct.pack(">h", version) + value_rest)


@st.composite
def mutated(draw):
    key, value = draw(st.sampled_from(VALID))
    target = draw(st.sampled_from(["key", "value"]))
    data = bytearray(key if target == "key" else value)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "huge", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "truncate":
            del data[at:]
        elif op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "huge":
            data[at:at + 4] = draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x80\x00", b"\xff"]))
        elif op == "delete" and data:
            del data[at]
    return (bytes(data), value) if target == "key" else (key, bytes(data))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=mutated())
def test_mutations_and_truncations_of_valid_records(record):
    decodes_or_refuses(*record)


def test_every_truncation_of_every_valid_record_is_refused_or_decoded():
    for key, value in VALID:
        for cut in range(len(key)):
            decodes_or_refuses(key[:cut], value)
        for cut in range(len(value)):
            decodes_or_refuses(key, value[:cut])
