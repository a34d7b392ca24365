"""decode_batch gives the scalar decoder's answer for every row, at ingest speed."""

import json
import random
import struct
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_platform.codec import DecodeError, decode_batch, decode_record
from offsets_platform.codec import encode as enc
from offsets_platform.codec.batch import unsupported_reason, value_json
from offsets_platform.codec.schemas import (CONSUMER_GROUP_RECORD_SCHEMA, GROUP_MEMBER_SCHEMA,
                                            GROUP_METADATA_SCHEMA, OFFSET_COMMIT_SCHEMA, REJECTED_SCHEMA)

pytestmark = pytest.mark.fast  # make test-fast


TOPIC_ID = "00000000-0000-4000-8000-00000000000a"
TIMESTAMPS = {"commit_timestamp", "expire_timestamp", "current_state_timestamp"}


def _rows(table: pa.Table) -> list[dict]:
    """Rows as dicts, timestamps as epoch-ms ints (any int64 fits, unlike datetime)."""
    return table.cast(pa.schema([pa.field(f.name, pa.int64()) if f.name in TIMESTAMPS else f
                                 for f in table.schema])).to_pylist()


def _expected_member(member: dict) -> dict:
    sub, asg = member["subscription"] or {}, member["assignment"] or {}
    partitions = asg.get("partitions")
    return {
        **{f: member[f] for f in ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout",
                                  "session_timeout", "subscription_bytes", "assignment_bytes")},
        "subscription_version": sub.get("version"), "subscribed_topics": sub.get("topics"),
        "subscription_user_data": sub.get("user_data"), "owned_partitions": sub.get("owned_partitions"),
        "subscription_generation_id": sub.get("generation_id"), "rack_id": sub.get("rack_id"),
        "assignment_version": asg.get("version"), "assignment_user_data": asg.get("user_data"),
        "assigned_partitions": None if partitions is None else [{"topic": t, "partitions": p}
                                                               for t, p in partitions.items()],
    }


def assert_matches_scalar(keys: list, values: list) -> None:
    """decode_batch must put every row in exactly one table, with decode_record's answer."""
    batch = decode_batch(pa.array(keys, pa.binary()), pa.array(values, pa.binary()))
    assert batch.offset_commits.schema == OFFSET_COMMIT_SCHEMA
    assert batch.group_metadata.schema == GROUP_METADATA_SCHEMA
    assert batch.group_members.schema == GROUP_MEMBER_SCHEMA
    assert batch.consumer_group_records.schema == CONSUMER_GROUP_RECORD_SCHEMA
    assert batch.rejected.schema == REJECTED_SCHEMA
    placed = {}
    for name in ("offset_commits", "group_metadata", "consumer_group_records", "rejected"):
        rows = _rows(getattr(batch, name))
        assert [r["row"] for r in rows] == sorted(r["row"] for r in rows), name
        for row in rows:
            assert row["row"] not in placed, row
            placed[row["row"]] = (name, row)
    assert sorted(placed) == list(range(len(keys)))
    members = {}
    for member in batch.group_members.to_pylist():
        members.setdefault(member["row"], []).append(member)

    for i, (key, value) in enumerate(zip(keys, values)):
        table, got = placed[i]
        try:
            want = decode_record(key, value)
        except DecodeError as exc:
            assert (table, got["reason"]) == ("rejected", str(exc)), i
            continue
        if want["record_type"] == "unknown":
            assert (table, got["key_version"], got["reason"]) == (
                "rejected", want["key_version"], unsupported_reason(want["key_version"]))
            continue
        expected_table = {"offset_commit": "offset_commits", "group_metadata": "group_metadata"}.get(
            want["record_type"], "consumer_group_records")
        assert table == expected_table, (i, table, want)
        for field, cell in got.items():
            if field in want:
                assert cell == want[field], (i, field)
        if table == "group_metadata":
            assert got["member_count"] == (None if want["tombstone"] else len(want["members"]))
            got_members = members.pop(i, [])
            assert [m["member_index"] for m in got_members] == list(range(len(want["members"] or [])))
            for got_member, want_member in zip(got_members, want["members"] or []):
                assert got_member["group"] == want["group"]
                assert {k: got_member[k] for k in _expected_member(want_member)} == _expected_member(want_member)
        if table == "consumer_group_records":
            assert got["value_json"] == value_json(want)
            # a topology's Epoch is the topology's, not the group's
            group_epoch = None if want["record_type"] == "streams_group_topology" else want.get("epoch")
            assert got["group_epoch"] == group_epoch and got["member_state"] == want.get("state")
    assert not members, "members of rows that are not group metadata"


