"""Progress output for long reads: a line every few seconds with counts and rate."""

from __future__ import annotations

import time
from typing import Callable


class Progress:
    """Reports `done/total` with a rate, at most every `every_s` seconds, through `emit`."""

    def __init__(self, label: str, total: int, emit: Callable[[str], None] = print, every_s: float = 2.0):
        self.label = label
        self.total = total
        self.emit = emit
        self.every_s = every_s
        self.done = 0
        self.started = time.monotonic()
        self._last = self.started

    def advance(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self.emit(self.line())

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        share = f" of ~{self.total:,} ({min(100.0, 100.0 * self.done / self.total):.0f}%)" if self.total else ""
        return f"{self.label}: {self.done:,}{share} records, {self.done / elapsed:,.0f} records/s"

    def finish(self) -> str:
        line = self.line() + f", {time.monotonic() - self.started:.1f} s"
        self.emit(line)
        return line
