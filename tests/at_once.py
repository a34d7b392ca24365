"""Two runs made to meet at the point where, without a lease, both would go on with what each
read: the race a lease must prevent, made certain instead of likely.

    meet = Meeting()
    monkeypatch.setattr(module, "read_state", meet.after(module.read_state))
    results = run_at_once(lambda: work(...))

Each run waits at the meeting point for the other, a few seconds at most: a run that waits for
the lease never gets there while the first one holds it, so the first goes on alone.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable

GIVE_UP_S = 5.0


class Meeting:
    """A point two runs wait at for each other, giving up after `GIVE_UP_S` seconds."""

    def __init__(self, runs: int = 2):
        self._barrier = threading.Barrier(runs, timeout=GIVE_UP_S)

    def wait(self) -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            pass

    def after(self, function: Callable) -> Callable:
        """`function`, then wait at the meeting point, then return its result."""
        @functools.wraps(function)
        def then_meet(*args, **kwargs):
            result = function(*args, **kwargs)
            self.wait()
            return result
        return then_meet


def run_at_once(work: Callable[[], object], runs: int = 2, timeout_s: float = 120) -> list:
    """Run `work` in `runs` threads at once; return what each returned (or raised), in finishing order."""
    results: list = []

    def run() -> None:
        try:
            results.append(work())
        except Exception as error:  # the caller asserts on it
            results.append(error)

    threads = [threading.Thread(target=run) for _ in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    return results
