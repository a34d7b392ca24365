"""Kafka as the judge of `expirable_offsets`: the offsets the models predict to expire are exactly
the ones the broker's own expiration removes, each no earlier than its `expires_at` and within one
check interval after it; every other offset stays.

The broker runs with offsets.retention.minutes=1 and a 1 s check interval. Real clients build: a
classic group that went Empty, a Stable classic group that dropped a topic, a standalone
committer, a KIP-848 group subscribed by a regular expression that also holds an offset of a topic
the expression does not match, and a standalone group with a transactional commit still open.
Where snapshots and the log meet: a first snapshot sees a classic group Empty and the standalone
committer listed; both run again before the second (the group joins, commits and leaves: Empty
again, later), so an Empty clock or an idle time taken from the first snapshot would be too early.
Ingest and a second snapshot capture the cluster before anything expires; the models predict;
then the test waits for the coordinator and compares with OffsetFetch and with the tombstones it
wrote.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.views.candidates import cleanup_candidates
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection
from tests.models.conftest import run_models

CHECK_INTERVAL = timedelta(seconds=1)
SLACK = timedelta(seconds=3)  # the coordinator's scheduling and the tombstone's append
TOPICS = ("judge-a", "judge-b", "judge-rx-1", "judge-other")
GROUPS = ("judge-empty", "judge-dropped", "judge-standalone", "judge-regex", "judge-tx", "judge-rerun")
# how long after the first snapshot the groups run again: more than a check interval and the
# slack, so that an expiry counted from that snapshot fails the timing test
RERUN_AFTER = timedelta(seconds=10)


def wait_for(condition, what: str, timeout_s: float = 60.0, consumer: Consumer | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        if consumer is not None:
            consumer.poll(0.2)
        else:
            time.sleep(0.2)


def member(bootstrap: str, group: str, protocol: str = "classic") -> Consumer:
    # The members kept alive are not polled while the models run and the broker judges: librdkafka
    # would leave the group after max.poll.interval.ms (5 min by default; a refresh on a loaded
    # machine takes longer), and Kafka would then expire what the test expects it to keep.
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "enable.auto.commit": False, "auto.offset.reset": "earliest", "max.poll.interval.ms": 3_600_000}
    if protocol == "classic":
        config["session.timeout.ms"] = 45000
    return Consumer(config)


def run_and_leave(bootstrap: str, group: str, offset: int) -> None:
    """A classic member joins, commits judge-a and leaves: Kafka writes the group Empty again."""
    consumer = member(bootstrap, group)
    consumer.subscribe(["judge-a"])
    wait_for(lambda: consumer.assignment(), f"{group} was assigned", consumer=consumer)
    commit(consumer, {("judge-a", 0): offset})
    consumer.close()


def commit(consumer: Consumer, offsets: dict[tuple[str, int], int]) -> None:
    consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """OffsetFetch of the group for every partition of the test's topics. read_uncommitted, so the
    fetch does not ask for stable offsets: with RequireStable the broker answers
    UNSTABLE_OFFSET_COMMIT while a transactional commit is open, and the client retries."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                       "isolation.level": "read_uncommitted"})
    try:
        answer = reader.committed([TopicPartition(t, 0) for t in TOPICS], timeout=30)
        return {(tp.topic, tp.partition): tp.offset for tp in answer if tp.offset >= 0}
    finally:
        reader.close()