def _member(member_id, topics, assigned, version=3, **extra):
    return {"member_id": member_id, "group_instance_id": extra.get("instance"), "client_id": "client",
            "client_host": "/10.0.0.1", "rebalance_timeout": 300_000, "session_timeout": 45_000,
            "subscription": extra.get("subscription", enc.consumer_subscription(
                topics, extra.get("user_data"), {topics[0]: [0]} if topics else None, 7, extra.get("rack"), version)),
            "assignment": extra.get("assignment", enc.consumer_assignment(assigned, b"ud" if assigned else None))}


def mixed_records() -> list[tuple]:
    """Every edge case the fast paths must agree with the scalar decoder on."""
    oc = enc.offset_commit_key
    ocv = enc.offset_commit_value
    gk = enc.group_metadata_key("grp")
    gv = enc.group_metadata_value
    m1, m2 = _member("m1", ["a", "b"], {"a": [0, 1]}), _member("m2", ["b"], {"b": [0]}, rack="r1")
    records = [
        (oc("g", "t", 0), ocv(10, 1000, "", 3, version=3)),
        (oc("g", "t", 0), ocv(11, 1001, None, -1, version=3)),          # null metadata, no leader epoch
        (oc("g", "t", 1, key_version=0), ocv(12, 1002, "meta", version=0)),
        (oc("g", "t", 2), ocv(13, 1003, "x" * 40, expire_timestamp=5000, version=1)),
        (oc("g", "t", 2), ocv(13, 1003, "", expire_timestamp=-1, version=1)),
        (oc("g", "t", 3), ocv(14, 1004, "ünï", version=2)),
        (oc("g", "t", 4), ocv(15, 1005, "v4", 2, version=4, tagged={0: b"zz"})),
        (oc("g", "t", 5), None),                                          # tombstone
        (oc("g2", "t", 0), ocv(-1, -1, "", version=3)),
        (oc("g", "t", 0), ocv(1, 2, "", version=3)[:-1]),                # truncated
        (oc("g", "t", 0), ocv(1, 2, "", version=3) + b"\x00"),           # trailing bytes
        (oc("g", "t", 0), struct.pack(">h", 9) + ocv(1, 2, version=3)[2:]),  # unknown version
        (oc("g", "t", 0), struct.pack(">hqih", 3, 1, 0, 2) + b"\xff\xfe" + struct.pack(">q", 5)),  # bad UTF-8
        (oc("g", "t", 0), struct.pack(">hqih", 3, 1, 0, 3) + b"\xed\xa0\x80" + struct.pack(">q", 5)),  # surrogate
        (oc("g", "t", 0), struct.pack(">hqih", 3, 1, 0, -5) + struct.pack(">q", 5)),  # negative length
        (oc("g", "t", 0), b"\x00"),
        (oc("g", "t", 0), b""),
        (oc("g", "t", 0)[:-1], ocv(1, 2, version=3)),                    # key too short
        (oc("g", "t", 0) + b"\x01", ocv(1, 2, version=3)),               # key with trailing bytes
        (b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x00", ocv(1, 2, version=3)),  # key not UTF-8
        (b"\x00", ocv(1, 2)),
        (b"", None),
        (None, ocv(1, 2)),
        (struct.pack(">h", 9) + b"share", b"\x00\x00"),                  # unknown record types
        (struct.pack(">h", 17), None),
        (struct.pack(">h", -3), b""),
        (gk, gv("consumer", 5, "range", "m1", 1000, [m1, m2], 3)),
        (gk, gv("consumer", 6, "range", "m1", -1, [m1], 2)),
        (gk, gv("consumer", 7, "range", "m1", 1000, [_member("m", ["a"], {"a": [1]}, version=0)], 1)),
        (gk, gv("consumer", 8, "range", "m1", 1000, [_member("m", ["a"], {}, version=1)], 0)),
        (gk, gv("consumer", 9, "range", "m1", 1000, [m1, m2], 4)),       # flexible: scalar path
        (gk, gv("consumer", 10, None, None, 1000, [], 3)),               # Empty group
        (gk, gv("", 0, None, None, -1, [], 3)),
        (gk, gv("connect", 3, "sessioned", "w1", 1000,
                [_member("w1", [], {}, subscription=b"\x00\x01opaque", assignment=b"\xff")], 3)),
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m", ["a"], {}, assignment=b"")], 3)),  # empty assignment
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m", ["a"], {}, subscription=struct.pack(
            ">hih", 3, 1, 1) + b"a" + struct.pack(">i", -1))], 3)),      # truncated after the v0 prefix
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m", ["a"], {}, subscription=enc.consumer_subscription(
            ["a"], version=3) + b"\x01\x02")], 3)),                       # trailing bytes in a subscription
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m", ["a"], {}, assignment=struct.pack(">hi", 0, 2)
             + (struct.pack(">hbi", 1, 97, 1) + struct.pack(">i", 0)) * 2 + struct.pack(">i", -1))], 3)),  # topic twice
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m", ["a"], {}, subscription=b"\x00")], 3)),  # unreadable
        (gk, gv("consumer", 4, "range", "m", 1, [m1], 3)[:-3]),          # truncated group value
        (gk, gv("consumer", 4, "range", "m", 1, [m1], 3) + b"\x00"),
        (gk, gv("consumer", 4, "range", "m", 1, [_member("m" * 3, [f"t{i}" for i in range(40)], {})], 3)),
        (gk, gv("consumer", 4, "ränge", "m", 1, [_member("m\u00e9", ["\u00e4"], {"\u00e4": [3]})], 3)),
        (gk, None),
        (gk + b"\x00", None),
        (enc.consumer_group_metadata_key("cg"), enc.consumer_group_metadata_value(5, 42)),
        (enc.consumer_group_member_metadata_key("cg", "m"), enc.consumer_group_member_metadata_value(
            "c", "h", ["t1", "t2"], 5, rack_id="r", subscribed_topic_regex="t.*",
            classic_member_metadata={"session_timeout_ms": 3, "supported_protocols": [
                {"name": "range", "metadata": b"\x00\x01"}]})),
        (enc.consumer_group_target_assignment_metadata_key("cg"),
         enc.consumer_group_target_assignment_metadata_value(6)),
        (enc.consumer_group_target_assignment_member_key("cg", "m"),
         enc.consumer_group_target_assignment_member_value({TOPIC_ID: [1, 2]})),
        (enc.consumer_group_current_member_assignment_key("cg", "m"),
         enc.consumer_group_current_member_assignment_value(7, 6, 1, {TOPIC_ID: [0]})),
        (enc.consumer_group_partition_metadata_key("cg"), enc.consumer_group_partition_metadata_value(
            [{"topic_id": TOPIC_ID, "topic_name": "t", "num_partitions": 1}])),
        (enc.consumer_group_current_member_assignment_key("cg", "m"), None),
        (enc.consumer_group_metadata_key("cg"), b"\x00\x01\x00"),
        (enc.consumer_group_regular_expression_key("cg", "^t.*"),
         enc.consumer_group_regular_expression_value(["t1", "t2"], 3, 1000)),
        (enc.share_group_member_metadata_key("sg", "m"), enc.share_group_member_metadata_value("c", "h", ["t1"])),
        (enc.share_group_current_member_assignment_key("sg", "m"),
         enc.share_group_current_member_assignment_value(2, 1, 0, {TOPIC_ID: [0]})),
        (enc.streams_group_metadata_key("app"), enc.streams_group_metadata_value(3, 9, 1)),
        (enc.streams_group_topology_key("app"), enc.streams_group_topology_value(1, [
            {"subtopology_id": "0", "source_topics": ["in"],
             "repartition_source_topics": [{"name": "app-repartition", "partitions": 2}]}])),
        (enc.streams_group_topology_key("app"), None),
    ]
    return records


