"""The lake lease: one holder at a time, a bounded wait with the holder's name, and no stale lease
after its holder is killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from offsets_platform.lake.lease import LeaseBusy, current_holder, hold_lease, lease_path

pytestmark = pytest.mark.fast  # make test-fast
ROOT = Path(__file__).resolve().parents[2]


def test_a_second_holder_gives_up_after_its_wait_naming_the_holder(tmp_path):
    with hold_lease(tmp_path, "cleanup-apply", "apply of plan p1") as holder:
        assert (holder.pid, holder.host) == (os.getpid(), socket.gethostname())
        told = []
        started = time.monotonic()
        with pytest.raises(LeaseBusy) as busy:
            with hold_lease(tmp_path, "cleanup-apply", "apply of plan p2", wait_s=0.3, emit=told.append):
                pytest.fail("two holders at once")
        assert 0.3 <= time.monotonic() - started < 2
    message = str(busy.value)
    assert message.startswith(f"the lake's 'cleanup-apply' lease is held by apply of plan p1 (pid {os.getpid()} "
                              f"on {socket.gethostname()}, since ")
    assert "gave up after waiting 0.3 s" in message and str(lease_path(tmp_path, "cleanup-apply")) in message
    assert told == [f"waiting up to 0.3 s for the lake's 'cleanup-apply' lease, held by {holder.describe()}"]


def test_a_waiter_gets_the_lease_when_the_holder_releases_it_and_names_differ(tmp_path):
    order = []
    released = threading.Event()

    def hold_briefly():
        with hold_lease(tmp_path, "ingest", "first"):
            order.append("first in")
            released.wait(5)
            time.sleep(0.2)
            order.append("first out")

    holder = threading.Thread(target=hold_briefly)
    holder.start()
    while not order:
        time.sleep(0.01)
    with hold_lease(tmp_path, "cleanup-plans", "another name"):  # not excluded by "ingest"
        released.set()
    with hold_lease(tmp_path, "ingest", "second", wait_s=5):
        order.append("second in")
    holder.join()
    assert order == ["first in", "first out", "second in"]
    assert current_holder(tmp_path, "ingest") is None, "a released lease names no holder"


def test_the_lease_of_a_killed_holder_is_free_at_once(tmp_path):
    script = ("import sys, time; from offsets_platform.lake.lease import hold_lease\n"
              "with hold_lease(sys.argv[1], 'cleanup-apply', 'apply of plan killed'):\n"
              "    print('held', flush=True); time.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    try:
        assert child.stdout.readline().strip() == "held"
        assert current_holder(tmp_path, "cleanup-apply").pid == child.pid
        with pytest.raises(LeaseBusy, match=f"apply of plan killed \\(pid {child.pid} "):
            with hold_lease(tmp_path, "cleanup-apply", "too early"):
                pass
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    # the file still names the killed holder (it could not clear it), but the lease is free
    assert current_holder(tmp_path, "cleanup-apply") is None, "a killed holder is named as holding the lease"
    started = time.monotonic()
    with hold_lease(tmp_path, "cleanup-apply", "after the kill", wait_s=5) as holder:
        assert time.monotonic() - started < 1 and holder.purpose == "after the kill"


@pytest.mark.parametrize("name", ["", "a/b", "../x", ".hidden"])
def test_a_lease_name_is_a_plain_file_name(tmp_path, name):
    with pytest.raises(ValueError, match="plain file name"):
        lease_path(tmp_path, name)
