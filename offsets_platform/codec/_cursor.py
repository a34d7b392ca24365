"""Lockstep reading: the same field from many byte ranges of one buffer at once.

The vectorised counterpart of ``reader.ByteReader`` with its checks (lengths below -1 refused,
arrays never null, ranges never overrun); where ``ByteReader`` raises, ``Cursor`` clears the
row's ``ok`` flag and the scalar decoder later names the fault.
"""

from __future__ import annotations

import numpy as np

from ._binary import Binary

# Rows with longer arrays than this go to the scalar decoder: lockstep decoding costs one
# numpy pass per array item, which only pays off while many rows share the pass.
MAX_LOCKSTEP_ITEMS = 32


class Cursor:
    """Reads the same field from many byte ranges of one buffer at once, one range per row.

    A row whose range runs out, or whose field is malformed, is cleared in ``ok``; from then on
    its values are meaningless (lengths and counts read as 0) and the caller hands the row to
    the scalar decoder, which names the fault. ``present`` masks select the rows a
    version-dependent field exists in.
    """

    def __init__(self, col: Binary, pos: np.ndarray, end: np.ndarray, ok: np.ndarray | None = None):
        self.col, self.pos, self.end = col, pos, end
        self.ok = np.ones(len(pos), bool) if ok is None else ok

    def take(self, rows: np.ndarray) -> Cursor:
        return Cursor(self.col, self.pos[rows], self.end[rows], self.ok[rows])

    def put(self, rows: np.ndarray, sub: Cursor) -> None:
        self.pos[rows], self.ok[rows] = sub.pos, sub.ok

    def at_end(self) -> np.ndarray:
        """Rows read without fault that have no bytes left over."""
        return self.ok & (self.pos == self.end)

    def _advance(self, n) -> np.ndarray:
        start = self.pos
        self.pos = start + n
        self.ok &= self.pos <= self.end
        return start

    def int(self, width: int, present: np.ndarray | None = None) -> np.ndarray:
        if present is None:
            return self.col.read(self._advance(width), width)
        value = self.col.read(self._advance(np.where(present, width, 0)), width)
        return np.where(present, value, 0)

    def sized(self, width: int, present: np.ndarray | None = None) -> tuple:
        """A string (width 2) or bytes (width 4) field as (start, length, null)."""
        n = self.int(width, present)
        self.ok &= n >= -1
        length = np.maximum(n, 0)
        start = self._advance(length)
        null = (n == -1) if present is None else (n == -1) | ~present
        return start, np.where(self.ok, length, 0), null

    def int32_array(self) -> tuple[np.ndarray, np.ndarray]:
        """An int32 array field as (start, count); the elements are gathered later."""
        n = self.int(4)
        self.ok &= n >= 0
        start = self._advance(4 * np.maximum(n, 0))
        return start, np.where(self.ok, n, 0)

    def count(self, present: np.ndarray | None = None) -> np.ndarray:
        n = self.int(4, present)
        self.ok &= (n >= 0) & (n <= MAX_LOCKSTEP_ITEMS)
        return np.where(self.ok, n, 0)

    def items(self, counts: np.ndarray, parse) -> tuple[np.ndarray, tuple]:
        """Parse item j of every row with more than j items, for j = 0, 1, ... in lockstep.

        Args:
            counts: Items per row.
            parse: function(cursor, rows) -> tuple of per-item arrays.

        Returns:
            (owner row of each item, the parsed arrays), ordered by owner row then item.
        """
        owners, parts = [], []
        for j in range(int(counts.max(initial=0))):
            rows = np.flatnonzero(counts > j)
            sub = self.take(rows)
            parts.append(parse(sub, rows))
            self.put(rows, sub)
            owners.append(rows)
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, parse(self.take(empty), empty)
        order = np.argsort(np.concatenate(owners), kind="stable")
        return np.concatenate(owners)[order], tuple(np.concatenate(p)[order] for p in zip(*parts))


def fail_owners(ok: np.ndarray, owners: np.ndarray, item_ok: np.ndarray) -> None:
    """Clear ``ok`` for every row owning an item not in ``item_ok``."""
    ok[owners[~item_ok]] = False
