"""A bronze lake of generated coordinator history, written without a broker, for scale tests.

The generator (`coordinator_history`) streams a large cluster's records; `BronzeFeed` decodes and
writes them to bronze exactly as one ingest batch does, and `add_snapshots` adds two admin-API
snapshots derived from the log, so that every model has rows. The models benchmark and the
report's scale test build their lakes with it.
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


def add_snapshots(lake: Lake) -> None:
    """Two admin-API snapshots an hour apart, derived from the log, so that the snapshot-driven
    models (snapshot_offsets, consumer_lag, retention_forecast, unconsumed_messages) have rows:
    committed offsets as the log has them now, log end offsets a little ahead of the highest
    commit, and retention moving the log start between the two snapshots."""
    offsets = lake.query(  # delta-rs hands strings back as views, which pyarrow cannot group yet
        "select arrow_cast(\"group\", 'Utf8') as \"group\", arrow_cast(topic, 'Utf8') as topic, \"partition\", "
        "committed_offset from (select \"group\", topic, \"partition\", "
        "last_value(\"offset\" order by source_offset) as committed_offset, "
        "last_value(tombstone order by source_offset) as removed "
        "from offset_commit_records group by \"group\", topic, \"partition\") where not removed",
        "offset_commit_records")
    at = lake.query("select max(source_timestamp) as at from offset_commit_records",
                    "offset_commit_records")["at"][0].as_py()
    ends = offsets.group_by(["topic", "partition"]).aggregate([("committed_offset", "max")])
    topics = pc.unique(ends["topic"])
    for index, snapshot_at in enumerate((at - timedelta(hours=1), at)):
        snapshot_id = f"{snapshot_at:%Y%m%dT%H%M%S}-bench{index}"

        def stamped(table: pa.Table, snapshot_id: str = snapshot_id, snapshot_at: datetime = snapshot_at) -> pa.Table:
            return table.append_column("snapshot_id", pa.repeat(pa.scalar(snapshot_id), table.num_rows)) \
                .append_column("snapshot_at", pa.repeat(pa.scalar(snapshot_at, pa.timestamp("us", "UTC")),
                                                        table.num_rows))

        top, count = ends["committed_offset_max"], offsets.num_rows
        lake.append("committed_offset_snapshots", stamped(
            offsets.append_column("leader_epoch", pa.nulls(count, pa.int32()))
            .append_column("metadata", pa.nulls(count, pa.string()))
            .append_column("fetched_at", pa.nulls(count, pa.timestamp("us", "UTC")))))
        lake.append("log_offset_snapshots", stamped(pa.table({
            "topic": ends["topic"], "partition": ends["partition"],
            "log_start_offset": pc.multiply(pc.divide(top, 2), index),  # the second snapshot deleted half
            "log_end_offset": pc.add(top, 1000 * (index + 1)),
            "listed_at": pa.nulls(len(top), pa.timestamp("us", "UTC")),
            "max_timestamp_ms": pa.nulls(len(top), pa.int64())})))
        lake.append("topic_configs", stamped(pa.table({
            "topic": topics, "retention_ms": pa.repeat(pa.scalar(7 * 86_400_000), len(topics)),
            "retention_bytes": pa.repeat(pa.scalar(-1), len(topics)),
            "cleanup_policy": pa.repeat(pa.scalar("delete"), len(topics)),
            "message_timestamp_type": pa.repeat(pa.scalar("CreateTime"), len(topics))})))
        lake.append("broker_configs", stamped(pa.table({  # written last: it completes the snapshot
            "offsets_retention_minutes": [10080], "offsets_retention_source": ["broker"]})))
    print(f"  snapshots: 2 x {offsets.num_rows:,} committed offsets, {ends.num_rows:,} partitions "
          f"in {len(topics)} topics", file=sys.stderr, flush=True)
