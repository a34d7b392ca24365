"""Share groups (types 10-15), the consumer group regex record (16) and streams groups (17, 19-23).

Hand-built bytes (from the ShareGroup*/ConsumerGroupRegularExpression*/StreamsGroup* schema files
of Kafka 4.3) check the decoders independently of the encoders; the encoders then round-trip,
the batch decoder agrees with the scalar one, and malformed bytes name their field.
"""

import json
import re
import uuid

import pyarrow as pa
import pytest

from offsets_platform.codec import RECORD_TYPES, DecodeError, decode_batch, decode_record
from offsets_platform.codec import encode as enc
from offsets_platform.codec.batch import unsupported_reason
from tests.codec.test_codec_batch import assert_matches_scalar
from tests.codec.test_codec_decode import carr, cs, i8, i16, i32, i64, s, tags, uv

pytestmark = pytest.mark.fast  # make test-fast


TOPIC_A = "0b9c9d7e-6c0e-4a59-9f0e-1c2d3e4f5a6b"
TOPIC_B = "ffffffff-0000-4000-8000-000000000001"

# Every record type Kafka 4.3's group coordinator defines (apiKey of its *Key.json files).
KAFKA_43_TYPES = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23}

TOPOLOGY = [
    {"subtopology_id": "0", "source_topics": ["words-in"], "source_topic_regex": ["^logs-.*"],
     "state_changelog_topics": [{"name": "app-counts-changelog", "topic_configs": [{"key": "cleanup.policy",
                                                                                      "value": "compact"}]}],
     "repartition_sink_topics": ["app-counts-repartition"], "repartition_source_topics": [],
     "copartition_groups": []},
    {"subtopology_id": "1", "source_topics": ["words-in"],
     "repartition_source_topics": [{"name": "app-counts-repartition", "partitions": 3, "replication_factor": 1}],
     "copartition_groups": [{"source_topics": [0], "repartition_source_topics": [0]}]},
]


def one_of_each() -> list[tuple[bytes, bytes]]:
    """A record of every type 10-23 that Kafka 4.3 defines, built with the encoders."""
    return [
        (enc.share_group_member_metadata_key("sg", "m1"),
         enc.share_group_member_metadata_value("cli", "/10.0.0.1", ["alerts"], rack_id="r1")),
        (enc.share_group_metadata_key("sg"), enc.share_group_metadata_value(4, 99)),
        (enc.share_group_target_assignment_metadata_key("sg"), enc.share_group_target_assignment_metadata_value(4, 123)),
        (enc.share_group_target_assignment_member_key("sg", "m1"),
         enc.share_group_target_assignment_member_value({TOPIC_A: [0, 1]})),
        (enc.share_group_current_member_assignment_key("sg", "m1"),
         enc.share_group_current_member_assignment_value(4, 3, 0, {TOPIC_A: [0, 1]})),
        (enc.share_group_state_partition_metadata_key("sg"), enc.share_group_state_partition_metadata_value(
            [{"topic_id": TOPIC_B, "topic_name": "b", "partitions": [2]}],
            [{"topic_id": TOPIC_A, "topic_name": "alerts", "partitions": [0, 1]}],
            [{"topic_id": TOPIC_B, "topic_name": "gone"}])),
        (enc.consumer_group_regular_expression_key("cg", "^click-.*"),
         enc.consumer_group_regular_expression_value(["click-web", "click-app"], 42, 1_700_000_000_000)),
        (enc.streams_group_metadata_key("app"), enc.streams_group_metadata_value(
            7, 11, validated_topology_epoch=1, last_assignment_configs=[{"key": "num.standby.replicas", "value": "0"}])),
        (enc.streams_group_member_metadata_key("app", "m2"), enc.streams_group_member_metadata_value(
            "app-client", "/10.0.0.2", "proc-1", 1, 300_000, user_endpoint={"host": "h", "port": 65535},
            client_tags=[{"key": "zone", "value": "a"}])),
        (enc.streams_group_target_assignment_metadata_key("app"), enc.streams_group_target_assignment_metadata_value(7)),
        (enc.streams_group_target_assignment_member_key("app", "m2"),
         enc.streams_group_target_assignment_member_value({"0": [0, 1]}, {"1": [2]})),
        (enc.streams_group_current_member_assignment_key("app", "m2"),
         enc.streams_group_current_member_assignment_value(
             7, 6, 0, [{"subtopology_id": "0", "partitions": [0, 1], "assignment_epochs": [6, 7]}])),
        (enc.streams_group_topology_key("app"), enc.streams_group_topology_value(1, TOPOLOGY)),
    ]


