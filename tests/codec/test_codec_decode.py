"""decode_record on bytes laid out by hand, field by field, from Kafka's schema files.

Deliberately independent of offsets_platform.codec.encode: every record here is built with
struct.pack following OffsetCommitKey/Value.json, GroupMetadataKey/Value.json,
ConsumerProtocolSubscription/Assignment.json and the ConsumerGroup*Key/Value.json files.
"""

import struct
import uuid

import pyarrow as pa
import pytest

from offsets_platform.codec import RECORD_TYPES, DecodeError, decode_batch, decode_record

pytestmark = pytest.mark.fast  # make test-fast


# -- wire helpers (non-flexible: int16 string / int32 bytes and arrays; flexible: compact) --

def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def s(text):
    if text is None:
        return i16(-1)
    data = text.encode()
    return i16(len(data)) + data


def b(data):
    return i32(-1) if data is None else i32(len(data)) + data


def arr(items):
    return i32(len(items)) + b"".join(items)


def uv(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def cs(text):
    if text is None:
        return uv(0)
    data = text.encode()
    return uv(len(data) + 1) + data


def cb(data):
    return uv(0) if data is None else uv(len(data) + 1) + data


def carr(items):
    return uv(len(items) + 1) + b"".join(items)


def tags(fields=None):
    fields = fields or {}
    return uv(len(fields)) + b"".join(uv(t) + uv(len(d)) + d for t, d in sorted(fields.items()))


TOPIC_A = uuid.UUID("0b9c9d7e-6c0e-4a59-9f0e-1c2d3e4f5a6b")
TOPIC_B = uuid.UUID("ffffffff-0000-4000-8000-000000000001")


# -- offset commits ------------------------------------------------------------------------------

def oc_key(kv=1, group="g1", topic="orders", partition=7):
    return i16(kv) + s(group) + s(topic) + i32(partition)


@pytest.mark.parametrize("key_version", [0, 1])
def test_offset_commit_key_types_0_and_1(key_version):
    rec = decode_record(oc_key(key_version), i16(0) + i64(42) + s("") + i64(1_700_000_000_000))
    assert rec["record_type"] == "offset_commit"
    assert rec["key_version"] == key_version
    assert (rec["group"], rec["topic"], rec["partition"]) == ("g1", "orders", 7)


@pytest.mark.parametrize("value_version", [1, 2, 3])
def test_a_legacy_key_takes_value_version_0_only_as_kafka_reads_it(value_version):
    # Kafka 4.3 reads key type 0 with LegacyOffsetCommitValue (validVersions "0") and fails the
    # partition's load on any other version; key type 1 takes versions 0-4.
    value = i16(value_version) + i64(42) + (i32(5) if value_version == 3 else b"") + s("") + i64(1_700_000_000_000)
    value += i64(1_800_000_000_000) if value_version == 1 else b""
    assert decode_record(oc_key(1), value)["value_version"] == value_version
    with pytest.raises(DecodeError, match="outside the versions 0-0"):
        decode_record(oc_key(0), value)
    batch = decode_batch(pa.array([oc_key(1), oc_key(0)], pa.binary()), pa.array([value, value], pa.binary()))
    assert batch.offset_commits.column("row").to_pylist() == [0]
    assert batch.rejected.column("row").to_pylist() == [1]


def test_offset_commit_value_v0():
    rec = decode_record(oc_key(0), i16(0) + i64(100) + s("meta") + i64(1234))
    assert rec["value_version"] == 0 and not rec["tombstone"]
    assert (rec["offset"], rec["metadata"], rec["commit_timestamp"]) == (100, "meta", 1234)
    assert rec["leader_epoch"] is None and rec["expire_timestamp"] is None


def test_offset_commit_value_v1_has_expire_timestamp():
    rec = decode_record(oc_key(), i16(1) + i64(5) + s("") + i64(1000) + i64(2000))
    assert (rec["offset"], rec["commit_timestamp"], rec["expire_timestamp"]) == (5, 1000, 2000)
    rec = decode_record(oc_key(), i16(1) + i64(5) + s("") + i64(1000) + i64(-1))
    assert rec["expire_timestamp"] is None


def test_offset_commit_value_v2_is_laid_out_like_v0():
    rec = decode_record(oc_key(), i16(2) + i64(-1) + s("x") + i64(99))
    assert (rec["value_version"], rec["offset"], rec["metadata"], rec["commit_timestamp"]) == (2, -1, "x", 99)
    assert rec["expire_timestamp"] is None and rec["leader_epoch"] is None


def test_offset_commit_value_v3_leader_epoch():
    rec = decode_record(oc_key(), i16(3) + i64(7) + i32(12) + s("m") + i64(55))
    assert (rec["offset"], rec["leader_epoch"], rec["metadata"], rec["commit_timestamp"]) == (7, 12, "m", 55)
    rec = decode_record(oc_key(), i16(3) + i64(7) + i32(-1) + s("") + i64(55))
    assert rec["leader_epoch"] is None


def test_offset_commit_value_v4_compact_with_tagged_fields():
    value = i16(4) + i64(8) + i32(3) + cs("hello") + i64(77) + tags({0: b"\x01\x02", 5: b"xyz"})
    rec = decode_record(oc_key(), value)
    assert (rec["value_version"], rec["offset"], rec["leader_epoch"], rec["metadata"], rec["commit_timestamp"]) == (
        4, 8, 3, "hello", 77)
    rec = decode_record(oc_key(), i16(4) + i64(8) + i32(-1) + cs(None) + i64(77) + tags())
    assert rec["metadata"] is None and rec["leader_epoch"] is None


def test_null_metadata_is_none_and_empty_metadata_is_empty_string():
    assert decode_record(oc_key(), i16(3) + i64(1) + i32(0) + s(None) + i64(1))["metadata"] is None
    assert decode_record(oc_key(), i16(3) + i64(1) + i32(0) + s("") + i64(1))["metadata"] == ""


def test_offset_commit_tombstone_keeps_key_fields():
    rec = decode_record(oc_key(group="grp", topic="t", partition=3), None)
    assert rec["tombstone"] is True and rec["value_version"] is None
    assert (rec["group"], rec["topic"], rec["partition"]) == ("grp", "t", 3)
    for field in ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp"):
        assert rec[field] is None


def test_unicode_strings():
    rec = decode_record(oc_key(group="grüppe-✓", topic="тема"), i16(0) + i64(1) + s("日本") + i64(2))
    assert (rec["group"], rec["topic"], rec["metadata"]) == ("grüppe-✓", "тема", "日本")


# -- consumer protocol payloads ------------------------------------------------------------------

def subscription(version, topics=("a", "b"), user_data=None, owned=(("a", (0, 1)),), generation=4, rack="r1"):
    out = i16(version) + arr([s(t) for t in topics]) + b(user_data)
    if version >= 1:
        out += arr([s(t) + arr([i32(p) for p in ps]) for t, ps in owned])
    if version >= 2:
        out += i32(generation)
    if version >= 3:
        out += s(rack)
    return out


def assignment(version, parts=(("a", (0, 1)), ("b", (2,))), user_data=None):
    return i16(version) + arr([s(t) + arr([i32(p) for p in ps]) for t, ps in parts]) + b(user_data)


def member_v(version, member_id="m-1", instance=None, client_id="cid", host="/10.0.0.1",
             rebalance=300_000, session=45_000, sub=b"", asg=b""):
    if version >= 4:
        out = cs(member_id) + cs(instance) + cs(client_id) + cs(host)
        return out + i32(rebalance) + i32(session) + cb(sub) + cb(asg) + tags()
    out = s(member_id) + (s(instance) if version >= 3 else b"") + s(client_id) + s(host)
    out += i32(rebalance) if version >= 1 else b""
    return out + i32(session) + b(sub) + b(asg)


def group_value(version, protocol_type="consumer", generation=5, protocol="range", leader="m-1",
                timestamp=1_700_000_000_123, members=(), extra_tags=None):
    if version >= 4:
        out = i16(4) + cs(protocol_type) + i32(generation) + cs(protocol) + cs(leader) + i64(timestamp)
        return out + carr(list(members)) + tags(extra_tags)
    out = i16(version) + s(protocol_type) + i32(generation) + s(protocol) + s(leader)
    out += i64(timestamp) if version >= 2 else b""
    return out + arr(list(members))


GROUP_KEY = i16(2) + s("payments")


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_versions(version):
    sub, asg = subscription(1), assignment(1)
    value = group_value(version, members=[member_v(version, instance="static-1", sub=sub, asg=asg)])
    rec = decode_record(GROUP_KEY, value)
    assert rec["record_type"] == "group_metadata" and rec["key_version"] == 2 and rec["group"] == "payments"
    assert (rec["value_version"], rec["protocol_type"], rec["generation"], rec["protocol"], rec["leader"]) == (
        version, "consumer", 5, "range", "m-1")
    assert rec["current_state_timestamp"] == (1_700_000_000_123 if version >= 2 else None)
    (member,) = rec["members"]
    assert member["member_id"] == "m-1" and member["client_id"] == "cid" and member["client_host"] == "/10.0.0.1"
    assert member["group_instance_id"] == ("static-1" if version >= 3 else None)
    assert member["rebalance_timeout"] == (300_000 if version >= 1 else None)
    assert member["session_timeout"] == 45_000
    assert member["subscription_bytes"] == sub and member["assignment_bytes"] == asg
    assert member["subscription"]["topics"] == ["a", "b"]
    assert member["assignment"] == {"version": 1, "partitions": {"a": [0, 1], "b": [2]}, "user_data": None}


def test_group_metadata_v4_skips_tagged_fields():
    value = group_value(4, members=[member_v(4, sub=subscription(0), asg=b"")], extra_tags={3: b"abc"})
    rec = decode_record(GROUP_KEY, value)
    assert rec["members"][0]["subscription"]["topics"] == ["a", "b"]


def test_group_metadata_empty_group_and_unknown_state_timestamp():
    rec = decode_record(GROUP_KEY, group_value(3, protocol=None, leader=None, timestamp=-1, members=[]))
    assert rec["members"] == [] and rec["protocol"] is None and rec["leader"] is None
    assert rec["current_state_timestamp"] is None and rec["protocol_type"] == "consumer"


def test_group_metadata_null_strings_are_none_not_empty():
    rec = decode_record(GROUP_KEY, group_value(2, protocol_type="", protocol=None, leader="", members=[]))
    assert rec["protocol_type"] == "" and rec["protocol"] is None and rec["leader"] == ""


def test_group_metadata_tombstone():
    rec = decode_record(GROUP_KEY, None)
    assert rec["tombstone"] is True and rec["value_version"] is None and rec["group"] == "payments"
    assert rec["members"] is None and rec["protocol_type"] is None


def test_connect_group_keeps_payloads_opaque():
    payload = b"\x00\x01connect-specific"
    rec = decode_record(GROUP_KEY, group_value(3, protocol_type="connect", protocol="sessioned",
                                               members=[member_v(3, sub=payload, asg=b"\xff")]))
    member = rec["members"][0]
    assert member["subscription"] is None and member["assignment"] is None
    assert member["subscription_bytes"] == payload and member["assignment_bytes"] == b"\xff"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions(version):
    sub = subscription(version, topics=("t1", "t2", "t3"), user_data=b"\x00\x07", owned=(("t1", (3, 4)),),
                       generation=9, rack="eu-1a")
    rec = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=sub)]))
    got = rec["members"][0]["subscription"]
    assert got["version"] == version and got["topics"] == ["t1", "t2", "t3"] and got["user_data"] == b"\x00\x07"
    assert got["owned_partitions"] == ([{"topic": "t1", "partitions": [3, 4]}] if version >= 1 else None)
    assert got["generation_id"] == (9 if version >= 2 else None)
    assert got["rack_id"] == ("eu-1a" if version >= 3 else None)


