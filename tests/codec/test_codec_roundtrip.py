"""encode.py builds what decode_record reads back, for every record type and version."""

import uuid

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from offsets_platform.codec import decode_record
from offsets_platform.codec import encode as enc

pytestmark = pytest.mark.fast  # make test-fast


text = st.text(max_size=20)
maybe_text = st.none() | text
int32 = st.integers(-2**31, 2**31 - 1)
int64 = st.integers(-2**63, 2**63 - 1)
partitions = st.lists(st.integers(0, 10_000), max_size=5)
topic_ids = st.uuids().map(str)


@settings(max_examples=60, deadline=None)
@given(group=text, topic=text, partition=int32, key_version=st.sampled_from([0, 1]), offset=int64,
       commit=int64, metadata=maybe_text, epoch=int32, expire=int64, version=st.integers(0, 4))
def test_offset_commit_round_trip(group, topic, partition, key_version, offset, commit, metadata, epoch, expire,
                                  version):
    assume(key_version == 1 or version == 0)  # a legacy key (type 0) takes value version 0 only
    key = enc.offset_commit_key(group, topic, partition, key_version)
    value = enc.offset_commit_value(offset, commit, metadata, epoch, expire, version)
    rec = decode_record(key, value)
    assert (rec["key_version"], rec["group"], rec["topic"], rec["partition"]) == (key_version, group, topic, partition)
    assert (rec["value_version"], rec["offset"], rec["metadata"], rec["commit_timestamp"]) == (
        version, offset, metadata, commit)
    assert rec["leader_epoch"] == (epoch if version >= 3 and epoch != -1 else None)
    assert rec["expire_timestamp"] == (expire if version == 1 and expire != -1 else None)


def test_offset_commit_v4_with_extra_tagged_fields_round_trips():
    value = enc.offset_commit_value(5, 6, "m", 1, version=4, tagged={2: b"zz", 0: b""})
    assert decode_record(enc.offset_commit_key("g", "t", 1), value)["metadata"] == "m"


owned = st.dictionaries(text, partitions, max_size=3)


@settings(max_examples=60, deadline=None)
@given(topics=st.lists(text, max_size=4), user_data=st.none() | st.binary(max_size=8), owned=owned,
       generation=int32, rack=maybe_text, version=st.integers(0, 3))
def test_consumer_subscription_round_trip(topics, user_data, owned, generation, rack, version):
    payload = enc.consumer_subscription(topics, user_data, owned, generation, rack, version)
    member = {"member_id": "m", "client_id": "c", "client_host": "h", "rebalance_timeout": 1,
              "session_timeout": 2, "subscription": payload, "assignment": enc.consumer_assignment(owned)}
    rec = decode_record(enc.group_metadata_key("g"), enc.group_metadata_value("consumer", 1, "p", "m", 3, [member]))
    got = rec["members"][0]["subscription"]
    assert (got["version"], got["topics"], got["user_data"]) == (version, topics, user_data)
    assert got["owned_partitions"] == ([{"topic": t, "partitions": p} for t, p in owned.items()]
                                       if version >= 1 else None)
    assert got["generation_id"] == (generation if version >= 2 else None)
    assert got["rack_id"] == (rack if version >= 3 else None)
    assert rec["members"][0]["assignment"]["partitions"] == owned


member_strategy = st.fixed_dictionaries({
    "member_id": text, "group_instance_id": maybe_text, "client_id": text, "client_host": text,
    "rebalance_timeout": int32, "session_timeout": int32,
    "topics": st.lists(text, min_size=1, max_size=3), "assigned": owned,
})


@settings(max_examples=60, deadline=None)
@given(protocol_type=st.sampled_from(["consumer", "connect", ""]), generation=int32, protocol=maybe_text,
       leader=maybe_text, timestamp=int64, members=st.lists(member_strategy, max_size=3), version=st.integers(0, 4))
def test_group_metadata_round_trip(protocol_type, generation, protocol, leader, timestamp, members, version):
    built = [{**m, "subscription": enc.consumer_subscription(m["topics"]),
              "assignment": enc.consumer_assignment(m["assigned"])} for m in members]
    value = enc.group_metadata_value(protocol_type, generation, protocol, leader, timestamp, built, version)
    rec = decode_record(enc.group_metadata_key("grp"), value)
    assert (rec["value_version"], rec["protocol_type"], rec["generation"], rec["protocol"], rec["leader"]) == (
        version, protocol_type, generation, protocol, leader)
    assert rec["current_state_timestamp"] == (timestamp if version >= 2 and timestamp != -1 else None)
    assert len(rec["members"]) == len(members)
    for sent, got in zip(built, rec["members"]):
        assert got["member_id"] == sent["member_id"] and got["client_host"] == sent["client_host"]
        assert got["group_instance_id"] == (sent["group_instance_id"] if version >= 3 else None)
        assert got["rebalance_timeout"] == (sent["rebalance_timeout"] if version >= 1 else None)
        assert got["session_timeout"] == sent["session_timeout"]
        assert got["subscription_bytes"] == sent["subscription"]
        if protocol_type == "consumer":
            assert got["subscription"]["topics"] == sent["topics"]
            assert got["assignment"]["partitions"] == sent["assigned"]
        else:
            assert got["subscription"] is None and got["assignment"] is None


