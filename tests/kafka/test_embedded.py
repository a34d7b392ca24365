"""The embedded broker starts, answers real clients, and leaves nothing running."""

import time

import psutil
import pytest
from confluent_kafka.admin import AdminClient

from offsets_platform.kafka.embedded import EmbeddedBroker, free_loopback_port
from offsets_platform.kafka.errors import BrokerUnreachable, wait_until_reachable
from offsets_platform.kafka.offsets_topic import OffsetsTopicReader
from offsets_platform.settings import KafkaConnection


def test_broker_answers_and_stops_by_its_own_pid(tmp_path):
    with EmbeddedBroker(tmp_path / "b") as broker:
        pid = broker.pid
        topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=5).topics
        assert "__consumer_offsets" in topics
        assert psutil.pid_exists(pid)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_unreachable_address_is_named_within_bounded_time():
    port = free_loopback_port()
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as error:
        wait_until_reachable(f"127.0.0.1:{port}", timeout_s=2)
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in str(error.value)
    assert "Check that the broker is running" in str(error.value)


def test_reader_on_a_down_broker_fails_with_the_address(tmp_path):
    port = free_loopback_port()
    reader = OffsetsTopicReader(KafkaConnection(bootstrap_servers=f"127.0.0.1:{port}"), timeout_s=2)
    with pytest.raises(BrokerUnreachable, match=f"127.0.0.1:{port}"):
        reader.plan({})