def test_subscription_null_rack_and_user_data():
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=subscription(3, rack=None))]))
    sub = got["members"][0]["subscription"]
    assert sub["rack_id"] is None and sub["user_data"] is None and sub["generation_id"] == 4


def test_subscription_extra_trailing_bytes_are_ignored():
    sub = subscription(3) + b"future fields"
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=sub)]))["members"][0]["subscription"]
    assert got["topics"] == ["a", "b"] and got["rack_id"] == "r1"


def test_subscription_truncated_after_v0_prefix():
    sub = i16(3) + arr([s("only")]) + b(None)  # claims v3, stops after the v0 fields
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=sub)]))["members"][0]["subscription"]
    assert got == {"version": 3, "topics": ["only"], "user_data": None, "owned_partitions": None,
                   "generation_id": None, "rack_id": None}


def test_subscription_newer_version_is_read_with_the_newest_known_layout():
    sub = subscription(3)[2:]
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=i16(7) + sub + b"\x00")]))
    assert got["members"][0]["subscription"]["version"] == 7
    assert got["members"][0]["subscription"]["rack_id"] == "r1"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_versions(version):
    asg = assignment(version, parts=(("x", (5,)), ("y", ())), user_data=b"ud")
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=subscription(0), asg=asg)]))
    assert got["members"][0]["assignment"] == {"version": version, "partitions": {"x": [5], "y": []},
                                               "user_data": b"ud"}