# -- the type table ------------------------------------------------------------------------------

def test_every_type_kafka_43_defines_is_known_and_decodes():
    assert set(RECORD_TYPES) == KAFKA_43_TYPES
    decoded = {decode_record(key, value)["key_version"] for key, value in one_of_each()}
    assert decoded == set(range(10, 24)) - {18}
    for key, value in one_of_each():
        assert decode_record(key, value)["record_type"] == RECORD_TYPES[decode_record(key, None)["key_version"]]


@pytest.mark.parametrize("key_type", [9, 18, 24])
def test_types_kafka_43_does_not_define_are_skipped_and_marked(key_type):
    # 9 is Kafka 4.0's ShareGroupPartitionMetadata: a 4.3 loader skips it with a warning.
    key = i16(key_type) + s("sg")
    assert decode_record(key, i16(0) + b"\x00")["record_type"] == "unknown"
    batch = decode_batch(pa.array([key, enc.share_group_metadata_key("sg"), key[:1]]),
                         pa.array([b"\x00\x00\x01", b"\x00\x00", None]))
    rejected = batch.rejected.to_pylist()
    assert rejected[0] == {"row": 0, "key_version": key_type, "reason": unsupported_reason(key_type),
                           "skipped_by_kafka": True}
    assert "unknown record type" in rejected[0]["reason"] and "skipped as Kafka's loader does" in rejected[0]["reason"]
    # malformed bytes of a known type, and a key too short to have a type: Kafka fails on them
    assert [(r["row"], r["skipped_by_kafka"]) for r in rejected[1:]] == [(1, False), (2, False)]


# -- hand-built bytes ------------------------------------------------------------------------------

def test_regular_expression_type_16_by_hand():
    key = i16(16) + s("cg") + s("^click-.*")
    value = i16(0) + carr([cs("click-web"), cs("click-app")]) + i64(42) + i64(1_700_000_000_000) + tags()
    rec = decode_record(key, value)
    assert (rec["record_type"], rec["group"], rec["regular_expression"]) == (
        "consumer_group_regular_expression", "cg", "^click-.*")
    assert (rec["topics"], rec["version"], rec["timestamp"]) == (["click-web", "click-app"], 42, 1_700_000_000_000)
    assert "member_id" not in rec


def test_share_group_member_and_state_by_hand():
    rec = decode_record(i16(10) + s("sg") + s("m1"),
                        i16(0) + cs(None) + cs("cli") + cs("h") + carr([cs("alerts")]) + tags())
    assert (rec["member_id"], rec["rack_id"], rec["client_id"], rec["subscribed_topic_names"]) == (
        "m1", None, "cli", ["alerts"])
    a, b = uuid.UUID(TOPIC_A).bytes, uuid.UUID(TOPIC_B).bytes
    value = (i16(0) + carr([a + cs("alerts") + carr([i32(0)]) + tags()]) + carr([])
             + carr([b + cs("gone") + tags()]) + tags())
    rec = decode_record(i16(15) + s("sg"), value)
    assert rec["initializing_topics"] == [{"topic_id": TOPIC_A, "topic_name": "alerts", "partitions": [0]}]
    assert rec["initialized_topics"] == [] and rec["deleting_topics"] == [{"topic_id": TOPIC_B, "topic_name": "gone"}]


def test_share_group_metadata_hash_is_a_plain_field():
    rec = decode_record(i16(11) + s("sg"), i16(0) + i32(3) + i64(-5) + tags())
    assert (rec["epoch"], rec["metadata_hash"]) == (3, -5)


def test_streams_member_metadata_by_hand():
    value = (i16(0) + cs("inst") + cs(None) + cs("cli") + cs("h") + i32(300) + i32(2) + cs("proc")
             + i8(1) + cs("host") + b"\xff\xfe" + tags()      # UserEndpoint present, port as uint16
             + carr([cs("zone") + cs("a") + tags()]) + tags())
    rec = decode_record(i16(19) + s("app") + s("m"), value)
    assert rec["user_endpoint"] == {"host": "host", "port": 65534}
    assert (rec["instance_id"], rec["topology_epoch"], rec["process_id"], rec["client_tags"]) == (
        "inst", 2, "proc", [{"key": "zone", "value": "a"}])
    null_endpoint = value.replace(i8(1) + cs("host") + b"\xff\xfe" + tags(), i8(-1))
    assert decode_record(i16(19) + s("app") + s("m"), null_endpoint)["user_endpoint"] is None


