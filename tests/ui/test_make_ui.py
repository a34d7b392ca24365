"""`make ui` as a person runs it and stops it: Ctrl-C in its terminal (SIGINT to the whole process
group) stops the Dagster services and the Spark Connect server within seconds, leaves no process
behind, and prints no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from offsets_platform.processes import free_loopback_port
from tests.ui.browser import ROOT

READY = ("Serving dagster-webserver", "ready: runs with OFFSETS_PLATFORM_SPARK_REMOTE=")


def _as_from_a_terminal():
    # A terminal's foreground job takes SIGINT by default; a process started from a script or a
    # test runner may have inherited it ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()


def test_ctrl_c_stops_make_ui_at_once_and_leaves_nothing_running(tmp_path):
    log = tmp_path / "make-ui.log"
    home = tmp_path / "home"
    command = ["make", "ui", f"UI_HOME={home}", f"UI_PORT={free_loopback_port()}",
               f"SPARK_CONNECT_PORT={free_loopback_port()}"]
    with log.open("w") as out:
        make = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 240
        while not all(line in log.read_text() for line in READY):
            assert make.poll() is None, f"make ui ended before it was ready:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"make ui was not ready within 240 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        group = [p for p in psutil.process_iter() if _group_of(p) == make.pid]
        assert len(group) >= 5, "make, its shell, the Spark Connect server, dagster dev and its services"

        os.killpg(make.pid, signal.SIGINT)
        stopping = time.monotonic()
        make.wait(timeout=60)
        gone, alive = psutil.wait_procs(group, timeout=max(1.0, 30 - (time.monotonic() - stopping)))
        output = log.read_text()
        assert not alive, f"still running after Ctrl-C: {[p.cmdline()[:4] for p in alive]}"
        assert time.monotonic() - stopping < 30
        assert "Dagster services shut down" in output and "Spark Connect server stopped" in output
        assert "Traceback" not in output, output[-3000:]
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()


def _group_of(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None
