"""Realistic `__consumer_offsets` traffic from a simulated group coordinator (pure, no IO).

A discrete-event simulation (`simulation.Simulation`), deterministic from a seed: every group
is a Python generator yielding `(time, records)` bursts, and a heap merges the bursts in time
order, so the stream needs constant memory however long it runs. Records carry the bytes Kafka
writes: keys and the rarer values come from `offsets_platform.codec.encode`, keys are built
once per (group, topic, partition), and the hot offset-commit value v3 is a single `struct` call.

Expiration follows the group coordinator's rules (docs/kafka-semantics.md, "Offset expiration"),
applied at the coordinator's 10-minute cleanup ticks:
an Empty group's offsets go 7 days after it became Empty, then its group record; a Stable
consumer group's offsets of topics it dropped go 7 days after their last commit, as do
standalone offsets no longer committed; legacy v1 offsets go at their expire_timestamp.

Modules: `scenarios` (named scenarios, constants), `groups` (the group life, standalone and
legacy groups), `classic_group` (consumer and connect), `kip848_group`, `teams` (generated
groups), `scenario_groups` (the scenarios' plans), `simulation` (the engine and its pacing).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .partitioning import DEFAULT_PARTITIONS
from .scenarios import DAY, MINUTE, RETENTION_CHECK_INTERVAL_MS, RETENTION_MS, SCENARIOS, Scenario
from .simulation import Simulation

__all__ = [
    "BATCH_SCHEMA", "DEFAULT_LOOKBACK_MS", "KEY_TYPE_NAMES", "RETENTION_CHECK_INTERVAL_MS", "RETENTION_MS",
    "SCENARIOS", "CoordinatorRecord", "Scenario", "default_start_ms", "generate", "generate_batches",
    "summarize",
]

DEFAULT_LOOKBACK_MS = 10 * DAY
KEY_TYPE_NAMES = {
    0: "offset_commit", 1: "offset_commit", 2: "group_metadata", 3: "consumer_group_metadata",
    4: "consumer_group_partition_metadata", 5: "consumer_group_member_metadata",
    6: "consumer_group_target_assignment_metadata", 7: "consumer_group_target_assignment_member",
    8: "consumer_group_current_member_assignment",
}
BATCH_SCHEMA = pa.schema([("partition", pa.int32()), ("key", pa.binary()), ("value", pa.binary()),
                          ("timestamp", pa.timestamp("ms", tz="UTC"))])
"""Columns of `generate_batches` tables; a null value is a tombstone."""


@dataclass(slots=True)
class CoordinatorRecord:
    """One record as Kafka writes it to `__consumer_offsets` (value None = tombstone)."""

    partition: int
    key: bytes
    value: bytes | None
    timestamp_ms: int


def default_start_ms() -> int:
    """Return "now - 10 days" in epoch ms, floored to the minute.

    Returns:
        The default simulated start time.
    """
    return int(time.time() * 1000) // MINUTE * MINUTE - DEFAULT_LOOKBACK_MS


def _tuples(seed: int, records: int, start_ms: int | None, partitions: int, groups: int | None = None,
            topic_partitions: int | None = None) -> Iterator[tuple]:
    if records < 0:
        raise ValueError(f"records must be >= 0, got {records}")
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    for name, value in (("groups", groups), ("topic_partitions", topic_partitions)):
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    start = default_start_ms() if start_ms is None else int(start_ms)
    simulation = Simulation(seed, records, start, partitions, groups=groups, topic_partitions=topic_partitions)
    return itertools.islice(simulation.run(), records)


def generate(seed: int = 7, records: int = 100_000, *, start_ms: int | None = None,
             partitions: int = DEFAULT_PARTITIONS, groups: int | None = None,
             topic_partitions: int | None = None) -> Iterator[CoordinatorRecord]:
    """Stream the records a group coordinator writes to `__consumer_offsets`, in time order.

    Every named scenario in `SCENARIOS` runs, plus generated "team-NNN-..." groups (more of them
    for more records) sized so the run spans 9-10 days from `start_ms`. Same arguments, same bytes.

    Args:
        seed: Seed of the simulation.
        records: Exactly how many records to yield.
        start_ms: Simulated start, epoch ms (default: now - 10 days, floored to the minute).
        partitions: Partitions of `__consumer_offsets` (records go to Kafka's partition for the group).
        groups: Team groups alive at once (default: one per 20,000 records, 12 to 5,000). A
            retired team group is followed by a new one, so a run holds more groups than this.
        topic_partitions: Partitions, at least, of the topics team groups read (default: 16
            topics of 1 to 24 partitions). Each group reads 1 to 3 of them, so a run commits to
            fewer than all when there are few groups for many topics.

    Returns:
        A lazy iterator of `CoordinatorRecord` (constant memory).
    """
    return itertools.starmap(CoordinatorRecord, _tuples(seed, records, start_ms, partitions, groups, topic_partitions))


def generate_batches(seed: int = 7, records: int = 100_000, batch_size: int = 100_000, *,
                     start_ms: int | None = None, partitions: int = DEFAULT_PARTITIONS, groups: int | None = None,
                     topic_partitions: int | None = None) -> Iterator[pa.Table]:
    """Stream the same records as `generate`, as Arrow tables of `BATCH_SCHEMA`.

    Args:
        seed: Seed of the simulation.
        records: Total records over all batches.
        batch_size: Rows per table (the last one may be shorter).
        start_ms: Simulated start, epoch ms (default: now - 10 days).
        partitions: Partitions of `__consumer_offsets`.
        groups: Team groups alive at once (see `generate`).
        topic_partitions: Partitions of the topics team groups read (see `generate`).

    Returns:
        A lazy iterator of tables with columns partition int32, key binary, value binary
        (null = tombstone), timestamp timestamp[ms, UTC].
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    stream = _tuples(seed, records, start_ms, partitions, groups, topic_partitions)
    while chunk := list(itertools.islice(stream, batch_size)):
        parts, keys, values, stamps = zip(*chunk)
        # numpy first: pa.array on a tuple of Python ints is ~50x slower than on an int array
        yield pa.Table.from_arrays([
            pa.array(np.fromiter(parts, np.int32, len(parts))), pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(np.fromiter(stamps, np.int64, len(stamps))).cast(BATCH_SCHEMA.field(3).type),
        ], schema=BATCH_SCHEMA)


def summarize(records: Iterable[CoordinatorRecord]) -> dict:
    """Count records by key type, tombstones by key type, and values by (key type, value version).

    Args:
        records: Records from `generate` (consumed).

    Returns:
        {"records": n, "tombstones": n, "by_key_type": {key_type: n},
        "tombstones_by_key_type": {key_type: n}, "value_versions": {(key_type, version): n},
        "by_record_type": {name: n}} (names from `KEY_TYPE_NAMES`).
    """
    by_type, tombstones, versions = Counter(), Counter(), Counter()
    for record in records:
        key_type = int.from_bytes(record.key[:2], "big", signed=True)
        by_type[key_type] += 1
        if record.value is None:
            tombstones[key_type] += 1
        else:
            versions[(key_type, int.from_bytes(record.value[:2], "big", signed=True))] += 1
    names: Counter = Counter()
    for key_type, n in by_type.items():
        names[KEY_TYPE_NAMES.get(key_type, "unknown")] += n
    return {"records": sum(by_type.values()), "tombstones": sum(tombstones.values()),
            "by_key_type": dict(by_type), "tombstones_by_key_type": dict(tombstones),
            "value_versions": dict(versions), "by_record_type": dict(names)}
