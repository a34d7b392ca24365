"""The embedded broker: noida-db, started and stopped by the project itself.

noida-db (PyPI `noida-db`) is one binary that speaks the Kafka protocol; Apache Kafka cannot be
downloaded on these machines. DESIGN.md lists where it differs from Kafka.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from importlib.resources import files
from pathlib import Path

from confluent_kafka.admin import AdminClient

from offsets_platform.kafka.errors import BrokerUnreachable, wait_until_reachable

OFFSETS_TOPIC = "__consumer_offsets"


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EmbeddedBroker:
    """A noida-db Kafka broker on a loopback port, owned by this process.

    Use as a context manager; `stop()` ends it by its own process id, so nothing is left running.
    Data persists in `data_dir`, so a later broker on the same folder sees the same topics.
    """

    def __init__(self, data_dir: str | Path, port: int | None = None, start_timeout_s: float = 30.0):
        self.data_dir = Path(data_dir).absolute()
        self.port = port or free_loopback_port()
        self.start_timeout_s = start_timeout_s
        self._process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> "EmbeddedBroker":
        """Start the broker and wait until it answers Kafka metadata requests."""
        if self._process is not None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        binary = files("noida_db").joinpath("noida-db")
        os.chmod(str(binary), 0o755)
        log = open(self.data_dir / "noida-db.log", "ab")
        self._process = subprocess.Popen(
            [str(binary), "start", "--only", "kafka", "--kafka-port", str(self.port),
             "--data-dir", str(self.data_dir)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        wait_until_reachable(self.bootstrap_servers, self.start_timeout_s)
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BrokerUnreachable(self.bootstrap_servers, f"noida-db exited with status "
                                        f"{self._process.returncode}; see {self.data_dir / 'noida-db.log'}")
            try:
                if OFFSETS_TOPIC in admin.list_topics(timeout=2).topics:
                    return
            except Exception:  # not answering metadata yet; retry until the deadline
                pass
            time.sleep(0.2)
        raise BrokerUnreachable(self.bootstrap_servers, "noida-db started but did not list "
                                f"{OFFSETS_TOPIC} within {self.start_timeout_s:.0f} s")

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 10 s) and reap it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
