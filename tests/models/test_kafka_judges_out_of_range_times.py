"""Kafka as the judge of the models on expire timestamps outside the lake's timestamps.

A standalone committer asks Kafka (OffsetCommit v4) to keep its offsets for a retention of its
choice; the coordinator stores commit time + retention in a long as the legacy expire timestamp.
With Long.MAX_VALUE that wraps far into the past and the coordinator's next expiration check
(every second here) removes the offset; far-future ones stay. Nothing else removes offsets on
this broker, so that tombstone is an expiration. The models must agree on both: the tombstone
counts as an expiration, and the offsets still there are not expired.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection
from tests.legacy_offset_commit import commit_with_retention
from tests.models.conftest import needed_for, rows_by, run_models

pytestmark = pytest.mark.integration

TOPIC = "judge-times"
CHECK_INTERVAL_S = 1.0
RETENTIONS = {
    "judge-wrapped": 2**63 - 1,  # commit time + Long.MAX_VALUE wraps to about -9.2e18
    "judge-far-future": 9_300_000_000_000_000,  # past what microseconds hold
    "judge-after-9999": 300_000_000_000_000,  # year 11476
    "judge-plain": -1,  # the broker's offsets.retention.minutes (7 days): no expire timestamp
}


def committed(bootstrap: str, group: str) -> int | None:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        [answer] = reader.committed([TopicPartition(TOPIC, 0)], timeout=30)
        return answer.offset if answer.offset >= 0 else None
    finally:
        reader.close()


@pytest.fixture(scope="module")
def judged(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("judge-times")
    overrides = {"offsets.retention.check.interval.ms": str(int(CHECK_INTERVAL_S * 1000))}
    with EmbeddedBroker(folder / "broker", overrides=overrides) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures need the client alive
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        for offset, (group, retention_ms) in enumerate(RETENTIONS.items(), start=1):
            commit_with_retention(bootstrap, group, TOPIC, 0, offset, retention_ms)
        deadline = time.monotonic() + 60
        while committed(bootstrap, "judge-wrapped") is not None:
            assert time.monotonic() < deadline, "Kafka did not expire the wrapped offset within 60 s"
            time.sleep(0.2)
        time.sleep(3 * CHECK_INTERVAL_S)  # checks enough to expire anything else Kafka thinks expired
        kafka_kept = {group: committed(bootstrap, group) for group in RETENTIONS}

        connection = KafkaConnection(bootstrap_servers=bootstrap)
        lake = lake_for_models(folder / "lake")
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
        snapshot_cluster(connection, lake, emit=lambda line: None)
        run_models(spark, lake, as_of=datetime.now(timezone.utc),
                   select=needed_for("coordinator_metrics", "expirable_offsets"))
        yield {"kafka_kept": kafka_kept, "lake": lake}


def test_kafka_expired_only_the_wrapped_expire_timestamp(judged):
    assert judged["kafka_kept"] == {"judge-wrapped": None, "judge-far-future": 2, "judge-after-9999": 3,
                                    "judge-plain": 4}


def test_the_models_call_the_offsets_kafka_kept_not_expired(judged):
    expirable = {group: row for (group, _, _), row in
                 rows_by(judged["lake"], "expirable_offsets", "group_id", "topic", "partition_id").items()
                 if group in RETENTIONS}
    assert set(expirable) == {"judge-far-future", "judge-after-9999", "judge-plain"}
    assert {group: (row["rule"], row["is_expired"]) for group, row in expirable.items()} == {
        "judge-far-future": ("legacy_expire_timestamp", False),
        "judge-after-9999": ("legacy_expire_timestamp", False),
        "judge-plain": ("standalone", False)}
    assert expirable["judge-far-future"]["expires_at"] is None
    assert expirable["judge-far-future"]["expires_at_ms"] > 9_300_000_000_000_000


def test_the_models_count_kafkas_removal_as_an_expiration(judged):
    lake = judged["lake"]
    removals = [row for row in lake.read_arrow("offset_removals").to_pylist() if row["group_id"] in RETENTIONS]
    assert [(row["group_id"], row["is_offset_removed"]) for row in removals] == [("judge-wrapped", True)]
    assert removals[0]["legacy_expires_at_ms"] < -9_000_000_000_000_000_000
    metrics = lake.read_arrow("coordinator_metrics").to_pylist()
    assert sum(row["count_offset_expirations"] for row in metrics) == 1
    assert sum(row["count_offset_deletions"] for row in metrics) == 0