@pytest.fixture(scope="module")
def judged(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("judge")
    overrides = {"offsets.retention.minutes": "1",
                 "offsets.retention.check.interval.ms": str(int(CHECK_INTERVAL.total_seconds() * 1000))}
    with EmbeddedBroker(folder / "broker", overrides=overrides) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap})
        for topic in TOPICS:
            for index in range(5):
                producer.produce(topic, value=b"%d" % index)
        assert producer.flush(30) == 0
        keep = []  # clients that must stay alive until the broker has judged
        connection = KafkaConnection(bootstrap_servers=bootstrap)
        lake = lake_for_models(folder / "lake")

        # The first snapshot sees judge-rerun Empty and the standalone committer listed.
        run_and_leave(bootstrap, "judge-rerun", 1)
        standalone = Consumer({"bootstrap.servers": bootstrap, "group.id": "judge-standalone",
                               "enable.auto.commit": False})
        commit(standalone, {("judge-a", 0): 3})
        snapshot_cluster(connection, lake, emit=lambda line: None)
        first_snapshot = time.monotonic()

        # The regex member first: Kafka resolves a regular expression asynchronously.
        regex = member(bootstrap, "judge-regex", "consumer")
        regex.subscribe(["^judge-rx-.*"])
        keep.append(regex)
        wait_for(lambda: regex.assignment(), "judge-regex was assigned its topics", consumer=regex)
        commit(regex, {("judge-rx-1", 0): 1, ("judge-other", 0): 1})

        empty = member(bootstrap, "judge-empty")
        empty.subscribe(["judge-a"])
        wait_for(lambda: empty.assignment(), "judge-empty was assigned", consumer=empty)
        commit(empty, {("judge-a", 0): 1})
        empty.close()  # leaves: Kafka writes the Empty group record

        dropped = member(bootstrap, "judge-dropped")
        dropped.subscribe(["judge-a", "judge-b"])
        wait_for(lambda: len(dropped.assignment()) == 2, "judge-dropped was assigned both", consumer=dropped)
        commit(dropped, {("judge-a", 0): 2, ("judge-b", 0): 2})
        dropped.subscribe(["judge-a"])
        wait_for(lambda: [tp.topic for tp in dropped.assignment()] == ["judge-a"], "judge-dropped re-subscribed",
                 consumer=dropped)
        commit(dropped, {("judge-a", 0): 3})
        keep.append(dropped)

        time.sleep(max(0.0, first_snapshot + RERUN_AFTER.total_seconds() - time.monotonic()))
        commit(standalone, {("judge-a", 0): 4})
        standalone.close()
        run_and_leave(bootstrap, "judge-rerun", 2)

        transactional = Consumer({"bootstrap.servers": bootstrap, "group.id": "judge-tx", "enable.auto.commit": False})
        commit(transactional, {("judge-a", 0): 1})
        tx_producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "judge-tx-producer",
                                "transaction.timeout.ms": 900_000})
        tx_producer.init_transactions(30)
        tx_producer.begin_transaction()
        tx_producer.send_offsets_to_transaction([TopicPartition("judge-a", 0, 2)],
                                                transactional.consumer_group_metadata(), 30)
        tx_producer.flush(30)

        ingest_offsets_topic(connection, lake, emit=lambda line: None)
        snapshot_cluster(connection, lake, emit=lambda line: None)
        before = {group: committed(bootstrap, group) for group in GROUPS}
        run_models(spark, lake, as_of=datetime.now(timezone.utc))
        # what a plan would delete now, whatever the idle time: Kafka would accept DeleteGroups of
        # every Empty group, the standalone committer's included
        deletable = {row["group_id"] for row in cleanup_candidates(lake, idle_hours=0).group_deletes}
        predictions = {(row["group_id"], row["topic"], row["partition_id"]): row
                       for row in lake.read_arrow("expirable_offsets").to_pylist() if row["group_id"] in GROUPS}

        # Wait until every predicted expiration is past by two check intervals.
        due = [row["expires_at"] for row in predictions.values() if row["expires_at"] is not None]
        assert due, "the models predicted no expiration at all"
        wait_s = (max(due) + 2 * CHECK_INTERVAL + SLACK - datetime.now(timezone.utc)).total_seconds()
        time.sleep(max(wait_s, 0))
        after = {group: committed(bootstrap, group) for group in GROUPS}
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
        tombstones = {(row["group"], row["topic"], row["partition"]): row["source_timestamp"]
                      for row in lake.read_arrow("offset_commit_records").to_pylist() if row["tombstone"]}
        group_tombstones = {row["group"] for row in lake.read_arrow("group_metadata_records").to_pylist()
                            if row["tombstone"]}
        tx_producer.abort_transaction(30)
        for client in (*keep, transactional):
            client.close()
        yield {"predictions": predictions, "before": before, "after": after, "tombstones": tombstones,
               "group_tombstones": group_tombstones, "deletable": deletable}


def test_the_models_name_each_offsets_rule(judged):
    rules = {key: row["rule"] for key, row in judged["predictions"].items()}
    assert rules == {
        ("judge-empty", "judge-a", 0): "empty_group",
        ("judge-dropped", "judge-a", 0): "not_eligible",
        ("judge-dropped", "judge-b", 0): "unsubscribed_topic",
        ("judge-standalone", "judge-a", 0): "standalone",
        ("judge-regex", "judge-rx-1", 0): "not_eligible",
        ("judge-regex", "judge-other", 0): "kip848_unsubscribed_topic",
        ("judge-tx", "judge-a", 0): "not_eligible",
        ("judge-rerun", "judge-a", 0): "empty_group",
    }
    assert judged["predictions"][("judge-tx", "judge-a", 0)]["not_eligible_reason"] == "pending transactional commit"
    assert {row["retention_minutes"] for row in judged["predictions"].values()} == {1}


def test_exactly_the_predicted_offsets_are_gone_and_the_rest_stay(judged):
    before, after = judged["before"], judged["after"]
    for (group, topic, partition), row in judged["predictions"].items():
        key = (topic, partition)
        assert key in before[group], f"{group} {key} was committed before the wait"
        if row["rule"] == "not_eligible":
            assert after[group].get(key) == before[group][key], f"Kafka kept {group} {key}, as predicted"
        else:
            assert key not in after[group], f"Kafka expired {group} {key} ({row['rule']}), as predicted"


def test_each_expiration_came_no_earlier_than_predicted_and_within_a_check_interval(judged):
    tombstones = judged["tombstones"]
    for key, row in judged["predictions"].items():
        if row["rule"] == "not_eligible":
            assert key not in tombstones, f"{key} must not be tombstoned"
            continue
        written = tombstones[key]
        assert row["expires_at"] <= written, f"{key} expired at {written}, before {row['expires_at']}"
        assert written <= row["expires_at"] + CHECK_INTERVAL + SLACK, f"{key} expired late: {written}"


def test_an_empty_group_whose_offsets_all_expired_is_deleted(judged):
    # GroupMetadataManager deletes an Empty group once cleanupExpiredOffsets removed its last offset
    assert "judge-empty" in judged["group_tombstones"]
    assert "judge-dropped" not in judged["group_tombstones"]


def test_a_plan_deletes_no_standalone_committer_whose_offsets_kafka_keeps(judged):
    # judge-standalone is Empty (Kafka would accept DeleteGroups) and was listed by the first
    # snapshot, but its offset is not past Kafka's expiry; the Empty classic groups may go
    assert "judge-standalone" not in judged["deletable"]
    assert {"judge-empty", "judge-rerun"} <= judged["deletable"]