def test_empty_assignment_is_none():
    got = decode_record(GROUP_KEY, group_value(3, members=[member_v(3, sub=subscription(0), asg=b"")]))
    assert got["members"][0]["assignment"] is None and got["members"][0]["assignment_bytes"] == b""


def test_several_members_keep_their_order():
    members = [member_v(1, member_id=f"m{i}", sub=subscription(0, topics=(f"t{i}",))) for i in range(3)]
    rec = decode_record(GROUP_KEY, group_value(1, members=members))
    assert [m["member_id"] for m in rec["members"]] == ["m0", "m1", "m2"]
    assert [m["subscription"]["topics"] for m in rec["members"]] == [["t0"], ["t1"], ["t2"]]


# -- KIP-848 records -----------------------------------------------------------------------------

def test_consumer_group_metadata_type_3():
    key = i16(3) + s("cg")
    rec = decode_record(key, i16(0) + i32(12) + tags())
    assert rec["record_type"] == "consumer_group_metadata" and rec["group"] == "cg" and "member_id" not in rec
    assert (rec["value_version"], rec["epoch"], rec["metadata_hash"]) == (0, 12, 0)
    # MetadataHash (tag 0) is the schema's only tag; others, as a newer broker might add, are skipped
    rec = decode_record(key, i16(0) + i32(13) + tags({0: i64(-99), 1: i64(1_700_000_000_000), 9: b"?"}))
    assert (rec["epoch"], rec["metadata_hash"]) == (13, -99) and "creation_time_ms" not in rec


