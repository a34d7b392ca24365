"""A broker lost during ingest's open-transaction check (offsets_platform.kafka.open_transactions):
the run ends in BrokerUnreachable naming the address, at once rather than after the check's
15 s timeout, never with a partial answer; the lake is exactly as before the run, and a rerun
once the broker is back on the same data folder completes.

Each test has a broker of its own (it is stopped) and a mirror topic that already went through
one ingest, with new records since, so the run would have written had the check succeeded.
"""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, Producer

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.codec import encode
from offsets_platform.ingest import offsets_topic as ingest_module
from offsets_platform.ingest.offsets_topic import CHECKPOINTS, PENDING, ingest_offsets_topic
from offsets_platform.kafka import open_transactions
from offsets_platform.kafka.errors import BrokerUnreachable
from offsets_platform.kafka.open_transactions import read_past_stable_offsets
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.settings import KafkaConnection
from proving_ground.workload import create_history_topic
from tests.ingest.conftest import produce

pytestmark = pytest.mark.integration

T0 = 1_790_000_000_000
CHECK_TIMEOUT_S = 15.0  # read_past_stable_offsets' default


def commits(first_offset: int, count: int) -> list:
    return [(5, encode.offset_commit_key("lost", "orders", n % 3), encode.offset_commit_value(n, T0 + n), T0 + n)
            for n in range(first_offset, first_offset + count)]


def lake_state(lake: Lake) -> dict[str, tuple[int, int]]:
    """Each ingest table's Delta version and row count."""
    return {name: (lake.version(name), lake.count(name)) for name in (*RECORD_TABLES, CHECKPOINTS, PENDING)}


@pytest.fixture
def ingested_once(fresh_broker, tmp_path):
    """(broker, connection, lake): one ingest done, three commits produced since."""
    topic = "offsets-mirror-lost"
    create_history_topic(fresh_broker.bootstrap_servers, topic)
    connection = KafkaConnection(bootstrap_servers=fresh_broker.bootstrap_servers, offsets_topic=topic)
    produce(connection, commits(0, 5))
    lake = Lake(tmp_path / "lake")
    ingest_offsets_topic(connection, lake, emit=lambda line: None)
    produce(connection, commits(5, 3))
    return fresh_broker, connection, lake


def assert_clear_error(error: BrokerUnreachable, connection: KafkaConnection) -> None:
    assert f"Kafka at {connection.bootstrap_servers} did not answer: the open-transaction check: " in str(error)
    assert "Check that the broker is running" in str(error)


def rerun_on_the_same_broker_data(broker: EmbeddedBroker, connection: KafkaConnection, lake: Lake):
    with EmbeddedBroker(broker.data_dir, port=broker.port) as again:
        assert again.bootstrap_servers == connection.bootstrap_servers
        return ingest_offsets_topic(connection, lake, emit=lambda line: None)


def test_a_broker_gone_before_the_check_fails_at_once_and_changes_nothing(ingested_once, monkeypatch):
    broker, connection, lake = ingested_once
    before = lake_state(lake)
    real_check = ingest_module.read_past_stable_offsets

    def broker_stops_first(*args, **kwargs):
        broker.stop()
        started = time.monotonic()
        try:
            return real_check(*args, **kwargs)
        finally:
            timings.append(time.monotonic() - started)

    timings: list[float] = []
    monkeypatch.setattr(ingest_module, "read_past_stable_offsets", broker_stops_first)
    with pytest.raises(BrokerUnreachable) as failure:
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
    assert_clear_error(failure.value, connection)
    assert timings[0] < 2.0, f"a refused connection took {timings[0]:.1f} s to fail"
    assert lake_state(lake) == before

    monkeypatch.setattr(ingest_module, "read_past_stable_offsets", real_check)
    rerun = rerun_on_the_same_broker_data(broker, connection, lake)
    assert rerun.rows_written["offset_commit_records"] == 3
    assert lake.count("offset_commit_records") == before["offset_commit_records"][1] + 3


def test_a_broker_lost_while_the_check_reads_is_an_error_not_a_partial_answer(ingested_once, monkeypatch):
    broker, connection, lake = ingested_once
    # An open transaction puts records past the last stable offset, which the check then reads.
    producer = Producer({"bootstrap.servers": connection.bootstrap_servers, "transactional.id": "lost-tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    (_, key, value, at), = commits(100, 1)
    producer.produce(connection.offsets_topic, key=key, value=value, partition=5, timestamp=at)
    assert producer.flush(30) == 0
    before = lake_state(lake)

    class BrokerStopsBeforeTheAssignment(Consumer):
        # The check has read the high watermarks; the broker stops before the assignment so that
        # no fetch can win the race against the stop (a broker shutting down still serves them).
        def assign(self, partitions):
            broker.stop()
            stopped_at.append(time.monotonic())
            super().assign(partitions)

    stopped_at: list[float] = []
    monkeypatch.setattr(open_transactions, "Consumer", BrokerStopsBeforeTheAssignment)
    with pytest.raises(BrokerUnreachable) as failure:
        ingest_offsets_topic(connection, lake, emit=lambda line: None)
    failed_after = time.monotonic() - stopped_at[0]
    assert_clear_error(failure.value, connection)
    assert failed_after < CHECK_TIMEOUT_S / 2, f"the lost broker was reported after {failed_after:.1f} s"
    assert lake_state(lake) == before

    monkeypatch.setattr(open_transactions, "Consumer", Consumer)
    rerun = rerun_on_the_same_broker_data(broker, connection, lake)
    assert rerun.rows_written["offset_commit_records"] == 3
    assert rerun.pending_commits == 1, "the transaction is still open after the restart"


def test_a_listener_that_never_answers_kafka_is_an_error_within_the_timeout():
    with socket.socket() as silent:  # accepts TCP (the kernel does), never speaks Kafka
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = "127.0.0.1:%d" % silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(BrokerUnreachable) as failure:
            read_past_stable_offsets(KafkaConnection(bootstrap_servers=address), {0: 0, 1: 0}, timeout_s=2.0)
    assert time.monotonic() - started < 2.0 + 3.0
    assert f"Kafka at {address} did not answer: the open-transaction check: " in str(failure.value)
