"""Vectorised decoding of offset commit records (key types 0 and 1, values v0-v3, tombstones).

Keys repeat, so each distinct key is decoded once and the key columns are taken by dictionary
index. Values of the fixed-layout versions 0-3 are read at positions computed per row: they
depend only on the version and the metadata length. Rows left out (v4, malformed, not UTF-8)
are for the scalar decoder; ``batch.decode_batch`` assembles the table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._binary import Binary, int_array
from ._cursor import Cursor
from .schemas import TIMESTAMP


def offset_commit_keys(keys: pa.Array, rows: np.ndarray):
    """Decode the offset commit keys of ``rows``, once per distinct key.

    Returns:
        ((group, topic, partition) arrays for the rows whose key decoded, mask of those rows).
    """
    encoded = pc.dictionary_encode(keys)
    distinct = Binary(encoded.dictionary)
    cur = Cursor(distinct, distinct.starts + 2, distinct.ends.copy())
    group, topic, partition = cur.sized(2), cur.sized(2), cur.int(4)
    groups, bad_group = distinct.strings(group)
    topics, bad_topic = distinct.strings(topic)
    ok = cur.at_end() & ~bad_group & ~bad_topic
    index = encoded.indices.fill_null(0).to_numpy()[rows]
    row_ok = ok[index]
    taken = pa.array(index[row_ok])
    return (groups.take(taken), topics.take(taken),
            pa.array(partition[index[row_ok]].astype(np.int32))), row_ok


def offset_commit_values(values: Binary, rows: np.ndarray):
    """Decode the fixed-layout values (v0-v3) and tombstones of ``rows``.

    Returns:
        (value columns for the rows decoded here, mask of those rows among ``rows``).
    """
    valid, start, length = values.valid[rows], values.starts[rows], values.lengths[rows]
    # Bytes 0-15 as two big-endian words: version (2), offset (8), then in v3 leader_epoch (4)
    # and the metadata length (2); in v0-v2 the metadata length comes right after the offset.
    head, tail = values.read(start, 8, ">u"), values.read(start + 8, 8, ">u")
    version = np.where(valid & (length >= 2), _signed(head >> 48, 16), -1)
    offset = ((head << np.uint64(16)) | (tail >> np.uint64(48))).view(np.int64)
    epoch = _signed((tail >> 16) & 0xFFFFFFFF, 32)
    v3 = version == 3
    meta_at = np.where(v3, 14, 10)
    meta_len = np.where(v3, _signed(tail & 0xFFFF, 16), _signed((tail >> 32) & 0xFFFF, 16))
    meta_bytes = np.maximum(meta_len, 0)
    fixed = ((version >= 0) & (version <= 3) & (length >= meta_at + 2) & (meta_len >= -1)
             & (length == meta_at + 2 + meta_bytes + 8 + np.where(version == 1, 8, 0)))

    keep = fixed | ~valid
    metadata, bad = values.strings((start + meta_at + 2, np.where(fixed, meta_bytes, 0), ~fixed | (meta_len == -1)))
    keep &= ~bad  # left for the scalar decoder to explain
    if not keep.all():
        metadata = metadata.filter(pa.array(keep))
        fixed, version, start, meta_at, meta_bytes, offset, epoch = (
            a[keep] for a in (fixed, version, start, meta_at, meta_bytes, offset, epoch))

    commit_at = start + meta_at + 2 + meta_bytes
    has_epoch, has_expire = fixed & (version == 3), fixed & (version == 1)
    expire = np.full(len(start), -1, np.int64)
    expire[has_expire] = values.read(commit_at[has_expire] + 8, 8)
    columns = {
        "tombstone": pa.array(~fixed),
        "value_version": int_array(version, pa.int16(), ~fixed),
        "offset": int_array(offset, pa.int64(), ~fixed),
        "leader_epoch": int_array(epoch, pa.int32(), ~has_epoch | (epoch == -1)),
        "metadata": metadata,
        "commit_timestamp": int_array(values.read(commit_at, 8), TIMESTAMP, ~fixed),
        "expire_timestamp": int_array(expire, TIMESTAMP, expire == -1),
    }
    return columns, keep


def _signed(word: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement value of the low ``bits`` of unsigned words."""
    return word.astype(f"u{bits // 8}").view(f"i{bits // 8}").astype(np.int64)
