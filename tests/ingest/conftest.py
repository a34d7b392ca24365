"""Fixtures for ingest tests: the module's broker, a fresh topic laid out like `__consumer_offsets`
per test, and a way to write hand-made coordinator records into it.

A real broker's `__consumer_offsets` is written by its own group coordinator only, so records
made by hand (every record type, malformed bytes, transactions) go to a regular topic of the same
layout, which ingest reads when the connection's `offsets_topic` names it.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.settings import KafkaConnection
from proving_ground.workload import create_history_topic


def produce(connection: KafkaConnection, records, transactional_id: str | None = None) -> list[tuple[int, int]]:
    """Write (partition, key, value, timestamp_ms) records to the connection's offsets topic;
    returns their (partition, offset) in the order the records were given."""
    config = {"bootstrap.servers": connection.bootstrap_servers, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    records = list(records)
    delivered: list[tuple[int, int] | None] = [None] * len(records)

    def on_delivery(index, error, message):
        assert error is None, error
        delivered[index] = (message.partition(), message.offset())

    for index, (partition, key, value, timestamp_ms) in enumerate(records):
        producer.produce(connection.offsets_topic, key=key, value=value, partition=partition, timestamp=timestamp_ms,
                         on_delivery=lambda error, message, index=index: on_delivery(index, error, message))
    assert producer.flush(30) == 0, "records still undelivered after 30 s"
    return delivered


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of its own for one test (about 3-5 s to start)."""
    with EmbeddedBroker(tmp_path / "broker") as broker:
        yield broker


@pytest.fixture
def fresh_connection(fresh_broker) -> KafkaConnection:
    return KafkaConnection(bootstrap_servers=fresh_broker.bootstrap_servers)


@pytest.fixture
def mirror_connection(connection) -> KafkaConnection:
    """The module's broker, reading a new, empty 50-partition topic of its own."""
    topic = f"offsets-mirror-{uuid.uuid4().hex[:8]}"
    create_history_topic(connection.bootstrap_servers, topic)
    return KafkaConnection(bootstrap_servers=connection.bootstrap_servers, offsets_topic=topic)
