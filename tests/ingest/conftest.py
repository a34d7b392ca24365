"""Fixtures for ingest tests: a fresh broker per test and a way to write coordinator records."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from offsets_platform.kafka.embedded import EmbeddedBroker
from offsets_platform.settings import KafkaConnection

OFFSETS_TOPIC = "__consumer_offsets"


def produce(bootstrap: str, records, transactional_id: str | None = None) -> list[tuple[int, int]]:
    """Write (partition, key, value, timestamp_ms) records; returns their (partition, offset)
    in the order the records were given."""
    config = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    records = list(records)
    delivered: list[tuple[int, int] | None] = [None] * len(records)

    def on_delivery(index, error, message):
        assert error is None, error
        delivered[index] = (message.partition(), message.offset())

    for index, (partition, key, value, timestamp_ms) in enumerate(records):
        producer.produce(OFFSETS_TOPIC, key=key, value=value, partition=partition, timestamp=timestamp_ms,
                         on_delivery=lambda error, message, index=index: on_delivery(index, error, message))
    assert producer.flush(30) == 0, "records still undelivered after 30 s"
    return delivered


@pytest.fixture
def fresh_broker(tmp_path):
    with EmbeddedBroker(tmp_path / "broker") as broker:
        yield broker


@pytest.fixture
def fresh_connection(fresh_broker) -> KafkaConnection:
    return KafkaConnection(bootstrap_servers=fresh_broker.bootstrap_servers)
