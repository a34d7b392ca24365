"""Admin-API snapshots of a cluster into the bronze snapshot tables.

A snapshot is taken whole (every admin call answered or recorded as an error) before the lake
is touched, so a cluster that does not answer, or a failure while gathering, writes nothing.
Each table then gets one Delta commit. `broker_configs` holds exactly one row per snapshot and
is written last: a snapshot_id without its `broker_configs` row is a snapshot whose writing was
interrupted, and readers can leave it out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from offsets_platform.ingest.snapshot_collect import DEFAULT_OFFSETS_RETENTION_MINUTES, ClusterSnapshot, take_snapshot
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import SNAPSHOT_TABLES
from offsets_platform.settings import KafkaConnection

COMPLETION_TABLE = "broker_configs"
WRITE_ORDER = tuple(name for name in SNAPSHOT_TABLES if name != COMPLETION_TABLE) + (COMPLETION_TABLE,)
MAX_ERROR_LINES = 10


@dataclass(frozen=True)
class SnapshotResult:
    """What one snapshot wrote."""

    snapshot_id: str
    snapshot_at: datetime
    rows_written: dict[str, int]
    errors: list[dict]
    seconds: float


def snapshot_cluster(
    connection: KafkaConnection,
    lake: Lake,
    *,
    offsets_retention_fallback_minutes: int = DEFAULT_OFFSETS_RETENTION_MINUTES,
    emit: Callable[[str], None] = print,
) -> SnapshotResult:
    """Take one admin-API snapshot of the cluster and append it to the snapshot tables.

    Args:
        connection: the cluster (its bootstrap address must be set).
        lake: where the bronze tables live.
        offsets_retention_fallback_minutes: offsets.retention.minutes to record, with source
            'fallback', when the broker does not expose it.
        emit: where the summary line and the error lines go.

    Returns:
        The snapshot id and time, rows written per table, and the error rows.

    Raises:
        BrokerUnreachable: the cluster did not answer within about 15 s; nothing was written.
    """
    started = time.monotonic()
    snapshot = take_snapshot(connection, known_groups=groups_the_models_know(lake),
                             offsets_retention_fallback_minutes=offsets_retention_fallback_minutes)
    rows_written = write_snapshot(lake, snapshot)
    result = SnapshotResult(snapshot.snapshot_id, snapshot.snapshot_at, rows_written, snapshot.errors,
                            time.monotonic() - started)
    for line in summary_lines(snapshot, result.seconds):
        emit(line)
    return result


def groups_the_models_know(lake: Lake) -> list[str]:
    """The groups the last refresh saw alive (group_state, not Dead), and those only a snapshot
    found gone: the snapshot asks about each by name when ListGroups does not list it, so that a
    group deleted since the last ingest is known to be gone (see `collect_groups`) until the log's
    tombstones say so too. None before the models ran, nor in a lake that was not handed the model
    tables."""
    if "group_state" not in lake.tables or not lake.exists("group_state"):
        return []
    alive = lake.query("select group_id from group_state where state <> 'Dead' or state_source = 'gone'",
                       "group_state")
    return alive.column("group_id").to_pylist()


def write_snapshot(lake: Lake, snapshot: ClusterSnapshot) -> dict[str, int]:
    """Append each non-empty table of the snapshot in one Delta commit, `broker_configs` last.

    Returns:
        Rows written per table (0 for a table the snapshot had no rows for).
    """
    written = {}
    for name in WRITE_ORDER:
        table = snapshot.tables[name]
        if table.num_rows:
            lake.append(name, table)
        written[name] = table.num_rows
    return written


def summary_lines(snapshot: ClusterSnapshot, seconds: float) -> list[str]:
    """One summary line, then one line per error (at most MAX_ERROR_LINES)."""
    counts = {name: table.num_rows for name, table in snapshot.tables.items()}
    broker = snapshot.rows("broker_configs")[0]
    topics = len(set(snapshot.tables["log_offset_snapshots"]["topic"].to_pylist()))
    lines = [
        f"snapshot {snapshot.snapshot_id} of {snapshot.bootstrap_servers} in {seconds:.1f} s: "
        f"{counts['group_snapshots']} groups ({counts['group_member_snapshots']} members), "
        f"{counts['committed_offset_snapshots']} committed offsets, "
        f"{counts['log_offset_snapshots']} partitions in {topics} topics, "
        f"offsets.retention.minutes {broker['offsets_retention_minutes']} ({broker['offsets_retention_source']}), "
        f"{counts['snapshot_errors']} errors"
    ]
    errors = snapshot.errors
    for error in errors[:MAX_ERROR_LINES]:
        subject = f"{error['scope']} {error['name']!r}" if error["name"] is not None else error["scope"]
        lines.append(f"  {subject} {error['operation']}: {error['error']} {error['message'] or ''}".rstrip())
    if len(errors) > MAX_ERROR_LINES:
        lines.append(f"  ... and {len(errors) - MAX_ERROR_LINES} more errors (table snapshot_errors)")
    return lines
