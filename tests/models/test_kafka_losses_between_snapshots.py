"""KIP-490 losses between two snapshots, on the real broker.

Between two snapshots DeleteRecords moves the log start of `kip490-reset` from 0 to 60 while
`kip490-holder` stays at 40 and `kip490-resetter` commits 90, past the deleted range, as a
consumer that reset after the deletion would. `kip490-one-partition` holds an offset on partition
0 of `kip490-pair` only, whose partition 1 loses 50 messages.

And the retention forecast: just before the second snapshot, records a mirror copied land in
`kip490-mirrored` (CreateTime) with timestamps so old that retention.ms runs out for them
seconds later; `kip490-mirror-reader` has read none. A watcher sees when Kafka deletes them while
the models run.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.models.project import lake_for_models
from tests.models.conftest import needed_for, rows_by, run_models

MESSAGES = 100
MIRROR_RETENTION_MS = 3_600_000
# The mirrored records' timestamps reach retention.ms this long after they are written: time for
# the second snapshot to see them, and Kafka deletes them while ingest and the models run.
MIRROR_DUE = timedelta(seconds=10)


def commit(bootstrap: str, group: str, topic: str, partition: int, offset: int) -> None:
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
    finally:
        committer.close()


class LogStartWatch(threading.Thread):
    """Asks a partition's log start every 0.1 s until it moves: when it was last asked and found
    unmoved, and when it was first found moved."""

    def __init__(self, bootstrap: str, topic: str, timeout_s: float = 120):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.timeout_s = bootstrap, topic, timeout_s
        self.last_unmoved_at: datetime | None = None
        self.moved_seen_at: datetime | None = None

    def run(self) -> None:
        watcher = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kip490-watcher"})
        try:
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline:
                asked_at = datetime.now(timezone.utc)
                log_start, _ = watcher.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10, cached=False)
                if log_start > 0:
                    self.moved_seen_at = datetime.now(timezone.utc)
                    return
                self.last_unmoved_at = asked_at
                time.sleep(0.1)
        finally:
            watcher.close()


@dataclass
class Judged:
    losses: dict
    forecast: dict
    mirrored_stamped_at: datetime
    deletion: LogStartWatch


@pytest.fixture(scope="module")
def judged(spark, broker, connection, tmp_path_factory) -> Judged:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("kip490-reset", 1, 1), NewTopic("kip490-pair", 2, 1),
              NewTopic("kip490-mirrored", 1, 1, config={"retention.ms": str(MIRROR_RETENTION_MS),
                                                        "message.timestamp.type": "CreateTime"})]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic, partitions in (("kip490-reset", 1), ("kip490-pair", 2)):
        for partition in range(partitions):
            for index in range(MESSAGES):
                producer.produce(topic, value=b"%d" % index, partition=partition)
    assert producer.flush(30) == 0
    commit(bootstrap, "kip490-holder", "kip490-reset", 0, 40)
    commit(bootstrap, "kip490-resetter", "kip490-reset", 0, 40)
    commit(bootstrap, "kip490-one-partition", "kip490-pair", 0, 10)

    lake = lake_for_models(tmp_path_factory.mktemp("kip490") / "lake")
    snapshot_cluster(connection, lake, emit=lambda line: None)
    deleted = admin.delete_records([TopicPartition("kip490-reset", 0, 60), TopicPartition("kip490-pair", 1, 50)])
    for future in deleted.values():
        future.result(30)
    commit(bootstrap, "kip490-resetter", "kip490-reset", 0, 90)
    # whole milliseconds, as Kafka keeps them
    stamped_at = (datetime.now(timezone.utc) + MIRROR_DUE - timedelta(milliseconds=MIRROR_RETENTION_MS)
                  ).replace(microsecond=0)
    for index in range(10):
        producer.produce("kip490-mirrored", value=b"%d" % index, partition=0,
                         timestamp=int(stamped_at.timestamp() * 1000))
    assert producer.flush(30) == 0
    commit(bootstrap, "kip490-mirror-reader", "kip490-mirrored", 0, 0)
    deletion = LogStartWatch(bootstrap, "kip490-mirrored")
    deletion.start()
    snapshot_cluster(connection, lake, emit=lambda line: None)
    ingest_offsets_topic(connection, lake, emit=lambda line: None)
    run_models(spark, lake, as_of=datetime.now(timezone.utc),
               select=needed_for("unconsumed_messages", "retention_forecast"))
    deletion.join()
    return Judged(rows_by(lake, "unconsumed_messages", "group_id", "topic", "partition_id"),  # one move each
                  rows_by(lake, "retention_forecast", "group_id", "topic"), stamped_at, deletion)


@pytest.fixture(scope="module")
def losses(judged) -> dict:
    return judged.losses


def test_a_group_that_held_its_offset_lost_exactly_the_deleted_messages_past_it(losses):
    holder = losses[("kip490-holder", "kip490-reset", 0)]
    assert (holder["lost_from_offset"], holder["lost_to_offset"]) == (40, 60)
    assert holder["count_lost"] == holder["count_lost_at_least"] == 20


def test_a_commit_past_the_deleted_range_before_the_next_snapshot_does_not_hide_the_loss(losses):
    resetter = losses[("kip490-resetter", "kip490-reset", 0)]
    assert (resetter["committed_offset_at_start"], resetter["committed_offset"]) == (40, 90)
    assert resetter["count_log_records_between"] == 1
    assert (resetter["count_lost"], resetter["count_lost_at_least"]) == (20, 0)


def test_a_group_is_not_charged_for_partitions_where_it_holds_no_offset(losses):
    assert not [key for key in losses if key[1] == "kip490-pair"]


def test_retention_deletes_records_when_their_create_time_is_retention_ms_old_as_forecast(judged):
    forecast = judged.forecast[("kip490-mirror-reader", "kip490-mirrored")]
    assert (forecast["message_timestamp_type"], forecast["timestamp_source"]) == ("CreateTime", "max_timestamp")
    expected = forecast["deletion_expected_at"]
    assert expected == judged.mirrored_stamped_at + timedelta(milliseconds=MIRROR_RETENTION_MS)
    deletion = judged.deletion
    assert deletion.moved_seen_at is not None, "Kafka did not delete the mirrored records"
    assert deletion.last_unmoved_at is not None, "the records were gone before the watcher first asked"
    # Kafka deletes a segment once now - its largest timestamp > retention.ms, at the next check
    # (log.retention.check.interval.ms is 1 s here): after the forecast, and soon after it; the
    # write time would have given them an hour
    assert deletion.last_unmoved_at < expected + timedelta(seconds=10) and deletion.moved_seen_at > expected
