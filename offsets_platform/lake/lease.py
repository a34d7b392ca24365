"""A named lease on a lake: one holder at a time, across threads, processes and runs.

Use it around work that must not run twice at once on the same lake (a check of a table followed
by a write that depends on it, or requests sent to a cluster):

    from offsets_platform.lake.lease import LeaseBusy, hold_lease

    with hold_lease(lake.leases, "ingest", purpose="ingest of __consumer_offsets", wait_s=30, emit=print):
        ...  # no other holder of this lake's "ingest" lease runs at the same time

Another holder of the same name waits up to `wait_s` seconds (0: not at all), telling `emit` once
whom it waits for, then raises `LeaseBusy`, whose message names the holder: what it does, its
process id and host, and since when. Different names do not exclude each other. The lease is not
re-entrant: taking a name already held, even by the same thread, waits like anyone else.

How: the lease is an flock(2) lock on `<lake.leases>/_leases/<name>.lock` (`lake.leases` is the
lake's root for a local lake; a local folder under the home for a lake on object storage, which
has no locks); the file also names the holder, for the message. Why this and not the alternatives:

- The kernel releases an flock lock when its holder's process ends, however it ends (SIGKILL,
  out of memory), so there is no stale lease to detect: no pid or clock comparison, no
  heartbeat, no race between two waiters taking over a dead holder's lease. A lock file created
  with O_EXCL stays behind its dead creator and needs all three.
- flock locks belong to the open file, so two threads or two `Lake` objects of one process
  exclude each other too (fcntl/lockf locks belong to the process, and would let both in).
- Delta's optimistic commits do not help: delta-rs commits blind appends without a conflict, so
  "read the lease table, then append my row" lets two writers in.

Measured with benchmarks/lease_bench.py on a 2-core machine: taking and releasing the lease costs
40-60 us (an O_EXCL file 30-90 us: the same order, far below one Delta commit); four processes
adding 1 to a counter 200 times each under the lease counted 800 of 800; a waiter had the lease
3-10 ms after its holder was killed with SIGKILL; two processes that read a Delta lease table and
appended when it was empty both got in, in 10 of 10 trials.

The file is never deleted: a waiter that opened it before a delete would lock an orphaned file
while a third process locks a new one, and both would hold "the" lease. An empty file means no
holder. The leases' folder is local: processes that share a lake on object storage exclude each
other only when they run on one host (docs/object-storage.md). On NFSv4 (unless
mounted with local_lock=flock), Linux implements flock with the server's byte-range locks:
processes on different hosts exclude each other, a lost host's locks go when the server's lease
for it runs out, but two threads of one process there do not exclude each other.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

LEASES_FOLDER = "_leases"  # under the lake root; "_" keeps it apart from the layers' folders
NAME_GRACE_S = 1.0  # how long a waiter waits for the holder's name before saying "another process"


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds a lease: what for, which process on which host, since when (UTC)."""

    purpose: str
    pid: int
    host: str
    since: datetime

    def describe(self) -> str:
        return f"{self.purpose} (pid {self.pid} on {self.host}, since {self.since:%Y-%m-%d %H:%M:%S} UTC)"


class LeaseBusy(RuntimeError):
    """Another holder kept the lease for longer than the caller would wait."""

    def __init__(self, name: str, path: Path, holder: LeaseHolder | None, waited_s: float):
        self.name, self.path, self.holder, self.waited_s = name, path, holder, waited_s
        who = holder.describe() if holder else "a process that has not written its name yet"
        super().__init__(f"the lake's {name!r} lease is held by {who}; gave up after waiting {_seconds(waited_s)} s. "
                         f"It is released when that process ends; try again then (lock file: {path})")


def lease_path(root: str | Path, name: str) -> Path:
    """Where the lease `name` of the lake under `root` is kept."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"a lease name is a plain file name, not {name!r}")
    return Path(root) / LEASES_FOLDER / f"{name}.lock"


@contextmanager
def hold_lease(root: str | Path, name: str, purpose: str, *, wait_s: float = 0.0,
               emit: Callable[[str], None] | None = None, poll_s: float = 0.05) -> Iterator[LeaseHolder]:
    """Hold the lake's lease `name` for the duration of the block (see the module's docstring).

    Raises:
        LeaseBusy: another holder kept it for more than `wait_s` seconds.
    """
    path = lease_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(descriptor, name, path, wait_s, emit, poll_s)
        holder = LeaseHolder(purpose, os.getpid(), socket.gethostname(), datetime.now(timezone.utc))
        _write_holder(descriptor, holder)
        try:
            yield holder
        finally:
            os.ftruncate(descriptor, 0)  # still locked here: no waiter reads a name that is no longer true
    finally:
        os.close(descriptor)  # releases the lock


def current_holder(root: str | Path, name: str) -> LeaseHolder | None:
    """Who holds the lease now, or None (free, or the holder has not written its name yet).

    A holder killed with SIGKILL leaves its name in the file (only a holder that ends its block
    clears it) while the kernel has released its lock; so a name counts only while the file is
    locked. The check takes a shared lock for a moment when the file names someone: a holder's
    exclusive lock refuses it at once; a `hold_lease` with no wait at that very moment would find
    the lease busy, and one that waits takes it at its next try.
    """
    path = lease_path(root, name)
    holder = _read_holder(path)
    if holder is None:
        return None
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_holder(path)  # locked: the name is true (read again: it may have changed hands)
    finally:
        os.close(descriptor)  # releases the shared lock, if taken
    return None


def _read_holder(path: Path) -> LeaseHolder | None:
    try:
        fields = json.loads(path.read_text())
        return LeaseHolder(fields["purpose"], fields["pid"], fields["host"], datetime.fromisoformat(fields["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _lock(descriptor: int, name: str, path: Path, wait_s: float, emit, poll_s: float) -> None:
    started = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - started
            if waited >= wait_s:
                raise LeaseBusy(name, path, _read_holder(path), wait_s) from None
            if emit is not None and not told:
                holder = _read_holder(path)
                # A holder writes its name just after taking the lock: give it a moment to, so
                # that the message says whom the caller waits for.
                if holder is not None or waited >= NAME_GRACE_S:
                    emit(f"waiting up to {_seconds(wait_s)} s for the lake's {name!r} lease, held by "
                         f"{holder.describe() if holder else 'another process'}")
                    told = True
            time.sleep(min(poll_s, max(wait_s - waited, 0)))


def _seconds(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _write_holder(descriptor: int, holder: LeaseHolder) -> None:
    text = json.dumps({"purpose": holder.purpose, "pid": holder.pid, "host": holder.host,
                       "since": holder.since.isoformat()})
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, text.encode(), 0)
