"""Long-running child processes the project starts (Apache Kafka, a Spark cluster): each in a
process group of its own, stopped as a whole, and never outliving the process that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Mapping


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_child(command: list[str], log_file: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """Start `command` in a new process group, its output appended to `log_file`."""
    with open(log_file, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_die_with_parent,
                                env=None if env is None else dict(env))


def stop_child(process: subprocess.Popen | None, grace_s: float) -> None:
    """SIGTERM the child's process group (a controlled shutdown), SIGKILL it after `grace_s`, reap it."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _die_with_parent() -> None:
    """In the child, before exec: take SIGTERM as a process normally does, and receive it when the
    parent dies (Linux prctl PR_SET_PDEATHSIG), so a killed demo or test run leaves no server
    behind. A signal the parent ignores stays ignored across exec: Dagster gives SIGTERM the
    handler SIGINT has, and a shell starts a background job with SIGINT ignored, so a Dagster
    process started in the background ignores SIGTERM, and its servers would outlive it and
    ignore stop_child()'s SIGTERM too."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.signal.argtypes, libc.signal.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p
        libc.signal(signal.SIGTERM, None)  # SIG_DFL
        libc.prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: stop_child() and the callers' cleanup remain
        pass
