"""Numpy access to Arrow arrays, for the vectorised decoders.

``Binary`` reads big-endian integers at per-row byte positions of an Arrow binary array and
turns per-row (start, length, null) fields back into Arrow binary or string arrays, without a
Python loop; ``int_array``, ``lists`` and ``scatter`` build the result columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# Masks keeping the first n bytes of a little-endian word (n = index).
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], np.uint64)
_HIGH_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(5)], np.uint32)


def offsets(counts: np.ndarray, dtype=np.int64) -> np.ndarray:
    """Start of each run of ``counts[i]`` items when laid end to end, then the total."""
    out = np.zeros(len(counts) + 1, dtype)
    np.cumsum(counts, out=out[1:])
    return out


class Binary:
    """Numpy view of an Arrow binary array: validity, start offsets, lengths and padded data."""

    def __init__(self, arr: pa.Array):
        n = len(arr)
        _, offsets_, data = arr.buffers()[:3]
        width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
        bounds = (np.zeros(n + 1, np.int64) if offsets_ is None
                  else np.frombuffer(offsets_, width)[arr.offset:arr.offset + n + 1].astype(np.int64))
        self.starts, self.lengths = bounds[:-1], np.diff(bounds)
        self.ends = bounds[1:]
        self.valid = np.ones(n, bool) if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
        raw = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
        # Zero padding keeps every fixed-width read at a clamped position in bounds.
        self.data = np.concatenate([raw[:bounds[-1]], np.zeros(16, np.uint8)])

    def read(self, pos: np.ndarray, width: int, dtype: str = ">i") -> np.ndarray:
        """Ints of ``width`` bytes at byte positions ``pos`` (big-endian signed by default)."""
        # Overlapping view: element i is the integer that starts at byte i.
        view = np.ndarray((len(self.data) - width + 1,), f"{dtype}{width}", self.data, strides=(1,))
        native = np.int64 if dtype == ">i" else np.dtype(f"u{width}")
        return view[np.minimum(pos, len(self.data) - width)].astype(native)

    def slices(self, start: np.ndarray, length: np.ndarray, null: np.ndarray) -> pa.Array:
        """Binary array of data[start[i]:start[i] + length[i]], null where ``null``."""
        bitmap = pa.py_buffer(np.packbits(~null, bitorder="little")) if null.any() else None
        total = int(length.sum())
        if total <= 4 * len(start) or len(self.data) >= 2**31:
            # Mostly short or empty values (offset commit metadata): copying the bytes is cheapest.
            # (So is a buffer too big for the int32 offsets of a view.)
            out = offsets(length)
            gathered = self.data[np.repeat(start - out[:-1], length) + np.arange(total)]
            wide = total >= 2**31
            return pa.Array.from_buffers(pa.large_binary() if wide else pa.binary(), len(start),
                                         [bitmap, pa.py_buffer(out if wide else out.astype(np.int32)),
                                          pa.py_buffer(gathered)])
        # Otherwise point into the data with a binary_view array: 16 bytes a value whatever
        # its length (length, then the value inline if <= 12 bytes, else its first 4 bytes,
        # buffer 0 and its offset); Arrow's cast copies the bytes out far faster than numpy.
        long = length > 12
        low = self.read(start, 8, "<u") & _LOW_BYTES[np.minimum(length, 8)]
        high = self.read(start + 8, 4, "<u") & _HIGH_BYTES[np.clip(length - 8, 0, 4)]
        views = np.empty((len(start), 4), "<u4")
        views[:, 0] = length
        views[:, 1] = low  # the first 4 bytes: inline data or the prefix
        views[:, 2] = np.where(long, 0, low >> np.uint64(32))
        views[:, 3] = np.where(long, start, high)
        return pa.Array.from_buffers(pa.binary_view(), len(start),
                                     [bitmap, pa.py_buffer(views), pa.py_buffer(self.data)])

    def bytes(self, field: tuple) -> pa.Array:
        """Binary array (type ``binary``) for a (start, length, null) field."""
        return self.slices(*field).cast(pa.binary())

    def strings(self, field: tuple) -> tuple[pa.Array, np.ndarray]:
        """String array for a (start, length, null) field, and the mask of rows not in UTF-8."""
        binary = self.slices(*field)
        try:
            return binary.cast(pa.string()), np.zeros(len(binary), bool)
        except pa.ArrowInvalid:  # rare: find the offending rows one by one
            texts = [_utf8(b) for b in binary.to_pylist()]
            bad = np.array([t is False for t in texts], bool)
            return pa.array([None if t is False else t for t in texts], pa.string()), bad

    def int32s(self, start: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The int32 arrays of ``count[i]`` elements at ``start[i]``, concatenated."""
        out = offsets(count)
        pos = np.repeat(start - 4 * out[:-1], count) + 4 * np.arange(int(out[-1]))
        return self.read(pos, 4).astype(np.int32)


def int_array(values: np.ndarray, type_: pa.DataType, null: np.ndarray) -> pa.Array:
    """``values`` as an Arrow array of ``type_``, null where ``null``."""
    return pa.array(values, type_, mask=null if null.any() else None)


def lists(counts: np.ndarray, values: pa.Array, null: np.ndarray | None = None) -> pa.Array:
    """List array whose row i holds the next ``counts[i]`` of ``values``; null where ``null``."""
    mask = pa.array(null) if null is not None and null.any() else None
    return pa.ListArray.from_arrays(pa.array(offsets(counts, np.int32)), values, mask=mask)


def scatter(arr: pa.Array, positions: np.ndarray, size: int) -> pa.Array:
    """Spread ``arr`` (one element per position) over ``size`` rows; the other rows are null."""
    if len(positions) == size:  # every row has one: the usual case
        return arr
    index = np.full(size, -1, np.int64)
    index[positions] = np.arange(len(positions))
    return arr.take(pa.array(index, mask=index < 0))


def _utf8(data: bytes | None) -> str | None | bool:
    """The text, None for null, False when the bytes are not UTF-8."""
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return False
