"""The generator streams: memory stays flat however many records it yields."""

import collections
import tracemalloc

from proving_ground.workload import generate

START_MS = 1_700_000_000_000


def _peak_mb(records: int) -> float:
    tracemalloc.start()
    try:
        collections.deque(generate(7, records, start_ms=START_MS), maxlen=0)  # consume, keep nothing
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_one_million_records_stream_in_constant_memory():
    small, large = _peak_mb(200_000), _peak_mb(1_000_000)
    # holding 1M records would take well over 100 MB; the simulation's state is a few MB at most
    assert large < 50, large
    assert large < small + 10, (small, large)
