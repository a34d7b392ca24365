"""The real programs the metrics tests run, each on a free loopback port: `offsets-platform
metrics-server`, Prometheus, promtool and Alertmanager (Debian's packages, which
.ci/install-debian-packages installs). Every wait is bounded and fails with the program's log."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from offsets_platform.processes import free_loopback_port

ROOT = Path(__file__).resolve().parents[2]


def binary(*names: str) -> str:
    """The first of `names` on PATH (Debian names Alertmanager prometheus-alertmanager)."""
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.fail(f"{' or '.join(names)} is not installed: run .ci/install-debian-packages (`make test` runs it "
                "before pytest)")


def start(command: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:  # in a process group of its own, so stopping it stops all it started
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


def wait_for(what: str, check, process: subprocess.Popen, log: Path, timeout_s: float = 30):
    """`check()`'s first true answer, polled while `process` runs, within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what}: the process exited with {process.returncode}:\n{log.read_text()}")
        try:
            answer = check()
            if answer:
                return answer
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {timeout_s} s:\n{log.read_text()}")


@contextmanager
def running_exporter(lake, folder: Path, *options: str):
    """`offsets-platform metrics-server` on the lake with these options, on a free loopback port,
    once it answers: its address, until closed. It must stop cleanly on SIGTERM."""
    port = free_loopback_port()
    log = folder / "exporter.log"
    process = start([sys.executable, "-m", "offsets_platform.cli", "metrics-server", "--home",
                     str(lake.root.parent), "--port", str(port), *options], log)
    try:
        address = f"127.0.0.1:{port}"
        wait_for("the metrics server answers", lambda: get(f"http://{address}/metrics"), process, log)
        yield address
    finally:
        stop(process)
    assert process.returncode == 0, log.read_text()  # SIGTERM is a clean stop


@contextmanager
def running_prometheus(config: str, folder: Path):
    """Prometheus with this configuration, once its job offsets_platform has scraped: its URL, until closed."""
    (folder / "prometheus.yml").write_text(config)
    port = free_loopback_port()
    log = folder / "prometheus.log"
    process = start([binary("prometheus"), f"--config.file={folder / 'prometheus.yml'}",
                     f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                     "--log.level=warn"], log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("Prometheus scrapes the exporter",
                 lambda: [s for s in query(url, 'up{job="offsets_platform"}') if s["value"][1] == "1"], process, log)
        yield url
    finally:
        stop(process)


def query(url: str, promql: str) -> list[dict]:
    answer = json.loads(get(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]