def test_consumer_group_partition_metadata_type_4():
    topic = (TOPIC_A.bytes + cs("orders") + i32(3)
             + carr([i32(0) + carr([cs("rack-a"), cs("rack-b")]) + tags(), i32(1) + carr([]) + tags()]) + tags())
    rec = decode_record(i16(4) + s("cg"), i16(0) + carr([topic]) + tags())
    assert rec["record_type"] == "consumer_group_partition_metadata"
    assert rec["topics"] == [{"topic_id": str(TOPIC_A), "topic_name": "orders", "num_partitions": 3,
                              "partition_metadata": [{"partition": 0, "racks": ["rack-a", "rack-b"]},
                                                     {"partition": 1, "racks": []}]}]


def member_metadata(classic=None, extra=None):
    fields = dict(extra or {})
    if classic is not None:
        fields[0] = classic
    return (i16(0) + cs("inst-1") + cs(None) + cs("client") + cs("/1.2.3.4") + carr([cs("orders"), cs("refunds")])
            + cs("^pay.*") + i32(45_000) + cs("uniform") + tags(fields))


def test_consumer_group_member_metadata_type_5():
    rec = decode_record(i16(5) + s("cg") + s("member-9"), member_metadata(extra={7: b"later"}))
    assert rec["record_type"] == "consumer_group_member_metadata" and rec["member_id"] == "member-9"
    assert rec["instance_id"] == "inst-1" and rec["rack_id"] is None
    assert (rec["client_id"], rec["client_host"]) == ("client", "/1.2.3.4")
    assert rec["subscribed_topic_names"] == ["orders", "refunds"] and rec["subscribed_topic_regex"] == "^pay.*"
    assert rec["rebalance_timeout_ms"] == 45_000 and rec["server_assignor"] == "uniform"
    assert rec["classic_member_metadata"] is None


def test_consumer_group_member_metadata_with_classic_member_metadata():
    # Tagged nullable struct: varint 1 (present), SessionTimeoutMs, SupportedProtocols, tags.
    classic = uv(1) + i32(10_000) + carr([cs("range") + cb(b"\x00\x01") + tags()]) + tags()
    rec = decode_record(i16(5) + s("cg") + s("m"), member_metadata(classic=classic))
    assert rec["classic_member_metadata"] == {
        "session_timeout_ms": 10_000, "supported_protocols": [{"name": "range", "metadata": b"\x00\x01"}]}


def test_consumer_group_target_assignment_metadata_type_6():
    rec = decode_record(i16(6) + s("cg"), i16(0) + i32(41) + tags())
    assert rec["record_type"] == "consumer_group_target_assignment_metadata" and rec["assignment_epoch"] == 41


def topic_partitions(*entries):
    return carr([u.bytes + carr([i32(p) for p in ps]) + tags() for u, ps in entries])


