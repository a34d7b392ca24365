"""KIP-490 losses between two snapshots, on the real broker.

Between two snapshots DeleteRecords moves the log start of `kip490-reset` from 0 to 60 while
`kip490-holder` stays at 40 and `kip490-resetter` commits 90, past the deleted range, as a
consumer that reset after the deletion would. `kip490-one-partition` holds an offset on partition
0 of `kip490-pair` only, whose partition 1 loses 50 messages.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.models.project import lake_for_models
from tests.models.conftest import rows_by, run_models

MESSAGES = 100


def commit(bootstrap: str, group: str, topic: str, partition: int, offset: int) -> None:
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
    finally:
        committer.close()


@pytest.fixture(scope="module")
def losses(spark, broker, connection, tmp_path_factory):
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("kip490-reset", 1, 1), NewTopic("kip490-pair", 2, 1)]
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
    snapshot_cluster(connection, lake, emit=lambda line: None)
    ingest_offsets_topic(connection, lake, emit=lambda line: None)
    run_models(spark, lake, as_of=datetime.now(timezone.utc))
    return rows_by(lake, "unconsumed_messages", "group_id", "topic", "partition_id")  # one move each


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
