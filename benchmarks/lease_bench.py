"""The lake lease (offsets_platform/lake/lease.py) against the alternatives it was chosen over.

    .venv/bin/python benchmarks/lease_bench.py [--rounds 2000] [--workers 4] [--increments 200]

Measures, on the local filesystem of a temporary folder:
- the cost of taking and releasing the lease (flock) and of an O_EXCL lock file (create, write
  the owner, delete), uncontended, median and 99th percentile;
- mutual exclusion under contention: `--workers` processes each add 1 to a counter file
  `--increments` times inside the lease (read, sleep-free write); the total must be exact;
- how long a waiter waits after the holder is killed with SIGKILL (the kernel releases the
  flock at once; an O_EXCL file stays until a stale rule removes it);
- whether a lease kept as rows of a Delta table (read, then append when empty) excludes two
  writers: how many of two processes that check at the same moment both get in, over `--trials`.

Prints the figures and writes them as JSON under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.lease import hold_lease

RESULTS = Path(__file__).resolve().parent / "results"
# delta-rs's runtime does not survive fork, and a fresh interpreter is what a second run is anyway
PROCESSES = multiprocessing.get_context("spawn")


def _percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median_us": round(statistics.median(ordered) * 1e6, 1),
            "p99_us": round(ordered[int(len(ordered) * 0.99) - 1] * 1e6, 1)}


def uncontended_flock(root: Path, rounds: int) -> dict:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        with hold_lease(root, "bench", purpose="bench"):
            pass
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


def uncontended_o_excl(root: Path, rounds: int) -> dict:
    path = root / "bench.o_excl"
    owner = json.dumps({"pid": os.getpid(), "host": "h", "since": "t"}).encode()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.write(descriptor, owner)
        os.close(descriptor)
        os.unlink(path)
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


def _add_under_lease(root: str, increments: int) -> None:
    counter = Path(root) / "counter"
    for _ in range(increments):
        with hold_lease(root, "counter", purpose="bench", wait_s=60, poll_s=0.001):
            counter.write_text(str(int(counter.read_text()) + 1))


def contention(root: Path, workers: int, increments: int) -> dict:
    (root / "counter").write_text("0")
    started = time.perf_counter()
    processes = [PROCESSES.Process(target=_add_under_lease, args=(str(root), increments)) for _ in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    return {"expected": workers * increments, "counted": int((root / "counter").read_text()),
            "seconds_with_process_starts": round(time.perf_counter() - started, 2)}


def _hold_forever(root: str, ready) -> None:
    with hold_lease(root, "killed", purpose="bench holder"):
        ready.set()
        time.sleep(3600)


def after_sigkill(root: Path) -> dict:
    ready = PROCESSES.Event()
    holder = PROCESSES.Process(target=_hold_forever, args=(str(root), ready))
    holder.start()
    ready.wait(30)
    killed = time.perf_counter()
    os.kill(holder.pid, signal.SIGKILL)
    with hold_lease(root, "killed", purpose="bench waiter", wait_s=30, poll_s=0.001):
        waited = time.perf_counter() - killed
    holder.join()
    return {"flock_free_after_ms": round(waited * 1e3, 1),
            "o_excl": "the lock file stays; a waiter needs a stale rule (pid on this host, heartbeat elsewhere)"}


def _delta_lease(table: str, barrier, wins, seconds) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    dt = DeltaTable(table)
    barrier.wait()
    started = time.perf_counter()
    empty = dt.to_pyarrow_table().num_rows == 0  # "nobody holds it" ...
    if empty:
        write_deltalake(dt, pa.table({"holder": [os.getpid()]}), mode="append")  # ... "so I take it"
        with wins.get_lock():
            wins.value += 1
    seconds.value = time.perf_counter() - started


def delta_check_then_append(root: Path, trials: int) -> dict:
    import pyarrow as pa
    from deltalake import DeltaTable

    both = 0
    take_ms = []
    for trial in range(trials):
        table = str(root / f"delta_lease_{trial}")
        DeltaTable.create(table, schema=pa.schema([("holder", pa.int64())]))
        barrier, wins = PROCESSES.Barrier(2), PROCESSES.Value("i", 0)
        seconds = [PROCESSES.Value("d", 0.0) for _ in range(2)]
        processes = [PROCESSES.Process(target=_delta_lease, args=(table, barrier, wins, seconds[i])) for i in range(2)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        take_ms += [value.value * 1e3 for value in seconds]
        both += wins.value == 2
    return {"trials": trials, "both_got_in": both, "median_read_and_append_ms": round(statistics.median(take_ms), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--increments", type=int, default=200)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        results = {
            "flock_lease_uncontended": uncontended_flock(root, args.rounds),
            "o_excl_lock_file_uncontended": uncontended_o_excl(root, args.rounds),
            "flock_lease_contention": contention(root, args.workers, args.increments),
            "after_sigkill": after_sigkill(root),
            "delta_check_then_append": delta_check_then_append(root, args.trials),
        }
    for name, figures in results.items():
        print(f"{name}: {figures}")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    write_results(results, RESULTS / f"lease_{stamp}.json")


if __name__ == "__main__":
    main()
