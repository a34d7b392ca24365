"""Kafka as the judge of `coordinator_metrics`: the group coordinator's own meters (JMX, read with
Kafka's JmxTool) around a scripted sequence of commits, rebalances, an OffsetDelete, a
DeleteGroups and expirations, against what the models count from the log.

Every group lives in the one partition of `__consumer_offsets`, so the coordinator's cleanup cycles
see them together. The two documented differences (dbt_like_sql/gold/gold.yml;
docs/kafka-semantics.md, "Coordinator metrics (KIP-496)"):

- Kafka's offset-expiration meter adds, for each group a cleanup cycle visits, every record the
  cycle has written so far (OffsetMetadataManager.cleanupExpiredOffsets, KAFKA-18980), while the
  model counts the offsets that expired. A transaction holds both expiring groups' offsets (Kafka
  expires no offset with a pending transactional commit) until both have expired, so one cycle
  expires both groups, whichever it visits first.
- Kafka's offset-deletion meter counts OffsetDelete only, while the log cannot tell a
  DeleteGroups' (or a deleted topic's) tombstones from an OffsetDelete's, so the model counts
  those too.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.kafka.group_calls import delete_groups, delete_offsets
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.broker.embedded import EmbeddedBroker, free_loopback_port
from offsets_platform.broker.jvm import run_tool
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection
from tests.models.conftest import needed_for, run_models

TOPIC = "meters"
METERS = {"offset-commit-count": "count_offset_commits", "offset-expiration-count": "count_offset_expirations",
          "offset-deletion-count": "count_offset_deletions",
          "group-completed-rebalance-count": "count_group_completed_rebalances"}


def coordinator_meters(jmx_url: str) -> dict[str, float]:
    """The group coordinator's meters, read once with Kafka's own JmxTool."""
    result = run_tool("org.apache.kafka.tools.JmxTool", [
        "--jmx-url", jmx_url, "--object-name", "kafka.server:type=group-coordinator-metrics",
        "--one-time", "true", "--report-format", "properties"], timeout_s=120)
    assert result.returncode == 0, result.stderr
    meters = {}
    for line in result.stdout.splitlines():  # kafka.server:type=group-coordinator-metrics:NAME=VALUE
        key, _, value = line.rpartition("=")
        name = key.rpartition(":")[2]
        if name in METERS:
            meters[name] = float(value)
    assert set(meters) == set(METERS), result.stdout
    return meters


def member(bootstrap: str, group: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    return consumer


def poll_until(condition, consumers, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        for consumer in consumers:
            consumer.poll(0.1)


def commit(consumer: Consumer, offsets: dict[int, int]) -> None:
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)


def wait_for_expirations(jmx_url: str, before: dict[str, float], timeout_s: float = 60.0) -> None:
    """Until the offset-expiration meter moves: the first cleanup cycle after the transaction."""
    deadline = time.monotonic() + timeout_s
    while coordinator_meters(jmx_url)["offset-expiration-count"] == before["offset-expiration-count"]:
        assert time.monotonic() < deadline, f"no offset expired within {timeout_s} s"
        time.sleep(1)


@pytest.fixture(scope="module")
def judged(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("meters")
    overrides = {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000",
                 "offsets.topic.num.partitions": "1"}
    with EmbeddedBroker(folder / "broker", overrides=overrides, jmx_port=free_loopback_port()) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
        before = coordinator_meters(broker.jmx_url)

        # The hold: a transaction with an offset of partitions 0-2 for the two groups whose
        # offsets expire, open until the end (ClassicGroup.validateOffsetCommit accepts a
        # transactional commit without a member id or generation, whether the group has members).
        hold = Producer({"bootstrap.servers": bootstrap, "transactional.id": "meters-hold",
                         "transaction.timeout.ms": 300_000})
        hold.init_transactions(30)
        hold.begin_transaction()
        for group in ("meters-standalone", "meters-classic"):
            outsider = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
            hold.send_offsets_to_transaction([TopicPartition(TOPIC, p, 0) for p in range(3)],
                                             outsider.consumer_group_metadata(), 30)
            outsider.close()

        standalone = Consumer({"bootstrap.servers": bootstrap, "group.id": "meters-standalone",
                               "enable.auto.commit": False})
        commit(standalone, {0: 5, 1: 5, 2: 5, 3: 5})
        deleted_group = Consumer({"bootstrap.servers": bootstrap, "group.id": "meters-deleted",
                                  "enable.auto.commit": False})
        commit(deleted_group, {0: 7, 1: 7})
        standalone.close()
        deleted_group.close()
        # OffsetDelete of one offset, and DeleteGroups of a group with two offsets
        connection = KafkaConnection(bootstrap_servers=bootstrap)
        with open_admin(connection, 15, 15) as project_admin:
            assert [o.error for o in delete_offsets(project_admin, "meters-standalone", [(TOPIC, 3)])] == [None]
            assert [o.error for o in delete_groups(project_admin, ["meters-deleted"])] == [None]

        # A classic group: one member (a rebalance), a second joins (another), the second leaves
        # (a third), then the first leaves too: Empty, and its offsets could expire a minute later.
        first = member(bootstrap, "meters-classic")
        poll_until(lambda: len(first.assignment()) == 4, [first], "the first member's assignment")
        commit(first, {0: 1, 1: 1})
        second = member(bootstrap, "meters-classic")
        poll_until(lambda: first.assignment() and second.assignment(), [first, second], "both members' assignment")
        commit(first, {0: 2, 1: 2, 2: 2})  # a classic member may commit any partition
        second.close()
        poll_until(lambda: len(first.assignment()) == 4, [first], "the rebalance after the second left")
        first.close()
        empty_since = time.monotonic()

        # A minute after the classic group went Empty, both groups' three offsets have expired by
        # the rules; ending the transaction then lets the next cleanup cycle expire them all at
        # once (the later plain commits stay the offsets, OffsetMetadataManager.replayEndTransactionMarker).
        time.sleep(max(0.0, empty_since + 62 - time.monotonic()))
        hold.commit_transaction(30)
        wait_for_expirations(broker.jmx_url, before)
        after = coordinator_meters(broker.jmx_url)
        lake = lake_for_models(folder / "lake")
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
        run_models(spark, lake, as_of=datetime.now(timezone.utc), select=needed_for("coordinator_metrics"),
                   offsets_retention_minutes_fallback=1, metrics_bucket_minutes=1440)
        rows = lake.read_arrow("coordinator_metrics").to_pylist()
        modelled = {column: sum(row[column] for row in rows) for column in METERS.values()}
        yield {meter: after[meter] - before[meter] for meter in METERS}, modelled


def test_commits_and_completed_rebalances_equal_kafkas_meters(judged):
    kafka, modelled = judged
    # transactional: 3 + 3; standalone, deleted, classic: 4 + 2 + 2 + 3
    assert kafka["offset-commit-count"] == modelled["count_offset_commits"] == 3 + 3 + 4 + 2 + 2 + 3
    assert kafka["group-completed-rebalance-count"] == modelled["count_group_completed_rebalances"] == 3


def test_expirations_differ_by_the_records_the_cycle_wrote_before_each_group(judged):
    kafka, modelled = judged
    assert modelled["count_offset_expirations"] == 3 + 3, "the offsets that expired"
    # one cleanup cycle: the group it visits first adds its 3 tombstones; the second adds its own 3
    # and the 4 records already in the list, the first group's 3 and its group tombstone
    assert kafka["offset-expiration-count"] == 3 + (3 + 1 + 3)


def test_deletions_differ_only_by_the_delete_groups_tombstones(judged):
    kafka, modelled = judged
    assert kafka["offset-deletion-count"] == 1, "Kafka counts the OffsetDelete only"
    assert modelled["count_offset_deletions"] == 1 + 2, "the log shows the DeleteGroups' two tombstones as deletions"
