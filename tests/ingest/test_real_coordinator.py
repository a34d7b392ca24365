"""Ingest of what Kafka's own group coordinator writes into `__consumer_offsets`, for groups made
by real clients: a classic group that goes Empty, a KIP-848 group, a standalone committer and a
transactional committer."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.ingest.offsets_topic import IngestError, ingest_offsets_topic
from offsets_platform.lake import Lake
from tests.ingest.conftest import produce

TOPIC = "coordinator-orders"


@pytest.fixture(scope="module")
def orders(connection) -> str:
    """A 2-partition topic with 10 messages in each partition."""
    bootstrap = connection.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(20):
        producer.produce(TOPIC, value=b"order-%d" % index, partition=index % 2)
    assert producer.flush(30) == 0
    return bootstrap


def consume_and_commit(bootstrap: str, group: str, protocol: str, offsets: dict[int, int]) -> None:
    """Join `group` with `protocol` ("classic" or "consumer"), read until every partition was
    assigned, commit `offsets` (partition -> next offset) and leave the group."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **({"session.timeout.ms": 6000} if protocol == "classic" else {})})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert len(consumer.assignment()) == 2, f"{group} was not assigned both partitions"
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)
    consumer.close()  # leaves the group: a classic group writes an Empty group record


def test_bronze_holds_the_records_kafka_wrote_for_real_groups(orders, connection, tmp_path):
    consume_and_commit(orders, "classic-orders", "classic", {0: 3, 1: 4})
    consume_and_commit(orders, "kip848-orders", "consumer", {0: 7, 1: 8})
    standalone = Consumer({"bootstrap.servers": orders, "group.id": "standalone-orders", "enable.auto.commit": False})
    standalone.commit(offsets=[TopicPartition(TOPIC, 0, 9)], asynchronous=False)
    standalone.close()

    lake = Lake(tmp_path / "lake")
    result = ingest_offsets_topic(connection, lake, emit=lambda line: None)
    assert result.records_read > 0

    commits = {(row["group"], row["topic"], row["partition"]): row["offset"]
               for row in lake.read_arrow("offset_commit_records").to_pylist() if not row["tombstone"]}
    assert commits == {("classic-orders", TOPIC, 0): 3, ("classic-orders", TOPIC, 1): 4,
                       ("kip848-orders", TOPIC, 0): 7, ("kip848-orders", TOPIC, 1): 8,
                       ("standalone-orders", TOPIC, 0): 9}

    classic = [row for row in lake.read_arrow("group_metadata_records").sort_by("source_offset").to_pylist()
               if row["group"] == "classic-orders"]
    assert [row["member_count"] for row in classic][-1] == 0, "the group went Empty when its member left"
    assert any(row["member_count"] == 1 and row["protocol_type"] == "consumer" for row in classic)
    members = [row for row in lake.read_arrow("group_metadata_members").to_pylist() if row["group"] == "classic-orders"]
    assert members and all(row["subscribed_topics"] == [TOPIC] for row in members)

    kip848 = [row for row in lake.read_arrow("consumer_group_records").to_pylist() if row["group"] == "kip848-orders"]
    types = {row["record_type"] for row in kip848}
    assert {"consumer_group_metadata", "consumer_group_member_metadata"} <= types
    assert any(row["subscribed_topic_names"] == [TOPIC] for row in kip848
               if row["record_type"] == "consumer_group_member_metadata" and not row["tombstone"])
    # Kafka 4.3 writes no record type the codec does not know for these groups.
    assert lake.count("rejected_records") == 0


def test_a_transactional_commit_is_pending_until_its_transaction_commits(orders, connection, tmp_path):
    producer = Producer({"bootstrap.servers": orders, "transactional.id": "orders-copier"})
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": orders, "group.id": "tx-orders", "enable.auto.commit": False})
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(TOPIC, 1, 6)], consumer.consumer_group_metadata(), 30)
    producer.flush(30)

    lake = Lake(tmp_path / "lake")
    first = ingest_offsets_topic(connection, lake, emit=lambda line: None)
    tx_commits = [row for row in lake.read_arrow("offset_commit_records").to_pylist() if row["group"] == "tx-orders"]
    assert tx_commits == [], "read_committed must not see a commit of an open transaction"
    assert first.pending_commits == 1
    assert [(r["group"], r["topic"], r["partition"]) for r in lake.read_arrow("pending_offset_commits").to_pylist()] \
        == [("tx-orders", TOPIC, 1)]

    producer.commit_transaction(30)
    consumer.close()
    # Kafka answers EndTxn once PrepareCommit is in the transaction log and writes the commit
    # markers afterwards (TransactionCoordinator.endTransaction, "we can respond to the client
    # immediately and continue to write the txn markers"): until the marker lands in
    # __consumer_offsets the commit is still pending, so ingest again until it is not.
    deadline = time.monotonic() + 30
    while ingest_offsets_topic(connection, lake, emit=lambda line: None).pending_commits \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    tx_commits = [row for row in lake.read_arrow("offset_commit_records").to_pylist() if row["group"] == "tx-orders"]
    assert [(r["partition"], r["offset"]) for r in tx_commits] == [(1, 6)]
    assert lake.count("pending_offset_commits") == 0


def test_a_lake_holds_one_log(mirror_connection, connection, tmp_path):
    produce(mirror_connection, [(0, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", None, 1_790_000_000_000)])
    lake = Lake(tmp_path / "lake")
    ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    with pytest.raises(IngestError, match=f"holds records of topic {mirror_connection.offsets_topic}"):
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
