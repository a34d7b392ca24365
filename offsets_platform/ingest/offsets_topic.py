"""`__consumer_offsets` into bronze Delta tables, incrementally and exactly once.

The log read is the connection's `offsets_topic`: `__consumer_offsets`, or a regular topic of the
same layout (a mirror, or generated history). A lake holds the records of one such log only.

Each batch is decoded, then appended to each bronze table in one Delta commit per table, then
recorded in `offsets_topic_checkpoints`. A run resumes after the last checkpoint. A run killed
between a table's commit and the checkpoint left that table ahead of the checkpoint; before
writing, each table's rows at or below its own highest (partition, offset) are dropped, so a
rerun adds exactly what is missing: no duplicate, no gap.

Before reading, ingest makes sure the log is the one the lake holds (offsets_platform.ingest.
log_check): the same cluster id and topic id, and every saved position inside the log.

One ingest at a time per lake: a run holds the lake's "ingest" lease (offsets_platform.lake.lease)
from reading its resume positions to its last write. Two runs that both read the positions before
either wrote would each append the same records (a schedule overlapping a manual run does that).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_platform.codec import decode_batch
from offsets_platform.ingest.log_check import IDENTITY, Gap, check_identity, check_positions, identity_row
from offsets_platform.ingest.progress import Progress
from offsets_platform.kafka.log_identity import LogIdentity, read_log_identity
from offsets_platform.kafka.offsets_topic import OffsetsTopicReader, ReadPlan
from offsets_platform.kafka.open_transactions import read_past_stable_offsets
from offsets_platform.lake import Lake
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.tables import RECORD_TABLES, UTC_MICROS
from offsets_platform.lake.timestamp_range import fit_millisecond_timestamps
from offsets_platform.settings import KafkaConnection

CHECKPOINTS = "offsets_topic_checkpoints"
PENDING = "pending_offset_commits"
INGEST_LEASE = "ingest"
# A run that finds another ingest of the lake under way waits this long for it, then gives up with
# a message naming it; a scheduled run overlapping a long manual catch-up then fails, not duplicates.
DEFAULT_LEASE_WAIT_S = 600.0


class IngestError(RuntimeError):
    """Ingest refused to start; the message says why and what to do."""


@dataclass
class IngestResult:
    """What one ingest run did."""

    run_id: str
    records_read: int = 0
    rows_written: dict[str, int] = field(default_factory=lambda: {name: 0 for name in RECORD_TABLES})
    resumed_from: dict[int, int] = field(default_factory=dict)
    end_offsets: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    pending_commits: int = 0

    @property
    def rejected(self) -> int:
        return self.rows_written["rejected_records"]


def resume_positions(lake: Lake, topic: str) -> dict[int, int]:
    """partition -> next offset of `topic` to read, from the checkpoints (empty before the first run).

    Raises:
        IngestError: the lake holds records of another topic; positions of two logs must not mix.
    """
    rows = lake.query(
        f"select source_topic, source_partition, max(next_offset) as next_offset from {CHECKPOINTS} "
        "group by source_topic, source_partition",
        CHECKPOINTS,
    )
    others = sorted(set(rows["source_topic"].to_pylist()) - {topic})
    if others:
        raise IngestError(f"the lake in {lake.root} holds records of topic {others[0]}, not {topic}: "
                          "a lake holds one log; give this one another home (--home or OFFSETS_PLATFORM_HOME)")
    return dict(zip(rows["source_partition"].to_pylist(), rows["next_offset"].to_pylist()))


def written_up_to(lake: Lake, name: str) -> dict[int, int]:
    """partition -> highest source offset already in a bronze table."""
    rows = lake.query(
        f"select source_partition, max(source_offset) as top from {name} group by source_partition", name
    )
    return dict(zip(rows["source_partition"].to_pylist(), rows["top"].to_pylist()))


def ingest_offsets_topic(
    connection: KafkaConnection,
    lake: Lake,
    *,
    batch_records: int = 250_000,
    emit: Callable[[str], None] = print,
    after_write: Callable[[str], None] | None = None,
    lease_wait_s: float = DEFAULT_LEASE_WAIT_S,
    accept_gap: bool = False,
) -> IngestResult:
    """Read `__consumer_offsets` from where bronze stops up to its current end, into bronze.

    Args:
        connection: the cluster (its bootstrap address must be set) and the topic to read
            (`connection.offsets_topic`).
        lake: where the bronze tables live.
        batch_records: records per decoded batch, and so per Delta commit of each table.
        emit: where progress lines go.
        after_write: called with a table name after each Delta commit (tests use it to stop a
            run at an exact point).
        lease_wait_s: how long to wait while another ingest of this lake runs.
        accept_gap: where records were deleted before ingest read them, read on from the log
            start (the checkpoints record how many were skipped) instead of stopping.

    Returns:
        Counts of records read and rows written per table.

    Raises:
        BrokerUnreachable: the cluster did not answer. Before the first batch is read (the plan,
            the open-transaction check) nothing in the lake has changed; later, the batches
            already checkpointed stay and a rerun resumes after them.
        IngestError: the lake holds another topic's records.
        NotAuthorized: an ACL the ingest needs is missing (Read on the topic, Describe on the
            consumers' groups; docs/security.md); the message names it.
        LogMismatch: the log is not the one the lake holds, or is shorter than what it read, or
            (unless `accept_gap`) lost records ingest had not read; nothing was written.
        LeaseBusy: another ingest of this lake ran for longer than `lease_wait_s`.
    """
    started = datetime.now(timezone.utc)
    result = IngestResult(run_id=f"{started:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}")
    purpose = f"ingest of {connection.offsets_topic} from {connection.bootstrap_servers}"
    with OffsetsTopicReader(connection, batch_records=batch_records) as reader:
        reader.connect()  # a down broker must not leave even empty tables behind
        identity = read_log_identity(connection)
        with hold_lease(lake.leases, INGEST_LEASE, purpose, wait_s=lease_wait_s, emit=emit):
            plan = plan_in_the_lakes_log(lake, reader, identity, result.run_id, accept_gap, emit)
            already = {name: written_up_to(lake, name) for name in RECORD_TABLES}
            result.resumed_from, result.end_offsets = plan.start, plan.end
            # The open transactions as of the plan (plan.end is where read_committed stops: each
            # partition's last stable offset), read before any write: a broker lost here leaves the
            # lake exactly as it was rather than its records ahead of its pending commits.
            past_stable = read_past_stable_offsets(connection, plan.end)
            progress = Progress(f"ingest {connection.offsets_topic}", plan.records_behind, emit)
            for raw in reader.read(plan):
                write_batch(lake, raw, result, started, already, connection.offsets_topic, after_write)
                progress.advance(raw.num_rows)
            progress.finish()
            pending = pending_commit_rows(past_stable, started)
            lake.overwrite(PENDING, pending)
    result.pending_commits = pending.num_rows
    if pending.num_rows:
        emit(f"{pending.num_rows:,} offset commits are in transactions still open (kept in {PENDING})")
    result.seconds = (datetime.now(timezone.utc) - started).total_seconds()
    return result


def plan_in_the_lakes_log(lake: Lake, reader: OffsetsTopicReader, identity: LogIdentity, run_id: str,
                          accept_gap: bool, emit: Callable[[str], None]) -> ReadPlan:
    """The read plan from the lake's positions, once the log is known to be the lake's.

    The first run records the log's identity; an accepted gap is checkpointed, so that later
    runs resume after it.

    Raises:
        LogMismatch: see offsets_platform.ingest.log_check.
    """
    topic, address = reader.topic, reader.connection.bootstrap_servers
    positions = resume_positions(lake, topic)
    recorded = check_identity(lake, topic, address, identity)
    plan = reader.plan(positions)
    gaps = check_positions(lake, topic, address, positions, plan, accept_gap)
    if recorded is None:
        lake.append(IDENTITY, identity_row(identity, topic, run_id))
        if positions:  # a lake written before identities were recorded
            emit(f"recorded the log this lake reads: {identity.describe()}")
    if gaps:
        lake.append(CHECKPOINTS, gap_checkpoint_rows(gaps, run_id, topic))
        emit(f"skipped {sum(gap.records for gap in gaps):,} records of {topic} deleted before ingest "
             f"read them, in {len(gaps)} partitions (recorded in {CHECKPOINTS}.skipped_records)")
    return plan


def write_batch(lake: Lake, raw: pa.Table, result: IngestResult, started: datetime,
                already: dict[str, dict[int, int]], topic: str,
                after_write: Callable[[str], None] | None = None) -> None:
    """Decode one raw batch and append it to every bronze table, then checkpoint it.

    Args:
        lake: where the bronze tables live.
        raw: records as read (OffsetsTopicReader's RAW_SCHEMA).
        result: the run's counters, updated in place.
        started: the run's start, stored as `ingested_at`.
        already: per table, partition -> highest source offset it held when the run started.
        topic: the topic the batch was read from.
        after_write: called with a table name after each Delta commit.
    """
    tables = bronze_tables(raw, result.run_id, started)
    for name in RECORD_TABLES:
        rows = _not_yet_written(tables[name], already[name])
        if rows.num_rows:
            lake.append(name, rows)
            result.rows_written[name] += rows.num_rows
        if after_write:
            after_write(name)
    lake.append(CHECKPOINTS, checkpoint_rows(raw, result.run_id, topic))
    if after_write:
        after_write(CHECKPOINTS)
    result.records_read += raw.num_rows


def bronze_tables(raw: pa.Table, run_id: str, ingested_at: datetime) -> dict[str, pa.Table]:
    """Decode a raw batch and attach where each row came from, per bronze table."""
    decoded = decode_batch(raw["key"], raw["value"])
    parts = {
        "offset_commit_records": decoded.offset_commits,
        "group_metadata_records": decoded.group_metadata,
        "group_metadata_members": decoded.group_members,
        "consumer_group_records": decoded.consumer_group_records,
        "rejected_records": decoded.rejected,
    }
    source = raw.select(["source_partition", "source_offset", "source_timestamp"])
    tables = {}
    for name, part in parts.items():
        rows = part["row"]
        table = source.take(rows)
        table = table.append_column("ingest_run_id", pa.repeat(pa.scalar(run_id, pa.string()), len(part)))
        table = table.append_column("ingested_at", pa.repeat(pa.scalar(ingested_at, UTC_MICROS), len(part)))
        for column in part.column_names:
            if column != "row":
                table = table.append_column(column, part[column])
        if name == "rejected_records":  # keep the raw bytes of what could not be decoded
            table = table.append_column("key", raw["key"].take(rows))
            table = table.append_column("value", raw["value"].take(rows))
        # Kafka's times are any int64 milliseconds; one outside what the lake's timestamps hold
        # must not fail the batch's write (and every rerun after it): it lands as its milliseconds.
        tables[name] = fit_millisecond_timestamps(table)
    return tables


def pending_commit_rows(raw: pa.Table, observed_at: datetime) -> pa.Table:
    """The offset commits (not tombstones) among records of still-open transactions."""
    commits = decode_batch(raw["key"], raw["value"]).offset_commits
    commits = commits.filter(pc.invert(commits["tombstone"]))
    source = raw.select(["source_partition", "source_offset"]).take(commits["row"])
    return pa.table({
        "group": commits["group"], "topic": commits["topic"], "partition": commits["partition"],
        "source_partition": source["source_partition"], "source_offset": source["source_offset"],
        "observed_at": pa.repeat(pa.scalar(observed_at, UTC_MICROS), commits.num_rows),
    })


def checkpoint_rows(raw: pa.Table, run_id: str, topic: str) -> pa.Table:
    """One row per partition in the batch: everything of `topic` below next_offset is in bronze."""
    grouped = raw.group_by("source_partition").aggregate([("source_offset", "max"), ("source_offset", "count")])
    count = grouped.num_rows
    return pa.table({
        "ingest_run_id": pa.repeat(pa.scalar(run_id, pa.string()), count),
        "source_topic": pa.repeat(pa.scalar(topic, pa.string()), count),
        "source_partition": grouped["source_partition"],
        "next_offset": pc.add(grouped["source_offset_max"], 1),
        "record_count": grouped["source_offset_count"],
        "checkpointed_at": pa.repeat(pa.scalar(datetime.now(timezone.utc), UTC_MICROS), count),
        "skipped_records": pa.nulls(count, pa.int64()),
    })


def gap_checkpoint_rows(gaps: list[Gap], run_id: str, topic: str) -> pa.Table:
    """One row per partition whose deleted records ingest was told to skip: it resumes at the log start."""
    count = len(gaps)
    return pa.table({
        "ingest_run_id": pa.repeat(pa.scalar(run_id, pa.string()), count),
        "source_topic": pa.repeat(pa.scalar(topic, pa.string()), count),
        "source_partition": pa.array([gap.partition for gap in gaps], pa.int32()),
        "next_offset": pa.array([gap.log_start for gap in gaps], pa.int64()),
        "record_count": pa.repeat(pa.scalar(0, pa.int64()), count),
        "checkpointed_at": pa.repeat(pa.scalar(datetime.now(timezone.utc), UTC_MICROS), count),
        "skipped_records": pa.array([gap.records for gap in gaps], pa.int64()),
    })


def _not_yet_written(table: pa.Table, written: dict[int, int]) -> pa.Table:
    """Drop rows a killed earlier run already committed to this table."""
    if not written or not table.num_rows:
        return table
    top = np.full(max(max(written), int(pc.max(table["source_partition"]).as_py())) + 1, -1, dtype=np.int64)
    for partition, offset in written.items():
        top[partition] = offset
    partitions = table["source_partition"].to_numpy()
    offsets = table["source_offset"].to_numpy()
    return table.filter(pa.array(offsets > top[partitions]))
