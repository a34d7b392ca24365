"""Hand-built bronze input for the model tests: records and snapshots as ingest would write them.

Every method adds rows with only the fields a rule looks at; the rest are filled with what
ingest writes (nulls, a run id). Log records of one group get increasing source offsets in
one `__consumer_offsets` partition (0 unless a commit names another), in the order they are
added, as Kafka appends them.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pyarrow as pa

from offsets_platform.lake import Lake
from offsets_platform.lake.tables import table_spec
from offsets_platform.lake.timestamp_range import LAKE_TIMESTAMP_MAX_MS, LAKE_TIMESTAMP_MIN_MS, out_of_range_column

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def at(days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0) -> datetime:
    return T0 + timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def ms(moment: datetime) -> int:
    """Epoch milliseconds of a moment, as Kafka stores times."""
    return (moment - EPOCH) // timedelta(milliseconds=1)


def kafka_times(**millis: int | None) -> dict:
    """Bronze fields for times Kafka stored (column name -> epoch ms, any int64), as ingest lands
    them: the timestamp, or null and the milliseconds in `<column>_out_of_range_ms`."""
    fields = {}
    for name, value in millis.items():
        if value is not None and not LAKE_TIMESTAMP_MIN_MS <= value <= LAKE_TIMESTAMP_MAX_MS:
            fields.update({name: None, out_of_range_column(name): value})
        else:
            fields[name] = None if value is None else EPOCH + timedelta(milliseconds=value)
    return fields


class BronzeBuilder:
    def __init__(self):
        self.rows: dict[str, list[dict]] = defaultdict(list)
        self._next_offsets: dict[int, int] = defaultdict(int)  # per __consumer_offsets partition
        self._skipped: dict[int, int] = defaultdict(int)  # per partition, since its last checkpoint
        self._checkpointed: dict[int, int] = defaultdict(int)  # per partition, the last checkpoint's next offset

    @property
    def _next_offset(self) -> int:
        """The next source offset of partition 0, where records go by default."""
        return self._next_offsets[0]

    @_next_offset.setter
    def _next_offset(self, offset: int) -> None:
        self._next_offsets[0] = offset

    def _log(self, table: str, written_at: datetime, **fields) -> dict:
        partition = fields.get("source_partition", 0)
        row = {"source_partition": partition, "source_offset": self._next_offsets[partition],
               "source_timestamp": written_at, "ingest_run_id": "test", "ingested_at": written_at, "key_version": 1,
               **fields}
        self._next_offsets[partition] += 1
        self.rows[table].append(row)
        return row

    # --- __consumer_offsets records ---------------------------------------------------------
    def commit(self, group: str, topic: str, partition: int, offset: int, committed_at: datetime,
               expire_at: datetime | None = None, source_partition: int = 0) -> None:
        self._log("offset_commit_records", committed_at, group=group, topic=topic, partition=partition,
                  tombstone=False, value_version=1 if expire_at else 3, offset=offset, leader_epoch=-1,
                  metadata="", commit_timestamp=committed_at, expire_timestamp=expire_at,
                  source_partition=source_partition)

    def compacted_away(self, source_partition: int = 0) -> None:
        """A record ingest never saw: the log cleaner removed it before ingest read its offset."""
        self._next_offsets[source_partition] += 1
        self._skipped[source_partition] += 1

    def ingest_checkpoints(self, checkpointed_at: datetime) -> None:
        """Ingest's checkpoint of every partition with records since its last one, one batch
        each: every offset was read, and those `compacted_away` never reached bronze."""
        for partition, next_offset in self._next_offsets.items():
            if next_offset == self._checkpointed[partition]:
                continue
            self.rows["offsets_topic_checkpoints"].append({
                "ingest_run_id": "test", "source_topic": "__consumer_offsets", "source_partition": partition,
                "next_offset": next_offset,
                "record_count": next_offset - self._checkpointed[partition] - self._skipped[partition],
                "checkpointed_at": checkpointed_at})
            self._checkpointed[partition], self._skipped[partition] = next_offset, 0

    def next_round(self) -> "BronzeBuilder":
        """A builder of the rows that come next: the log of every partition goes on where this
        one stopped, and the next checkpoints count from this one's."""
        following = BronzeBuilder()
        following._next_offsets.update(self._next_offsets)
        following._skipped.update(self._skipped)
        following._checkpointed.update(self._checkpointed)
        return following

    def commit_ms(self, group: str, topic: str, partition: int, offset: int, commit_ms: int,
                  expire_ms: int | None = None, written_at: datetime | None = None,
                  record_ms: int | None = None) -> None:
        """A commit whose times are given as Kafka stores them (epoch ms, any int64): the commit
        and legacy expire timestamps, and the record's timestamp (`record_ms`, default
        `written_at`, default the commit time if the timestamps can hold it, else T0)."""
        record_ms = record_ms if record_ms is not None else ms(written_at) if written_at else (
            commit_ms if LAKE_TIMESTAMP_MIN_MS <= commit_ms <= LAKE_TIMESTAMP_MAX_MS else ms(T0))
        row = self._log("offset_commit_records", T0, group=group, topic=topic, partition=partition,
                        tombstone=False, value_version=3 if expire_ms is None else 1, offset=offset,
                        leader_epoch=-1, metadata="")
        row.update(kafka_times(source_timestamp=record_ms, commit_timestamp=commit_ms, expire_timestamp=expire_ms))

    def offset_tombstone(self, group: str, topic: str, partition: int, written_at: datetime) -> None:
        self._log("offset_commit_records", written_at, group=group, topic=topic, partition=partition,
                  tombstone=True)

    def group_record(self, group: str, written_at: datetime, members: dict[str, list[str] | None] | None = None,
                     protocol_type: str = "consumer", current_state_at: datetime | None = None,
                     generation: int = 1, current_state_ms: int | None = None) -> None:
        """A classic group record; `members` maps member id to subscribed topics (None: opaque).
        `current_state_ms` gives its current state time as Kafka stores it (any int64)."""
        members = members or {}
        has_state_time = current_state_at is not None or current_state_ms is not None
        row = self._log("group_metadata_records", written_at, key_version=2, group=group, tombstone=False,
                        value_version=3 if has_state_time else 1, protocol_type=protocol_type,
                        generation=generation, protocol="range" if members else None,
                        leader=next(iter(members), None), current_state_timestamp=current_state_at,
                        member_count=len(members))
        if current_state_ms is not None:
            row.update(kafka_times(current_state_timestamp=current_state_ms))
        for index, (member_id, topics) in enumerate(members.items()):
            self.rows["group_metadata_members"].append({
                **{k: row[k] for k in ("source_partition", "source_offset", "source_timestamp", "ingest_run_id",
                                       "ingested_at", "group")},
                "member_index": index, "member_id": member_id, "client_id": member_id, "client_host": "/10.0.0.1",
                "subscription_version": 0 if topics is not None else None, "subscribed_topics": topics})

    def group_tombstone(self, group: str, written_at: datetime) -> None:
        self._log("group_metadata_records", written_at, key_version=2, group=group, tombstone=True)

    def kip848_group(self, group: str, written_at: datetime, epoch: int = 1, tombstone: bool = False) -> None:
        self._log("consumer_group_records", written_at, key_version=3, record_type="consumer_group_metadata",
                  group=group, tombstone=tombstone, group_epoch=None if tombstone else epoch)

    def kip848_member(self, group: str, member_id: str, written_at: datetime, topics: list[str] | None = None,
                      tombstone: bool = False, regex: str | None = None) -> None:
        self._log("consumer_group_records", written_at, key_version=5,
                  record_type="consumer_group_member_metadata", group=group, member_id=member_id,
                  tombstone=tombstone, subscribed_topic_names=None if tombstone else (topics or []),
                  subscribed_topic_regex=None if tombstone else regex)

    def kip848_regex(self, group: str, regex: str, written_at: datetime, topics: list[str] | None = None,
                     tombstone: bool = False) -> None:
        """A KIP-848 group's resolved regular expression (type 16), or its tombstone."""
        self._log("consumer_group_records", written_at, key_version=16,
                  record_type="consumer_group_regular_expression", group=group, regular_expression=regex,
                  tombstone=tombstone, resolved_topics=None if tombstone else topics)

    def streams_group(self, group: str, written_at: datetime, epoch: int = 1, tombstone: bool = False) -> None:
        self._log("consumer_group_records", written_at, key_version=17, record_type="streams_group_metadata",
                  group=group, tombstone=tombstone, group_epoch=None if tombstone else epoch)

    def streams_member(self, group: str, member_id: str, written_at: datetime, tombstone: bool = False) -> None:
        self._log("consumer_group_records", written_at, key_version=19,
                  record_type="streams_group_member_metadata", group=group, member_id=member_id,
                  tombstone=tombstone)

    def streams_topology(self, group: str, written_at: datetime, source_topics: list[str]) -> None:
        self._log("consumer_group_records", written_at, key_version=23, record_type="streams_group_topology",
                  group=group, tombstone=False, source_topics=source_topics)

    def pending_commit(self, group: str, topic: str, partition: int, seen_at: datetime) -> None:
        self.rows["pending_offset_commits"].append({"group": group, "topic": topic, "partition": partition,
                                                    "source_partition": 0, "source_offset": 10**9,
                                                    "observed_at": seen_at})

    # --- admin-API snapshots ----------------------------------------------------------------
    def snapshot(self, snapshot_at: datetime, groups: list[dict] = (), members: list[dict] = (),
                 offsets: list[dict] = (), logs: list[dict] = (), topics: list[dict] = (),
                 retention_minutes: int = 10080, errors: list[dict] = ()) -> str:
        """One complete snapshot; each list holds rows of its table without the snapshot fields
        (`errors`: rows of snapshot_errors, the calls that failed)."""
        snapshot_id = f"s-{snapshot_at:%Y%m%d%H%M%S}"
        common = {"snapshot_id": snapshot_id, "snapshot_at": snapshot_at}
        for table, rows in (("group_snapshots", groups), ("group_member_snapshots", members),
                            ("committed_offset_snapshots", offsets), ("log_offset_snapshots", logs),
                            ("topic_configs", topics), ("snapshot_errors", errors)):
            self.rows[table] += [{**common, **row} for row in rows]
        self.rows["broker_configs"].append({**common, "offsets_retention_minutes": retention_minutes,
                                            "offsets_retention_source": "broker"})
        return snapshot_id

    def write(self, lake: Lake) -> None:
        for table, rows in self.rows.items():
            schema = table_spec(table).schema
            lake.append(table, pa.Table.from_pylist([{name: row.get(name) for name in schema.names}
                                                     for row in rows], schema=schema))
