"""A bronze lake of generated coordinator history, written without a broker, for scale tests.

The generator (`coordinator_history`) streams a large cluster's records; `BronzeFeed` decodes and
writes them to bronze exactly as one ingest batch does, and `add_snapshots` adds admin-API
snapshots derived from the log (two, or as many as a benchmark asks for), so that every model has
rows. The benchmarks and the report's scale test build their lakes with it.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_platform.ingest.offsets_topic import IngestResult, write_batch
from offsets_platform.kafka.offsets_topic import RAW_SCHEMA
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES

from .coordinator_history import generate_batches
from .partitioning import DEFAULT_PARTITIONS
from .produce import HISTORY_TOPIC

BATCH = 250_000  # ingest's default batch_records: one Delta commit per table per batch, as ingest makes


class BronzeFeed:
    """One generator stream, written to bronze in slices (the build, then each append).

    The stream is sized for everything the run will write, so the appends are its later
    records: the same groups, later timestamps, and per-partition offsets that continue.
    """

    def __init__(self, lake: Lake, total: int, groups: int | None = None, topic_partitions: int | None = None):
        self.lake = lake
        self.batches = generate_batches(seed=7, records=total, batch_size=BATCH, groups=groups,
                                        topic_partitions=topic_partitions)
        self.pending = pa.table({})  # the rest of the last generated batch
        self.next_offset = np.zeros(DEFAULT_PARTITIONS, np.int64)
        self.written = 0

    def append(self, records: int, label: str) -> float:
        """Write the next `records` records as one ingest run; returns the write seconds."""
        seconds = 0.0
        while records > 0:
            raw = self.take(min(records, BATCH))
            records -= raw.num_rows
            started = time.perf_counter()
            append_raw(self.lake, raw, label)
            seconds += time.perf_counter() - started
            self.written += raw.num_rows
            if label == "build":
                print(f"  bronze: {self.written:,} records written", file=sys.stderr, flush=True)
        return seconds

    def take(self, records: int) -> pa.Table:
        """The next `records` records of the stream, with their log offsets, not yet written."""
        parts = []
        while records > 0:
            if not self.pending.num_rows:
                self.pending = next(self.batches)
            batch, self.pending = self.pending.slice(0, records), self.pending.slice(records)
            records -= batch.num_rows
            parts.append(self._with_offsets(batch))
        return pa.concat_tables(parts)

    def _with_offsets(self, batch: pa.Table) -> pa.Table:
        """Give each record the next offset of its partition, as the log would (vectorised:
        a stable sort by partition, then each row's rank within its partition)."""
        partitions = batch["partition"].to_numpy()
        order = np.argsort(partitions, kind="stable")
        counts = np.bincount(partitions, minlength=DEFAULT_PARTITIONS)
        first = np.cumsum(counts) - counts  # where each partition's rows start in `order`
        sorted_parts = partitions[order]
        offsets = np.empty(len(partitions), np.int64)
        offsets[order] = self.next_offset[sorted_parts] + np.arange(len(partitions)) - first[sorted_parts]
        self.next_offset += counts
        return pa.table([batch["partition"], pa.array(offsets), batch["timestamp"], batch["key"], batch["value"]],
                        schema=RAW_SCHEMA)


def append_raw(lake: Lake, raw: pa.Table, label: str) -> None:
    """Decode and write raw records to bronze exactly as one ingest batch does."""
    write_batch(lake, raw, IngestResult(run_id=f"bench-{label}"), datetime.now(timezone.utc),
                {name: {} for name in RECORD_TABLES}, HISTORY_TOPIC)


def add_snapshots(lake: Lake, count: int = 2, every: timedelta | None = None, retained: int | None = None) -> None:
    """`count` admin-API snapshots derived from the log, so that the snapshot-driven models
    (snapshot_offsets, consumer_lag, retention_forecast, unconsumed_messages, consumer_status) have
    rows. The last is taken at the log's latest record, the others before it: an hour apart for
    two, and 15 minutes apart (a deployment's schedule) for more. Each sees the committed offsets
    the log has now, except that on the even partitions the groups were 10 messages further
    behind at each earlier snapshot (so some offsets change from one snapshot to the next); log
    end offsets 1,000 messages further at each snapshot, ahead of the highest commit; and
    retention moving the log start from 0 at the first snapshot to half of the highest commit at
    the last, in equal steps.

    `every` sets the snapshots' spacing instead. `retained` shapes the log as a real cluster's over
    a long history: its end grows in equal steps from half the highest commit (plus 1,000) to the
    highest commit (plus 1,000), and retention keeps `retained` snapshots' worth of it, so the log
    start at each snapshot is the log end `retained` snapshots before (0 before that)."""
    if count < 2:
        raise ValueError("add_snapshots needs at least two snapshots: the models compare one with the one before")
    offsets, at = _offsets_in_log(lake)
    every = every or (timedelta(hours=1) if count == 2 else timedelta(minutes=15))
    ends = offsets.group_by(["topic", "partition"]).aggregate([("committed_offset", "max")])
    top = ends["committed_offset_max"]

    def log_end(index: int) -> pa.Array:
        if retained is None:
            return pc.add(top, 1000 * (index + 1))
        half = pc.divide(top, 2)
        return pc.add(pc.add(half, pc.divide(pc.multiply(pc.subtract(top, half), index), count - 1)), 1000)

    def log_start(index: int) -> pa.Array:
        if retained is None:
            return pc.divide(pc.multiply(pc.divide(top, 2), index), count - 1)
        return log_end(index - retained) if index >= retained else pc.multiply(top, 0)

    trailing = pc.equal(pc.bit_wise_and(offsets["partition"], 1), 0)
    for index in range(count):
        behind = 10 * (count - 1 - index)
        committed = pc.if_else(trailing, pc.max_element_wise(pc.subtract(offsets["committed_offset"], behind), 0),
                               offsets["committed_offset"])
        _append_snapshot(lake, at - every * (count - 1 - index), f"bench{index}",
                         offsets.set_column(offsets.schema.get_field_index("committed_offset"), "committed_offset",
                                            committed),
                         pa.table({"topic": ends["topic"], "partition": ends["partition"],
                                   "log_start_offset": log_start(index), "log_end_offset": log_end(index)}))
    print(f"  snapshots: {count} x {offsets.num_rows:,} committed offsets, {ends.num_rows:,} partitions "
          f"in {len(pc.unique(ends['topic']))} topics", file=sys.stderr, flush=True)


def add_next_snapshot(lake: Lake, log_start_step: int = 10) -> None:
    """One more snapshot, as a deployment's next scheduled one: 15 minutes after the latest (or at
    the log's latest record, if later), seeing the committed offsets the log has now, each
    partition's log start `log_start_step` messages further than at the latest snapshot (retention
    deleting on), and its log end 1,000 further (at least 1,000 past the highest commit)."""
    offsets, at = _offsets_in_log(lake)
    last = lake.query(
        "select arrow_cast(topic, 'Utf8') as topic, \"partition\", log_start_offset, log_end_offset, snapshot_at "
        "from log_offset_snapshots where snapshot_at = (select max(snapshot_at) from log_offset_snapshots)",
        "log_offset_snapshots")
    at = max(at, last["snapshot_at"][0].as_py() + timedelta(minutes=15))
    last = last.drop_columns(["snapshot_at"])
    ends = offsets.group_by(["topic", "partition"]).aggregate([("committed_offset", "max")])
    # pyarrow joins no string views, which delta-rs may hand back despite the casts
    logs = _plain_topic(ends).join(_plain_topic(last), ["topic", "partition"], join_type="left outer")
    _append_snapshot(lake, at, "next", offsets, pa.table({
        "topic": logs["topic"], "partition": logs["partition"],
        "log_start_offset": pc.add(pc.coalesce(logs["log_start_offset"], 0), log_start_step),
        "log_end_offset": pc.max_element_wise(pc.add(pc.coalesce(logs["log_end_offset"], 0), 1000),
                                              pc.add(logs["committed_offset_max"], 1000))}))


def _plain_topic(table: pa.Table) -> pa.Table:
    return table.set_column(table.schema.get_field_index("topic"), "topic", pc.cast(table["topic"], pa.string()))


def _offsets_in_log(lake: Lake) -> tuple[pa.Table, datetime]:
    """Every live committed offset the log holds now (group, topic, partition, committed_offset),
    and the time of its latest record."""
    offsets = lake.query(  # delta-rs hands strings back as views, which pyarrow cannot group yet
        "select arrow_cast(\"group\", 'Utf8') as \"group\", arrow_cast(topic, 'Utf8') as topic, \"partition\", "
        "committed_offset from (select \"group\", topic, \"partition\", "
        "last_value(\"offset\" order by source_offset) as committed_offset, "
        "last_value(tombstone order by source_offset) as removed "
        "from offset_commit_records group by \"group\", topic, \"partition\") where not removed",
        "offset_commit_records")
    at = lake.query("select max(source_timestamp) as at from offset_commit_records",
                    "offset_commit_records")["at"][0].as_py()
    return offsets, at


def _append_snapshot(lake: Lake, snapshot_at: datetime, name: str, offsets: pa.Table, logs: pa.Table) -> None:
    """One complete snapshot: `offsets` (group, topic, partition, committed_offset) and `logs`
    (topic, partition, log_start_offset, log_end_offset); every topic with week-long delete retention."""
    snapshot_id = f"{snapshot_at:%Y%m%dT%H%M%S}-{name}"

    def stamped(table: pa.Table) -> pa.Table:
        return table.append_column("snapshot_id", pa.repeat(pa.scalar(snapshot_id), table.num_rows)) \
            .append_column("snapshot_at", pa.repeat(pa.scalar(snapshot_at, pa.timestamp("us", "UTC")),
                                                    table.num_rows))

    rows, partitions = offsets.num_rows, logs.num_rows
    topics = pc.unique(logs["topic"])
    lake.append("committed_offset_snapshots", stamped(
        offsets.append_column("leader_epoch", pa.nulls(rows, pa.int32()))
        .append_column("metadata", pa.nulls(rows, pa.string()))
        .append_column("fetched_at", pa.nulls(rows, pa.timestamp("us", "UTC")))))
    lake.append("log_offset_snapshots", stamped(
        logs.append_column("listed_at", pa.nulls(partitions, pa.timestamp("us", "UTC")))
        .append_column("max_timestamp_ms", pa.nulls(partitions, pa.int64()))))
    lake.append("topic_configs", stamped(pa.table({
        "topic": topics, "retention_ms": pa.repeat(pa.scalar(7 * 86_400_000), len(topics)),
        "retention_bytes": pa.repeat(pa.scalar(-1), len(topics)),
        "cleanup_policy": pa.repeat(pa.scalar("delete"), len(topics)),
        "message_timestamp_type": pa.repeat(pa.scalar("CreateTime"), len(topics))})))
    lake.append("broker_configs", stamped(pa.table({  # written last: it completes the snapshot
        "offsets_retention_minutes": [10080], "offsets_retention_source": ["broker"]})))