def test_consumer_group_target_assignment_member_type_7():
    value = i16(0) + topic_partitions((TOPIC_A, [0, 2]), (TOPIC_B, [])) + tags()
    rec = decode_record(i16(7) + s("cg") + s("m1"), value)
    assert rec["record_type"] == "consumer_group_target_assignment_member" and rec["member_id"] == "m1"
    assert rec["topic_partitions"] == [{"topic_id": str(TOPIC_A), "partitions": [0, 2]},
                                       {"topic_id": str(TOPIC_B), "partitions": []}]


def test_consumer_group_current_member_assignment_type_8():
    # Kafka 4.3 adds the tagged, nullable AssignmentEpochs (tag 0) to each TopicPartitions struct.
    epochs = tags({0: carr([i32(7), i32(8)])})
    value = (i16(0) + i32(10) + i32(9) + i8(2) + topic_partitions((TOPIC_A, [1]))
             + carr([TOPIC_B.bytes + carr([i32(4), i32(5)]) + epochs]) + tags())
    rec = decode_record(i16(8) + s("cg") + s("m2"), value)
    assert rec["record_type"] == "consumer_group_current_member_assignment"
    assert (rec["member_epoch"], rec["previous_member_epoch"], rec["state"]) == (10, 9, 2)
    assert rec["assigned_partitions"] == [{"topic_id": str(TOPIC_A), "partitions": [1], "assignment_epochs": None}]
    assert rec["partitions_pending_revocation"] == [
        {"topic_id": str(TOPIC_B), "partitions": [4, 5], "assignment_epochs": [7, 8]}]


def test_consumer_group_target_assignment_metadata_timestamp_tag():
    rec = decode_record(i16(6) + s("cg"), i16(0) + i32(4) + tags({0: i64(1_700_000_000_123)}))
    assert (rec["assignment_epoch"], rec["assignment_timestamp"]) == (4, 1_700_000_000_123)
    assert decode_record(i16(6) + s("cg"), i16(0) + i32(4) + tags())["assignment_timestamp"] == 0


@pytest.mark.parametrize("key_type,has_member", [(3, False), (4, False), (5, True), (6, False), (7, True), (8, True)])
def test_kip848_tombstones(key_type, has_member):
    key = i16(key_type) + s("cg") + (s("m") if has_member else b"")
    rec = decode_record(key, None)
    assert rec["record_type"] == RECORD_TYPES[key_type] and rec["tombstone"] is True
    assert rec["value_version"] is None and rec["group"] == "cg"
    assert rec.get("member_id") == ("m" if has_member else None)
    value_fields = set(rec) - {"record_type", "key_version", "group", "member_id", "tombstone", "value_version"}
    assert value_fields and all(rec[f] is None for f in value_fields)


# -- dispatch ------------------------------------------------------------------------------------

# Types Kafka 4.3 does not define: 9 (ShareGroupPartitionMetadata, Kafka 4.0 only), 18 (never
# released), 24+ and negatives.
@pytest.mark.parametrize("key_type", [9, 18, 24, 100, -1, 32767])
def test_unknown_key_types_are_reported_not_refused(key_type):
    rec = decode_record(i16(key_type) + b"whatever follows", b"\x00\x00value")
    assert rec == {"record_type": "unknown", "key_version": key_type, "group": None, "tombstone": False,
                   "value_version": None}
    assert decode_record(i16(key_type), None)["tombstone"] is True


def test_record_types_table():
    assert RECORD_TYPES == {
        0: "offset_commit", 1: "offset_commit", 2: "group_metadata", 3: "consumer_group_metadata",
        4: "consumer_group_partition_metadata", 5: "consumer_group_member_metadata",
        6: "consumer_group_target_assignment_metadata", 7: "consumer_group_target_assignment_member",
        8: "consumer_group_current_member_assignment", 10: "share_group_member_metadata",
        11: "share_group_metadata", 12: "share_group_target_assignment_metadata",
        13: "share_group_target_assignment_member", 14: "share_group_current_member_assignment",
        15: "share_group_state_partition_metadata", 16: "consumer_group_regular_expression",
        17: "streams_group_metadata", 19: "streams_group_member_metadata",
        20: "streams_group_target_assignment_metadata", 21: "streams_group_target_assignment_member",
        22: "streams_group_current_member_assignment", 23: "streams_group_topology"}


def test_accepts_bytearray_and_memoryview():
    value = i16(0) + i64(1) + s("") + i64(2)
    assert decode_record(bytearray(oc_key()), memoryview(value))["offset"] == 1