def test_mixed_batch_matches_the_scalar_decoder():
    keys, values = zip(*mixed_records())
    assert_matches_scalar(list(keys), list(values))


def test_mixed_batch_in_every_order():
    records = mixed_records()
    rnd = random.Random(7)
    for _ in range(5):
        rnd.shuffle(records)
        keys, values = zip(*records)
        assert_matches_scalar(list(keys), list(values))


def test_long_metadata_and_strings_take_the_view_path():
    keys = [enc.offset_commit_key(f"group-{i % 3}" * 4, "topic-with-a-long-name", i) for i in range(50)]
    values = [enc.offset_commit_value(i, i, f"metadata that is longer than twelve bytes {i}", version=i % 4)
              for i in range(50)]
    values[7] = struct.pack(">hqih", 3, 1, 0, 20) + b"\xff" * 20 + struct.pack(">q", 5)
    assert_matches_scalar(keys, values)


def test_kip848_typed_columns():
    keys, values = zip(*mixed_records())
    rows = decode_batch(pa.array(keys, pa.binary()), pa.array(values, pa.binary())).consumer_group_records.to_pylist()
    by_type = {r["record_type"]: r for r in rows if not r["tombstone"]}
    assert by_type["consumer_group_metadata"]["group_epoch"] == 5
    assert by_type["consumer_group_target_assignment_metadata"]["assignment_epoch"] == 6
    current = by_type["consumer_group_current_member_assignment"]
    assert (current["member_epoch"], current["member_state"], current["member_id"]) == (7, 1, "m")
    member = by_type["consumer_group_member_metadata"]
    assert (member["subscribed_topic_names"], member["subscribed_topic_regex"], member["rack_id"]) == (
        ["t1", "t2"], "t.*", "r")
    assert json.loads(member["value_json"])["classic_member_metadata"]["supported_protocols"][0]["metadata"] == "AAE="
    assert json.loads(by_type["consumer_group_target_assignment_member"]["value_json"]) == {
        "topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [1, 2]}]}


def test_input_forms_sliced_large_binary_chunked_and_empty():
    keys, values = zip(*mixed_records())
    keys_arr, values_arr = pa.array(keys, pa.binary()), pa.array(values, pa.binary())
    whole = decode_batch(keys_arr, values_arr)
    large = decode_batch(keys_arr.cast(pa.large_binary()), values_arr.cast(pa.large_binary()))
    assert large.offset_commits.equals(whole.offset_commits) and large.rejected.equals(whole.rejected)
    assert large.group_members.equals(whole.group_members)
    chunked = decode_batch(pa.chunked_array([keys_arr[:10], keys_arr[10:]]),
                           pa.chunked_array([values_arr[:10], values_arr[10:]]))
    assert chunked.group_metadata.equals(whole.group_metadata)
    sliced = decode_batch(keys_arr[5:30], values_arr[5:30])
    expected = whole.offset_commits.filter(
        pa.compute.and_(pa.compute.greater_equal(whole.offset_commits["row"], 5),
                        pa.compute.less(whole.offset_commits["row"], 30)))
    assert sliced.offset_commits["offset"].to_pylist() == expected["offset"].to_pylist()
    assert sliced.offset_commits["row"].to_pylist() == [r - 5 for r in expected["row"].to_pylist()]
    empty = decode_batch(pa.array([], pa.binary()), pa.array([], pa.binary()))
    assert empty.offset_commits.num_rows == empty.rejected.num_rows == 0
    assert empty.offset_commits.schema == OFFSET_COMMIT_SCHEMA
    with pytest.raises(ValueError):
        decode_batch(keys_arr, values_arr[1:])


def test_all_tombstones_and_all_null_keys():
    keys = [enc.offset_commit_key("g", "t", i) for i in range(5)]
    assert_matches_scalar(keys, [None] * 5)
    assert_matches_scalar([None] * 3, [None] * 3)


# -- property: random batches --------------------------------------------------------------------

VALID = [r for r in mixed_records() if r[0] is not None]


@st.composite
def batch_record(draw):
    kind = draw(st.sampled_from(["valid", "mutated", "random", "header", "payloads"]))
    if kind == "payloads":  # well-formed group record, consumer payloads cut short or extended
        members = []
        for i in range(draw(st.integers(0, 3))):
            sub = enc.consumer_subscription(draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)),
                                            draw(st.none() | st.binary(max_size=3)), {"a": [1]}, 2, "r",
                                            draw(st.integers(0, 4)))
            asg = enc.consumer_assignment(draw(st.dictionaries(st.sampled_from(["a", "b"]), st.lists(
                st.integers(0, 3), max_size=2), max_size=2)), None, draw(st.integers(0, 3)))
            sub = sub[:draw(st.integers(0, len(sub)))] + draw(st.binary(max_size=3))
            asg = asg[:draw(st.integers(0, len(asg)))] if draw(st.booleans()) else asg
            members.append(_member(f"m{i}", [], {}, subscription=sub, assignment=asg))
        return enc.group_metadata_key("g"), enc.group_metadata_value(
            draw(st.sampled_from(["consumer", "connect"])), 1, "range", None, 5, members, draw(st.integers(0, 4)))
    if kind == "random":
        return draw(st.none() | st.binary(max_size=20)), draw(st.none() | st.binary(max_size=60))
    if kind == "header":
        return (struct.pack(">h", draw(st.integers(-1, 10))) + draw(st.binary(max_size=20)),
                struct.pack(">h", draw(st.integers(-1, 5))) + draw(st.binary(max_size=60)))
    key, value = draw(st.sampled_from(VALID))
    if kind == "mutated" and value:
        data = bytearray(value)
        at = draw(st.integers(0, len(data) - 1))
        if draw(st.booleans()):
            del data[at:]
        else:
            data[at] ^= draw(st.integers(1, 255))
        value = bytes(data)
    return key, value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(batch_record(), max_size=40))
