"""produce.py against the real embedded broker (Apache Kafka), and against nothing at all."""

import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, TopicPartition

from offsets_platform.kafka.errors import BrokerUnreachable
from proving_ground.workload import HISTORY_TOPIC, create_history_topic, generate, produce_records

START_MS = 1_700_000_000_000


def _consume_all(address: str, expected: int, timeout_s: float = 60.0) -> list:
    consumer = Consumer({"bootstrap.servers": address, "group.id": "workload-test-reader",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        partitions = consumer.list_topics(HISTORY_TOPIC, timeout=10).topics[HISTORY_TOPIC].partitions
        assert len(partitions) == 50  # the layout of __consumer_offsets
        consumer.assign([TopicPartition(HISTORY_TOPIC, p, 0) for p in partitions])  # no group join, no commits
        messages, deadline = [], time.monotonic() + timeout_s
        while len(messages) < expected and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                assert message.error() is None, message.error()
                messages.append(message)
        return messages
    finally:
        consumer.close()


@pytest.mark.integration
def test_produced_records_read_back_identically(bootstrap):
    records = list(generate(7, 5_000, start_ms=START_MS))
    seen = []
    create_history_topic(bootstrap)
    result = produce_records(bootstrap, records, progress=seen.append, progress_every=2_000)
    assert (result.records, result.tombstones) == (5_000, sum(r.value is None for r in records))
    assert result.partitions == len({r.partition for r in records})
    assert seen == [2_000, 4_000, 5_000]

    messages = _consume_all(bootstrap, len(records))
    assert len(messages) == len(records)
    got, want = defaultdict(list), defaultdict(list)
    for m in messages:
        got[m.partition()].append((m.key(), m.value(), m.timestamp()[1]))
    for r in records:
        want[r.partition].append((r.key, r.value, r.timestamp_ms))
    assert got == want  # same keys, values (tombstones included), timestamps, and order per partition


def test_generated_history_never_goes_into_the_coordinators_own_topic(bootstrap):
    with pytest.raises(ValueError, match="never goes into a real coordinator's __consumer_offsets"):
        produce_records(bootstrap, generate(1, 10, start_ms=START_MS), topic="__consumer_offsets")


def test_unreachable_broker_fails_fast_naming_the_address(closed_port):
    address = f"127.0.0.1:{closed_port}"
    timeout_s = 2.0
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as error:
        produce_records(address, generate(1, 100, start_ms=START_MS), connect_timeout_s=timeout_s)
    elapsed = time.monotonic() - started
    assert address in str(error.value)
    assert error.value.bootstrap_servers == address
    assert elapsed < timeout_s + 3, elapsed  # the connect timeout, not librdkafka's message timeout

