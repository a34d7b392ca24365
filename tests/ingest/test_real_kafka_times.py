"""Times the lake's timestamps cannot hold, on the real broker: Kafka's own coordinator stores
them in `__consumer_offsets` when a client chooses the retention, and a mirror's producer may
give its records any timestamp. Each lands with its batch, and a rerun adds nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.codec import encode
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.lake.timestamp_range import LAKE_TIMESTAMP_MIN_MS
from tests.ingest.conftest import produce
from tests.legacy_offset_commit import commit_with_retention

pytestmark = pytest.mark.integration

TOPIC = "times-orders"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Retentions a client may ask for; Kafka stores commit time + retention, wrapped to a long.
RETENTIONS = {
    "retention-long-max": LONG_MAX,  # wraps to about -9.2e18: expired at once, for Kafka
    "retention-far-future": 9_300_000_000_000_000,  # past what microseconds hold
    "retention-after-9999": 300_000_000_000_000,  # year 11476: past Delta's and Python's year 9999
}


def java_long(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def millis(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(milliseconds=1)


def row_counts(lake: Lake) -> dict[str, int]:
    return {name: lake.count(name) for name in (*RECORD_TABLES, "offsets_topic_checkpoints")}


@pytest.fixture(scope="module")
def orders(connection) -> str:
    admin = AdminClient({"bootstrap.servers": connection.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    return connection.bootstrap_servers


def commit_plainly(bootstrap: str, group: str, offset: int) -> None:
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    committer.close()


def test_expire_timestamps_kafka_computed_from_a_clients_retention_land(orders, connection, tmp_path):
    commit_plainly(orders, "ordinary-before", 1)
    for index, (group, retention_ms) in enumerate(RETENTIONS.items()):
        commit_with_retention(orders, group, TOPIC, 0, 10 + index, retention_ms)
    commit_plainly(orders, "ordinary-after", 2)

    lake = Lake(tmp_path / "lake")
    first = ingest_offsets_topic(connection, lake, emit=lambda line: None)
    assert first.rejected == 0
    commits = {row["group"]: row for row in lake.read_arrow("offset_commit_records").to_pylist()
               if not row["tombstone"]}
    for group, retention_ms in RETENTIONS.items():
        row = commits[group]
        assert row["value_version"] == 1, "Kafka writes a value v1 when it stores an expire timestamp"
        assert row["expire_timestamp"] is None
        assert row["expire_timestamp_out_of_range_ms"] == java_long(millis(row["commit_timestamp"]) + retention_ms)
    assert commits["retention-long-max"]["expire_timestamp_out_of_range_ms"] < LAKE_TIMESTAMP_MIN_MS
    assert (commits["ordinary-before"]["offset"], commits["ordinary-after"]["offset"]) == (1, 2)
    assert commits["ordinary-after"]["expire_timestamp"] is None
    assert commits["ordinary-after"]["expire_timestamp_out_of_range_ms"] is None

    before = row_counts(lake)
    again = ingest_offsets_topic(connection, lake, emit=lambda line: None)
    assert again.records_read == 0 and sum(again.rows_written.values()) == 0
    assert row_counts(lake) == before


def test_a_mirrors_records_with_any_times_land_with_their_batch(mirror_connection, tmp_path):
    t0 = 1_790_000_000_000
    key = encode.offset_commit_key
    records = [
        (3, key("g", "orders", 0), encode.offset_commit_value(1, t0), t0),
        # an old broker's v1 value: the commit time an old client chose, any expire timestamp
        (3, key("g", "orders", 1), encode.offset_commit_value(2, LONG_MIN, expire_timestamp=LONG_MAX, version=1), t0),
        # record timestamps the broker accepts (message.timestamp.before.max.ms is unbounded)
        (3, key("g", "orders", 2), encode.offset_commit_value(3, t0), -9_300_000_000_000_000),
        (3, encode.group_metadata_key("g"), encode.group_metadata_value("consumer", 1, None, None, LONG_MIN, []),
         LAKE_TIMESTAMP_MIN_MS - 1),
        (3, key("g", "orders", 3), encode.offset_commit_value(4, t0), t0),
    ]
    delivered = produce(mirror_connection, records)
    lake = Lake(tmp_path / "lake")
    first = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)

    assert first.records_read == len(records) and first.rejected == 0
    commits = {row["partition"]: row for row in lake.read_arrow("offset_commit_records").to_pylist()}
    assert [commits[p]["offset"] for p in range(4)] == [1, 2, 3, 4]
    assert [(commits[p]["source_partition"], commits[p]["source_offset"]) for p in range(4)] == [
        delivered[0], delivered[1], delivered[2], delivered[4]]
    assert (commits[1]["commit_timestamp_out_of_range_ms"], commits[1]["expire_timestamp_out_of_range_ms"]) == (
        LONG_MIN, LONG_MAX)
    assert (commits[2]["source_timestamp"], commits[2]["source_timestamp_out_of_range_ms"]) == (
        None, -9_300_000_000_000_000)
    (group,) = lake.read_arrow("group_metadata_records").to_pylist()
    assert group["current_state_timestamp_out_of_range_ms"] == LONG_MIN
    assert group["source_timestamp_out_of_range_ms"] == LAKE_TIMESTAMP_MIN_MS - 1

    before = row_counts(lake)
    again = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    assert again.records_read == 0 and row_counts(lake) == before
