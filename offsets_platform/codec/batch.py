"""Vectorised decoding of a batch of `__consumer_offsets` records into Arrow tables.

Pure per-record Python decodes a few hundred thousand records a second; ingest needs millions.
So the common records are decoded with numpy, one field at a time for all rows at once:
offset commits in ``batch_offset_commits``, classic group metadata with its consumer protocol
payloads in ``batch_group_metadata`` (on top of ``_binary``, numpy views of Arrow binary arrays,
and ``_cursor``, lockstep reading of many rows).

A row the vector path cannot vouch for (a length that does not add up, bytes left over,
invalid UTF-8, a flexible version, an unusually long array) goes to the scalar
``decode_record`` (``batch_fallback``), which decodes it or explains the fault; KIP-848 records
always take that path, being rare. The result equals the scalar decoder's row for row, and
every input row lands in exactly one table: a malformed record lands in ``rejected`` and never
fails the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ._binary import Binary
from .batch_fallback import ScalarTables, unsupported_reason, value_json
from .batch_group_metadata import decode_group_metadata
from .batch_offset_commits import offset_commit_keys, offset_commit_values
from .schemas import OFFSET_COMMIT_SCHEMA

__all__ = ["DecodedBatch", "decode_batch", "unsupported_reason", "value_json"]


@dataclass
class DecodedBatch:
    """The tables one batch decodes into; ``row`` in each is the record's index in the input."""

    offset_commits: pa.Table
    group_metadata: pa.Table
    group_members: pa.Table
    consumer_group_records: pa.Table
    rejected: pa.Table


def decode_batch(keys: pa.Array, values: pa.Array) -> DecodedBatch:
    """Decode a batch of `__consumer_offsets` records.

    Args:
        keys: Binary (or large_binary) array of record keys.
        values: Binary array of record values, same length; null = tombstone.

    Returns:
        A DecodedBatch. Every input row appears in exactly one of offset_commits,
        group_metadata (its members in group_members), consumer_group_records or rejected
        (malformed records, and record types this codec does not decode).

    Raises:
        ValueError: if keys and values differ in length.
    """
    keys, values = _as_binary(keys), _as_binary(values)
    if len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    key_col, value_col = Binary(keys), Binary(values)
    has_type = key_col.valid & (key_col.lengths >= 2)
    key_type = np.where(has_type, key_col.read(key_col.starts, 2), -1)
    scalar = np.ones(len(keys), bool)  # rows left for the scalar decoder

    # The offset commit table is assembled here, not in batch_offset_commits, on purpose: its
    # masks and columns then live until this function returns, and freeing them earlier (the
    # ~100 KB ``fast`` mask is enough) lets glibc trim the heap after every batch and fault
    # ~10 MB back in on the next: ~20% slower in a fresh process (measured).
    # Key type 1 only: legacy key type 0 (rare, from Kafka before 0.9) allows value version 0 alone,
    # which the scalar decoder checks.
    rows = np.flatnonzero(has_type & (key_type == 1))
    (group, topic, partition), key_ok = offset_commit_keys(keys, rows)
    value_columns, fast = offset_commit_values(value_col, rows[key_ok])
    decoded = rows[key_ok][fast]
    scalar[decoded] = False
    if not fast.all():
        group, topic, partition = (column.filter(pa.array(fast)) for column in (group, topic, partition))
    offset_commits = pa.table({
        "row": pa.array(decoded, pa.int64()), "key_version": pa.array(key_type[decoded], pa.int16()),
        "group": group, "topic": topic, "partition": partition, **value_columns,
    }, schema=OFFSET_COMMIT_SCHEMA)

    rows = np.flatnonzero(has_type & (key_type == 2))
    group_metadata, group_members, done = decode_group_metadata(key_col, value_col, rows)
    scalar[rows[done]] = False

    tables = ScalarTables()
    tables.decode_rows(keys, values, np.flatnonzero(scalar), key_type, has_type)
    return DecodedBatch(
        offset_commits=_by_row([offset_commits, tables.offset_commits.table()]),
        group_metadata=_by_row([group_metadata, tables.group_metadata.table()]),
        group_members=_by_row([group_members, tables.group_members.table()], ("row", "member_index")),
        consumer_group_records=tables.consumer_group_records.table(),
        rejected=tables.rejected.table(),
    )


def _as_binary(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not isinstance(arr, pa.Array):
        arr = pa.array(arr, pa.binary())
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        arr = arr.cast(pa.binary())
    return arr


def _by_row(tables: list[pa.Table], sort_keys=("row",)) -> pa.Table:
    tables = [t for t in tables if t.num_rows] or tables[:1]
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables).sort_by([(k, "ascending") for k in sort_keys])
