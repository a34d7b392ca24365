"""The embedded broker is Apache Kafka: it starts, answers real clients, takes config overrides,
reports a failed start with its own log, and leaves nothing running."""

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from offsets_platform.broker.embedded import BrokerStartFailed, EmbeddedBroker, PortInUse, free_loopback_port
from offsets_platform.kafka.errors import BrokerUnreachable, wait_until_reachable
from offsets_platform.broker.jvm import kafka_version
from offsets_platform.kafka.offsets_topic import OffsetsTopicReader
from offsets_platform.settings import KafkaConnection


def broker_config(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")  # the embedded broker's node.id
    return admin.describe_configs([resource])[resource].result(30)[name].value


def java_processes_under(folder) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if "kafka.Kafka" in (p.info["cmdline"] or []) and str(folder) in " ".join(p.info["cmdline"] or [])]


def test_broker_is_apache_kafka_answers_and_stops_by_its_own_pid(tmp_path):
    with EmbeddedBroker(tmp_path / "b", overrides={"offsets.retention.minutes": "7"}) as broker:
        pid = broker.pid
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
        # ready means the coordinator's topic exists with Kafka's default 50 partitions
        assert len(metadata.topics["__consumer_offsets"].partitions) == 50
        assert broker_config(broker.bootstrap_servers, "offsets.retention.minutes") == "7"
        assert kafka_version().startswith("4.")
        assert psutil.Process(pid).cmdline()[-2:] == ["kafka.Kafka", str(tmp_path / "b" / "server.properties")]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert (tmp_path / "b" / "server.log").stat().st_size > 0


def test_a_second_broker_on_the_same_folder_keeps_the_cluster_and_a_failed_start_shows_its_log(tmp_path):
    with EmbeddedBroker(tmp_path / "b") as first:
        admin = AdminClient({"bootstrap.servers": first.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(30)
    with EmbeddedBroker(tmp_path / "b") as second:
        assert "kept" in AdminClient({"bootstrap.servers": second.bootstrap_servers}).list_topics(timeout=10).topics

    # On the formatted folder, a config Kafka rejects makes the broker itself exit.
    with pytest.raises(BrokerStartFailed) as failure:
        EmbeddedBroker(tmp_path / "b", overrides={"log.retention.check.interval.ms": "0"}).start()
    message = str(failure.value)
    assert "the broker exited" in message and f"last lines of {tmp_path / 'b'}" in message
    assert "log.retention.check.interval.ms" in message
    assert not java_processes_under(tmp_path)


def test_a_port_in_use_is_refused_with_its_number(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is already in use"):
            EmbeddedBroker(tmp_path / "b", port=port).start()
    assert not java_processes_under(tmp_path)


def test_a_controller_port_taken_before_the_broker_binds_it_is_chosen_again(tmp_path, monkeypatch):
    import offsets_platform.broker.embedded as embedded

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        offered = [taken.getsockname()[1]]  # the first controller port offered is in use
        monkeypatch.setattr(embedded, "free_loopback_port", lambda: offered.pop() if offered else free_loopback_port())
        with EmbeddedBroker(tmp_path / "b", port=free_loopback_port()) as broker:
            assert broker.running
            assert "Address already in use" in broker.log_file.read_text()  # the first start lost the race


def test_a_config_kafka_rejects_stops_the_first_start_with_the_reason(tmp_path):
    broker = EmbeddedBroker(tmp_path / "b", overrides={"offsets.topic.num.partitions": "0"})
    with pytest.raises(BrokerStartFailed) as failure:
        broker.start()
    assert "formatting its data folder failed" in str(failure.value)
    assert "offsets.topic.num.partitions" in str(failure.value)
    assert not java_processes_under(tmp_path)


def test_the_broker_command_prints_ready_and_exits_0_on_sigterm(tmp_path):
    port = free_loopback_port()
    command = [sys.executable, "-m", "offsets_platform.cli", "broker", "--port", str(port),
               "--data-dir", str(tmp_path / "cli"), "--override", "group.consumer.session.timeout.ms=45000"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            lines.append(line)
            if line.startswith("ready: ") or not line:
                break
        assert lines[-1].strip() == f"ready: 127.0.0.1:{port}", "".join(lines)
        wait_until_reachable(f"127.0.0.1:{port}", timeout_s=5)
        assert AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10).brokers
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert "broker stopped" in process.stdout.read()
    assert not java_processes_under(tmp_path)


def test_the_broker_command_refuses_a_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "offsets_platform.cli", "broker", "--port", str(port),
                                 "--data-dir", str(tmp_path / "cli")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr


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


def test_a_broker_whose_starter_is_killed_stops_too(tmp_path):
    # SIGKILL leaves the starting process no chance to clean up; the broker must still go. The
    # starter ignores SIGTERM, as a Dagster process started in the background does (Dagster
    # gives SIGTERM SIGINT's handler, which a background job ignores): the broker must not.
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "from offsets_platform.broker.embedded import EmbeddedBroker\n"
              f"broker = EmbeddedBroker({str(tmp_path / 'b')!r}).start()\n"
              "print(broker.pid, flush=True)\n"
              "time.sleep(600)\n")
    starter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        broker_pid = int(starter.stdout.readline())
        assert psutil.pid_exists(broker_pid)
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + 60
    while psutil.pid_exists(broker_pid) and psutil.Process(broker_pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the broker outlived the process that started it"
        time.sleep(0.2)