def test_streams_topology_by_hand_and_its_typed_topics():
    topic_info = cs("app-repartition") + i32(3) + i16(1) + carr([]) + tags()
    sub = (cs("0") + carr([cs("in"), cs("in2")]) + carr([cs("^re.*")]) + carr([]) + carr([cs("app-repartition")])
           + carr([topic_info]) + carr([carr([i16(0)]) + carr([]) + carr([i16(0)]) + tags()]) + tags())
    key, value = i16(23) + s("app"), i16(0) + i32(5) + carr([sub]) + tags()
    rec = decode_record(key, value)
    assert rec["epoch"] == 5 and rec["subtopologies"][0]["copartition_groups"] == [
        {"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}]
    row = decode_batch(pa.array([key]), pa.array([value])).consumer_group_records.to_pylist()[0]
    assert row["source_topics"] == ["in", "in2", "app-repartition"]
    assert row["source_topic_regexes"] == ["^re.*"]
    assert row["group_epoch"] is None, "a topology's epoch is not the group epoch"


# -- encoders ------------------------------------------------------------------------------------

def test_encoders_round_trip():
    recs = {rec["record_type"]: rec for rec in (decode_record(k, v) for k, v in one_of_each())}
    assert recs["share_group_member_metadata"]["rack_id"] == "r1"
    assert recs["share_group_target_assignment_metadata"]["assignment_timestamp"] == 123
    assert recs["share_group_current_member_assignment"]["assigned_partitions"] == [
        {"topic_id": TOPIC_A, "partitions": [0, 1]}]
    assert recs["streams_group_metadata"]["last_assignment_configs"] == [{"key": "num.standby.replicas", "value": "0"}]
    assert recs["streams_group_metadata"]["validated_topology_epoch"] == 1
    assert recs["streams_group_member_metadata"]["user_endpoint"] == {"host": "h", "port": 65535}
    assert recs["streams_group_target_assignment_member"]["standby_tasks"] == [
        {"subtopology_id": "1", "partitions": [2]}]
    current = recs["streams_group_current_member_assignment"]
    assert current["active_tasks"] == [{"subtopology_id": "0", "partitions": [0, 1], "assignment_epochs": [6, 7]}]
    assert current["warmup_tasks_pending_revocation"] == []
    topology = recs["streams_group_topology"]["subtopologies"]
    assert topology[0]["state_changelog_topics"][0]["topic_configs"] == [{"key": "cleanup.policy", "value": "compact"}]
    assert topology[1]["repartition_source_topics"][0] == {
        "name": "app-counts-repartition", "partitions": 3, "replication_factor": 1, "topic_configs": []}


def test_defaults_and_null_tagged_fields():
    rec = decode_record(enc.streams_group_metadata_key("app"), enc.streams_group_metadata_value(1))
    assert (rec["validated_topology_epoch"], rec["last_assignment_configs"]) == (-1, None)
    assert enc.streams_group_metadata_value(1) == i16(0) + i32(1) + i64(0) + tags()  # defaults are left out


def test_unknown_tagged_fields_of_a_newer_broker_decode():
    # Kafka 4.4 adds tags 2 and 3 to StreamsGroupMetadataValue without a new version.
    value = enc.streams_group_metadata_value(3, tagged={2: i32(1), 3: i32(-1)})
    assert decode_record(enc.streams_group_metadata_key("app"), value)["epoch"] == 3
    # Every other record here ends with an empty top-level tagged section, which a newer broker
    # may fill: the record still decodes, with the same fields.
    for index, (key, value) in enumerate(one_of_each()):
        if index in (2, 7):  # their top-level section holds known tags already
            continue
        assert value.endswith(tags())
        assert decode_record(key, value[:-1] + tags({30: b"new"})) == decode_record(key, value)


def test_a_value_version_kafka_43_does_not_define_is_refused():
    key, value = one_of_each()[6]  # type 16, only version 0 exists
    with pytest.raises(DecodeError, match=r"field 'version' is 1, outside the versions 0-0 Kafka 4.3 defines"):
        decode_record(key, i16(1) + value[2:])


# -- batch = scalar --------------------------------------------------------------------------------

def test_batch_matches_scalar_for_every_new_type_with_tombstones_and_faults():
    records = one_of_each()
    records += [(key, None) for key, _ in one_of_each()]
    records += [(key, value[:-3]) for key, value in one_of_each()]
    records += [(i16(9) + s("sg"), b"\x00\x00")]
    assert_matches_scalar([k for k, _ in records], [v for _, v in records])


def test_typed_columns():
    rows = decode_batch(pa.array([k for k, _ in one_of_each()]),
                        pa.array([v for _, v in one_of_each()])).consumer_group_records.to_pylist()
    by_type = {row["record_type"]: row for row in rows}
    regex = by_type["consumer_group_regular_expression"]
    assert (regex["group"], regex["regular_expression"], regex["resolved_topics"]) == (
        "cg", "^click-.*", ["click-web", "click-app"])
    assert json.loads(regex["value_json"]) == {"topics": ["click-web", "click-app"], "version": 42,
                                               "timestamp": 1_700_000_000_000}
    topology = by_type["streams_group_topology"]
    assert topology["source_topics"] == ["words-in", "app-counts-repartition"]
    assert topology["source_topic_regexes"] == ["^logs-.*"]
    assert by_type["share_group_member_metadata"]["subscribed_topic_names"] == ["alerts"]
    assert by_type["share_group_member_metadata"]["member_id"] == "m1"
    assert by_type["share_group_metadata"]["group_epoch"] == 4
    assert by_type["streams_group_metadata"]["group_epoch"] == 7
    assert by_type["share_group_current_member_assignment"]["member_state"] == 0
    assert by_type["streams_group_current_member_assignment"]["member_epoch"] == 7
    assert by_type["streams_group_member_metadata"]["client_id"] == "app-client"
    # the new list columns stay null on the records they do not describe
    others = [row for row in rows if row["record_type"] not in ("consumer_group_regular_expression",
                                                                "streams_group_topology")]
    assert all(row["resolved_topics"] is None and row["source_topics"] is None for row in others)
    assert all(row["regular_expression"] is None for row in others)


# -- malformed bytes -----------------------------------------------------------------------------

@pytest.mark.parametrize("index", range(13))
def test_every_truncation_names_a_field(index):
    key, value = one_of_each()[index]
    for cut in range(len(value)):
        with pytest.raises(DecodeError) as info:
            decode_record(key, value[:cut])
        assert "field '" in str(info.value), str(info.value)
    with pytest.raises(DecodeError, match="unexpected bytes"):
        decode_record(key, value + b"\x00")


@pytest.mark.parametrize("key,value,field", [
    (i16(10) + s("sg") + s("m"), i16(0) + cs(None) + cs(None) + cs("h") + carr([]) + tags(), "client_id"),
    (i16(16) + s("cg") + s("r"), i16(0) + carr([cs(None)]) + i64(1) + i64(2) + tags(), "topics[0]"),
    (i16(16) + s("cg") + s("r"), i16(0) + uv(0) + i64(1) + i64(2) + tags(), "topics"),
    (i16(23) + s("app"), i16(0) + i32(1) + carr([cs(None) + bytes(8)]) + tags(), "subtopologies[0].subtopology_id"),
    (i16(19) + s("app") + s("m"), i16(0) + cs(None) + cs(None) + cs("c") + cs("h") + i32(1) + i32(1) + cs("p")
     + i8(1) + cs("host") + b"\x01", "user_endpoint.port"),
    (i16(17) + s("app"), i16(0) + i32(1) + i64(0) + tags({1: carr([cs("k") + bytes(2)])}), "last_assignment_configs[0].value"),
])
def test_malformed_fields_are_named(key, value, field):
    with pytest.raises(DecodeError, match=re.escape(f"field '{field}'")):
        decode_record(key, value)


def test_malformed_key_of_a_new_type_names_the_field():
    with pytest.raises(DecodeError, match="field 'regular_expression'"):
        decode_record(i16(16) + s("cg") + b"\x00\x05ab", None)
    with pytest.raises(DecodeError, match="field 'member_id' is followed by 1 unexpected bytes"):
        decode_record(i16(19) + s("app") + s("m") + b"\x00", None)