def test_group_metadata_reencodes_a_decoded_record_byte_for_byte():
    members = [{"member_id": "m1", "group_instance_id": "i1", "client_id": "c", "client_host": "/h",
                "rebalance_timeout": 5, "session_timeout": 6, "subscription": enc.consumer_subscription(["a"]),
                "assignment": enc.consumer_assignment({"a": [0]})}]
    for version in range(5):
        value = enc.group_metadata_value("consumer", 7, "range", "m1", 100, members, version)
        rec = decode_record(enc.group_metadata_key("g"), value)
        again = enc.group_metadata_value(rec["protocol_type"], rec["generation"], rec["protocol"], rec["leader"],
                                         rec["current_state_timestamp"], rec["members"], version)
        assert again == value


@settings(max_examples=40, deadline=None)
@given(epoch=int32, metadata_hash=int64)
def test_consumer_group_metadata_round_trip(epoch, metadata_hash):
    rec = decode_record(enc.consumer_group_metadata_key("cg"), enc.consumer_group_metadata_value(epoch, metadata_hash))
    assert (rec["epoch"], rec["metadata_hash"]) == (epoch, metadata_hash)


@settings(max_examples=40, deadline=None)
@given(topics=st.lists(st.fixed_dictionaries({
    "topic_id": topic_ids, "topic_name": text, "num_partitions": int32,
    "partition_metadata": st.lists(st.fixed_dictionaries({"partition": int32, "racks": st.lists(text, max_size=2)}),
                                   max_size=2)}), max_size=3))
def test_partition_metadata_round_trip(topics):
    rec = decode_record(enc.consumer_group_partition_metadata_key("cg"),
                        enc.consumer_group_partition_metadata_value(topics))
    assert rec["topics"] == topics


classic = st.none() | st.fixed_dictionaries({
    "session_timeout_ms": int32,
    "supported_protocols": st.lists(st.fixed_dictionaries({"name": text, "metadata": st.binary(max_size=6)}),
                                    max_size=2)})


@settings(max_examples=40, deadline=None)
@given(client_id=text, host=text, topics=st.lists(text, max_size=3), rebalance=int32, instance=maybe_text,
       rack=maybe_text, regex=maybe_text, assignor=maybe_text, classic_metadata=classic)
def test_member_metadata_round_trip(client_id, host, topics, rebalance, instance, rack, regex, assignor,
                                    classic_metadata):
    value = enc.consumer_group_member_metadata_value(client_id, host, topics, rebalance, instance, rack, regex,
                                                     assignor, classic_metadata, tagged={5: b"new"})
    rec = decode_record(enc.consumer_group_member_metadata_key("cg", "mid"), value)
    assert rec["member_id"] == "mid"
    assert (rec["client_id"], rec["client_host"], rec["subscribed_topic_names"], rec["rebalance_timeout_ms"]) == (
        client_id, host, topics, rebalance)
    assert (rec["instance_id"], rec["rack_id"], rec["subscribed_topic_regex"], rec["server_assignor"]) == (
        instance, rack, regex, assignor)
    assert rec["classic_member_metadata"] == classic_metadata


assignment = st.dictionaries(topic_ids, partitions, max_size=3)


@settings(max_examples=40, deadline=None)
@given(epoch=int32, target=assignment, current=assignment, pending=assignment, state=st.integers(-128, 127))
def test_assignment_records_round_trip(epoch, target, current, pending, state):
    def as_list(d):
        return [{"topic_id": t, "partitions": p} for t, p in d.items()]
    rec6 = decode_record(enc.consumer_group_target_assignment_metadata_key("cg"),
                         enc.consumer_group_target_assignment_metadata_value(epoch))
    assert rec6["assignment_epoch"] == epoch
    rec7 = decode_record(enc.consumer_group_target_assignment_member_key("cg", "m"),
                         enc.consumer_group_target_assignment_member_value(target))
    assert rec7["topic_partitions"] == as_list(target)
    rec8 = decode_record(enc.consumer_group_current_member_assignment_key("cg", "m"),
                         enc.consumer_group_current_member_assignment_value(epoch, epoch - 1 if epoch > -2**31 else 0,
                                                                            state, current, as_list(pending)))
    assert (rec8["member_epoch"], rec8["state"]) == (epoch, state)
    def with_epochs(d):
        return [{**item, "assignment_epochs": None} for item in as_list(d)]
    assert rec8["assigned_partitions"] == with_epochs(current)
    assert rec8["partitions_pending_revocation"] == with_epochs(pending)


@pytest.mark.parametrize("key_type,member", [(3, None), (4, None), (5, "m"), (6, None), (7, "m"), (8, "m")])
def test_kip848_keys(key_type, member):
    rec = decode_record(enc.consumer_group_key(key_type, "cg", member), None)
    assert rec["group"] == "cg" and rec.get("member_id") == member


def test_uuid_bytes_accepts_uuid_objects():
    u = uuid.uuid4()
    assert enc.uuid_bytes(u) == enc.uuid_bytes(str(u)) == u.bytes
