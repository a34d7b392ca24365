"""The codec on bytes Kafka's own group coordinator wrote: every record of `__consumer_offsets`
decodes, with no rejection, after a KIP-848 group subscribed by regex, a share group (Kafka's
console share consumer) and a streams group (Kafka Streams' WordCountDemo) ran on a real broker."""

from __future__ import annotations

import time
from contextlib import contextmanager

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.codec import decode_batch
from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.processes import start_child, stop_child
from offsets_platform.broker.jvm import java_command

OFFSETS_TOPIC = "__consumer_offsets"
PARTITIONS = 50  # offsets.topic.num.partitions' default


def read_offsets_topic(bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    """Every committed record of `__consumer_offsets`, read raw from all its partitions."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "codec-raw-reader",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    try:
        ends = {}
        for p in range(PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=10)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, 0) for p in ends])
        records, done, deadline = [], set(), time.monotonic() + 60
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    done.add(msg.partition())
                    continue
                raise AssertionError(msg.error())
            if msg.key() is not None or msg.value() is not None:  # control records are not delivered
                records.append((msg.key(), msg.value()))
        assert len(done) == len(ends), "did not reach the end of every partition"
        return records
    finally:
        consumer.close()


def decoded_rows(bootstrap: str):
    records = read_offsets_topic(bootstrap)
    batch = decode_batch(pa.array([k for k, _ in records], pa.binary()), pa.array([v for _, v in records], pa.binary()))
    return batch, [row for row in batch.consumer_group_records.to_pylist()]


@contextmanager
def jvm(main_class: str, args: list[str], log_path):
    """A Kafka program in its own session, ended by its process group id (SIGTERM, then SIGKILL)."""
    process = start_child(java_command(main_class, args, heap_mb=128), log_path)
    try:
        yield process
    finally:
        stop_child(process, grace_s=20)


def wait_for_record_type(bootstrap: str, record_type: str, process, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the program exited with {process.returncode}"
        if any(row["record_type"] == record_type for row in decoded_rows(bootstrap)[1]):
            return
        time.sleep(2)
    raise AssertionError(f"no {record_type} record within {timeout_s:.0f} s")


def test_every_record_kafka_writes_decodes(tmp_path):
    with EmbeddedBroker(tmp_path / "b") as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = ["clk-web", "clk-app", "other", "alerts", "streams-plaintext-input", "streams-wordcount-output"]
        for future in admin.create_topics([NewTopic(t, 2 if t.startswith("clk") else 1, 1) for t in topics]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(10):
            producer.produce("alerts", value=b"alert %d" % i)
            producer.produce("streams-plaintext-input", value=b"hello kafka streams %d" % i)
        assert producer.flush(30) == 0

        # A KIP-848 group subscribed by regex: the coordinator resolves it (type 16).
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "regex-group", "group.protocol": "consumer",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["^clk-.*"])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert {tp.topic for tp in consumer.assignment()} == {"clk-web", "clk-app"}
        consumer.commit(offsets=[TopicPartition("clk-web", 0, 0)], asynchronous=False)
        consumer.close()

        # A share group (KIP-932) and a streams group (KIP-1071), by Kafka's own Java clients.
        with jvm("org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                 ["--bootstrap-server", bootstrap, "--topic", "alerts", "--group", "share-group"],
                 tmp_path / "share.log") as share:
            wait_for_record_type(bootstrap, "share_group_current_member_assignment", share)
        properties = tmp_path / "wordcount.properties"
        properties.write_text(f"bootstrap.servers={bootstrap}\napplication.id=wordcount-app\n"
                              f"group.protocol=streams\nstate.dir={tmp_path / 'state'}\ncommit.interval.ms=500\n")
        with jvm("org.apache.kafka.streams.examples.wordcount.WordCountDemo", [str(properties)],
                 tmp_path / "streams.log") as streams:
            wait_for_record_type(bootstrap, "streams_group_current_member_assignment", streams)

        batch, rows = decoded_rows(bootstrap)

    assert batch.rejected.num_rows == 0, batch.rejected.to_pylist()
    types = {row["record_type"] for row in rows}
    assert {"consumer_group_regular_expression", "share_group_metadata", "share_group_member_metadata",
            "streams_group_metadata", "streams_group_topology", "streams_group_member_metadata"} <= types, types

    regex = [row for row in rows if row["record_type"] == "consumer_group_regular_expression" and not row["tombstone"]]
    # The key holds the regex as the client sent it: librdkafka joins its regexes as "(r1)|(r2)".
    assert regex and regex[-1]["group"] == "regex-group" and regex[-1]["regular_expression"] == "(^clk-.*)"
    assert sorted(regex[-1]["resolved_topics"]) == ["clk-app", "clk-web"]

    share = [row for row in rows if row["record_type"] == "share_group_member_metadata" and not row["tombstone"]]
    assert share[0]["group"] == "share-group" and share[0]["subscribed_topic_names"] == ["alerts"]

    topology = [row for row in rows if row["record_type"] == "streams_group_topology" and not row["tombstone"]]
    assert topology[-1]["group"] == "wordcount-app"
    # WordCountDemo reads its input topic, then its own repartition topic (groupBy before count)
    assert "streams-plaintext-input" in topology[-1]["source_topics"]
    assert any(t.startswith("wordcount-app-") and t.endswith("-repartition") for t in topology[-1]["source_topics"])