def test_random_batches_never_fail_and_match_the_scalar_decoder(records):
    keys = [k for k, _ in records]
    values = [v for _, v in records]
    assert_matches_scalar(keys, values)


# -- speed ---------------------------------------------------------------------------------------

def realistic_batch(n=100_000, group_share=0.02, seed=11):
    """Mostly key type 1 / value v3 commits over a few thousand partitions, ~2% group records."""
    rnd = random.Random(seed)
    groups = [f"payments-consumer-{i}" for i in range(80)]
    topics = [f"orders.events.v{i}" for i in range(30)]
    partitions = [(rnd.choice(groups), rnd.choice(topics), rnd.randrange(24)) for _ in range(3000)]
    keys, values, offsets = [], [], {}
    for i in range(n):
        if rnd.random() < group_share:
            group = rnd.choice(groups)
            members = [_member(f"consumer-{group}-{m}-{rnd.getrandbits(40):x}", rnd.sample(topics, 3),
                               {rnd.choice(topics): [m, m + 1]}) for m in range(rnd.randint(1, 5))]
            keys.append(enc.group_metadata_key(group))
            values.append(enc.group_metadata_value("consumer", rnd.randrange(1000), "range", members[0]["member_id"],
                                                   1_700_000_000_000 + i, members))
        else:
            key = rnd.choice(partitions)
            offsets[key] = offsets.get(key, 0) + rnd.randrange(1, 500)
            keys.append(enc.offset_commit_key(*key))
            values.append(enc.offset_commit_value(offsets[key], 1_700_000_000_000 + i,
                                                  "" if rnd.random() < 0.7 else "client-42", rnd.randrange(3)))
    return pa.array(keys, pa.binary()), pa.array(values, pa.binary())


def test_decode_rate_on_a_realistic_batch(capsys):
    keys, values = realistic_batch()
    decode_batch(keys[:1000], values[:1000])  # warm up
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        batch = decode_batch(keys, values)
        best = min(best, time.perf_counter() - start)
    commits = batch.offset_commits.num_rows
    assert commits + batch.group_metadata.num_rows == len(keys) and batch.rejected.num_rows == 0
    with capsys.disabled():
        print(f"\ndecode_batch: {len(keys)} records ({commits} offset commits, {batch.group_metadata.num_rows} group "
              f"records, {batch.group_members.num_rows} members) in {best * 1000:.1f} ms (best of 5): "
              f"{commits / best / 1e6:.2f} M offset commits/s, {len(keys) / best / 1e6:.2f} M records/s")
