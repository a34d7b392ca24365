"""`offsets-platform spark-server` started as a user starts it, for the tests that run models
through Spark Connect (tests/lake/test_spark_connect.py, tests/object_storage)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from offsets_platform.broker.embedded import free_loopback_port

ROOT = Path(__file__).resolve().parents[2]


def start_spark_connect_server(stderr: int | None = subprocess.DEVNULL) -> tuple[subprocess.Popen, str, list[str]]:
    """The server on a free loopback port, in this process's environment: its process, its
    endpoint and its output up to the `ready:` line (the test fails with that output when the
    server dies first). The caller stops it (SIGTERM, as a service manager would)."""
    port = free_loopback_port()
    process = subprocess.Popen([sys.executable, "-m", "offsets_platform.cli", "spark-server", "--port", str(port)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
                               env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    output = []
    for line in process.stdout:  # ends if the server dies before it is ready
        output.append(line)
        if line.startswith("ready:"):
            break
    assert output and output[-1].startswith("ready:"), f"the server did not start: {''.join(output[-30:])}"
    return process, f"sc://127.0.0.1:{port}", output
