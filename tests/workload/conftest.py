"""Fixtures for the workload tests: a shared generated stream and a self-contained embedded broker.

The broker fixture starts noida-db (`noida-db start --only kafka`) on a free port with its own
data directory and stops its whole process group at the end: the `noida-db` script is a
Python wrapper that runs the real binary as a child, so stopping only the wrapper would leave
the broker running.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offsets_platform.codec import decode_record
from offsets_platform.workload import generate

START_MS = 1_700_000_000_000  # fixed, so every run of the suite sees the same bytes
BROKER_START_TIMEOUT_S = 30.0


@pytest.fixture(scope="session")
def records_20k() -> list:
    """20k records of seed 7 from a fixed start time."""
    return list(generate(7, 20_000, start_ms=START_MS))


@pytest.fixture(scope="session")
def decoded_20k(records_20k) -> list[tuple]:
    """(record, decode_record(key, value)) for each of the 20k records."""
    return [(r, decode_record(r.key, r.value)) for r in records_20k]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on."""
    return free_port()


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _noida_binary() -> str | None:
    beside_python = Path(sys.executable).parent / "noida-db"
    return str(beside_python) if beside_python.exists() else shutil.which("noida-db")


def _broker_answers(address: str) -> bool:
    from confluent_kafka.admin import AdminClient

    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
    except OSError:
        return False
    try:
        metadata = AdminClient({"bootstrap.servers": address, "log_level": 0}).list_topics(timeout=2)
    except Exception:
        return False
    return "__consumer_offsets" in metadata.topics


@pytest.fixture(scope="module")
def noida_kafka(tmp_path_factory) -> str:
    """Start an embedded Kafka (noida-db) for this module; yields its bootstrap address."""
    binary = _noida_binary()
    if binary is None:
        pytest.skip("noida-db is not installed")
    port, data_dir = free_port(), tmp_path_factory.mktemp("noida")
    log_path = data_dir / "noida.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "start", "--only", "kafka", "--kafka-port", str(port), "--data-dir", str(data_dir / "data")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + BROKER_START_TIMEOUT_S
        while not _broker_answers(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"noida-db did not start on {address} (exit {proc.poll()}): "
                            f"{log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield address
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group we created, give it 10 s to flush and exit, then SIGKILL the rest."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(proc.pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(5)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
