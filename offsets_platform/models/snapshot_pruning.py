"""Pruning the log offset snapshots: the rows no model can read again leave the lake.

Every admin-API snapshot adds a row per topic partition to `log_offset_snapshots` (ListOffsets
earliest, latest and max timestamp): a cluster with 100,000 partitions and a snapshot every 15
minutes adds 9.6 M rows a day. The models that read more than the latest snapshot's rows read them
as a history per partition, and each needs only part of it:

- consumer_lag brackets the oldest unread offset with the log ends around it. That offset is at or
  above the partition's log start now, and log starts only grow, so the snapshots before the one
  preceding the first whose log end passed the log start now bracket no offset it will ever look
  for (a partition whose log end never passed it needs only its latest snapshot, which precedes the
  first that will);
- consumer_status brackets each observation in its window with the log ends around it, and looks
  for the latest snapshot a partition's last offset had reached after the last observation: the
  snapshots before the one at or preceding the partition's earliest observation that can still be
  in a window bracket none. Those observations are every one log_observations keeps, and for the
  partitions the log holds no commit of, the latest consumer_status_window changes of the offset
  the snapshots saw (consumer_observations' rule);
- unconsumed_messages (and the prune of offset commit records) find the moves of the log start
  between two consecutive snapshots. A move seen after the cutoff may still be judged again, by
  commits ingest reads later in its interval, so the latest snapshot before the cutoff stays. Every
  move seen at or before that snapshot (the latest complete one before the cutoff, which every model
  has read) is settled: its losses, as unconsumed_messages judged them, are copied to
  settled_unconsumed_messages, then the snapshot is recorded in settled_log_start_moves, and only
  then do rows leave. unconsumed_messages keeps those losses from there and never judges those
  moves again (a full run takes them as they are, an incremental one never withdraws them), even
  where the rows consumer_lag and consumer_status keep still show them. So the prunes of the offset
  commit records and of the committed offset snapshots may remove what judged them.

So a row of a complete snapshot older than the cutoff leaves when it is older than where
consumer_lag and consumer_status read its partition from and than the partition's latest snapshot
before the cutoff. Each partition loses only the front of its history: between two rows that stay,
none leaves, so no two snapshots that were not consecutive become so, and every move the snapshots
still show is one they showed before. tests/models/test_snapshot_pruning.py checks that every table
is the same with and without the prune, incrementally and in full.

The cutoff and the leases are the prune of offset commit records' (offsets_platform.models.pruning):
the horizon before now, never after the latest complete snapshot nor after one some model has not
read; only rows every model that reads the table has read. Two things make an answer after a prune
differ from the one every row would give: a topic deleted and created again under the same name
(its log start falls), and a consumer_status_window raised past the one the last refresh used. A
settled loss keeps the judgement it had when it was settled: a later change of the watched_groups
variable, a commit of its interval that ingest reads only after the horizon has passed, or a
snapshot before it that completes only then, does not change it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES
from offsets_platform.models.project import ModelProject, default_project
from offsets_platform.models.pruning import (
    DEFAULT_HORIZON,
    PruneScope,
    as_utc,
    kept_counts,
    prune_scope,
    timed_under_every_lease,
    timestamp_literal,
)
from offsets_platform.models.runner import default_variables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PRUNED_TABLE = "log_offset_snapshots"
SETTLED_TABLE = "settled_unconsumed_messages"
SETTLED_MOVES_TABLE = "settled_log_start_moves"
_VIEW_PREFIX = "snapshot_prune__"  # the runner caches views by name in a session: these must not clash


@dataclass(frozen=True)
class SnapshotPruneResult:
    """What a prune of the log offset snapshots did (or, `dry_run`, would do)."""
    cutoff: datetime | None  # rows of the complete snapshots before it were candidates; None: none was
    rows_before: int  # in log_offset_snapshots
    removed: int  # rows removed (would be, in a dry run)
    kept: dict[str, int] = field(default_factory=dict)  # candidates kept, by reason
    losses_settled: int = 0  # unconsumed_messages rows copied to settled_unconsumed_messages (would be)
    settled_through: datetime | None = None  # the moves seen at or before it are settled; None: none newly
    files_vacuumed: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    nothing_because: str = ""  # why no row was a candidate

    @classmethod
    def nothing(cls, scope: PruneScope, dry_run: bool) -> "SnapshotPruneResult":
        """The result of a prune no row was a candidate for (scope.nothing_because says why)."""
        return cls(cutoff=None, rows_before=scope.rows_before, removed=0, dry_run=dry_run,
                   nothing_because=scope.nothing_because)


def prune_log_offset_snapshots(spark: "SparkSession", lake: Lake, horizon: timedelta = DEFAULT_HORIZON,
                               now: datetime | None = None, dry_run: bool = False, lease_wait_s: float = 30.0,
                               project: ModelProject | None = None,
                               emit: Callable[[str], None] = print) -> SnapshotPruneResult:
    """Remove the log offset snapshot rows older than `horizon` that no model can read again
    (module doc)."""
    project = project or default_project()
    return timed_under_every_lease(lake, project, "prune of log offset snapshots", lease_wait_s, emit, lambda: _prune(
        spark, lake, project, horizon, now or datetime.now(timezone.utc), dry_run, emit))


def _prune(spark: "SparkSession", lake: Lake, project: ModelProject, horizon: timedelta, now: datetime,
           dry_run: bool, emit: Callable[[str], None]) -> SnapshotPruneResult:
    scope = prune_scope(lake, project, PRUNED_TABLE, now, horizon)
    rows_before, read_by_all, cutoff = scope.rows_before, scope.read_by_all, scope.cutoff
    if cutoff is None:
        return SnapshotPruneResult.nothing(scope, dry_run)
    emit(f"pruning log offset snapshot rows of complete snapshots before {cutoff:%Y-%m-%d %H:%M:%S} UTC that "
         f"every model has read (table version {read_by_all}) and none can read again")
    _register(spark, lake, read_by_all, status_window_size(lake))
    verdicts = _verdicts(spark, cutoff)
    kept = {row["kept_because"]: row["rows"] for row in verdicts.where("is_candidate")
            .groupBy("kept_because").count().withColumnRenamed("count", "rows").collect()}
    removable = kept.pop(None, 0)
    # every row that leaves is before the latest complete snapshot before the cutoff, so the moves
    # it shows are settled by now, or by this prune
    settled_through = _newly_settled_through(lake, cutoff)
    settled = _losses_to_settle(spark, settled_through, now).toArrow() if settled_through else None
    losses_settled = settled.num_rows if settled is not None else 0
    if dry_run:
        return SnapshotPruneResult(cutoff=cutoff, rows_before=rows_before, removed=removable, kept=kept,
                                   losses_settled=losses_settled, settled_through=settled_through, dry_run=True)
    # The losses first, then how far they go, then the rows: a prune that dies after the first
    # leaves settled losses whose moves are still judged, which unconsumed_messages takes once.
    if losses_settled:
        lake.append(SETTLED_TABLE, settled)
    if settled_through:
        lake.append(SETTLED_MOVES_TABLE, pa.Table.from_pylist(
            [{"settled_through_at": settled_through, "settled_at": now}], schema=TABLES[SETTLED_MOVES_TABLE].schema))
        emit(f"settled the moves of log starts seen through {settled_through:%Y-%m-%d %H:%M:%S} UTC: "
             f"{losses_settled:,} losses of unconsumed_messages")
    removed = 0
    if removable:
        doomed = verdicts.where("is_candidate and kept_because is null").select("snapshot_id", "topic", "partition")
        removed = lake.spark_delete_pruned(PRUNED_TABLE, doomed)
    emit(f"removed {removed:,} of {rows_before:,} log offset snapshot rows; kept of those older {kept_counts(kept)}")
    return SnapshotPruneResult(cutoff=cutoff, rows_before=rows_before, removed=removed, kept=kept,
                               losses_settled=losses_settled, settled_through=settled_through,
                               files_vacuumed=lake.vacuum(PRUNED_TABLE))


def finished_prune(lake: Lake, table: str, rows: str, scope: PruneScope, kept: dict[str, int], removed: int,
                   dry_run: bool, emit: Callable[[str], None]) -> SnapshotPruneResult:
    """The result of a prune of a snapshot table (`rows`: what its rows are) that kept `kept` of the
    candidates and removed `removed` rows (would remove, in a dry run); said, and the table
    vacuumed, unless a dry run."""
    if dry_run:
        return SnapshotPruneResult(cutoff=scope.cutoff, rows_before=scope.rows_before, removed=removed, kept=kept,
                                   dry_run=True)
    emit(f"removed {removed:,} of {scope.rows_before:,} {rows} rows; kept of those older {kept_counts(kept)}")
    return SnapshotPruneResult(cutoff=scope.cutoff, rows_before=scope.rows_before, removed=removed, kept=kept,
                               files_vacuumed=lake.vacuum(table))


def _newly_settled_through(lake: Lake, cutoff: datetime) -> datetime | None:
    """The latest complete snapshot before the cutoff, when no prune settled the moves through it
    yet (every model has read it: the cutoff is never after a snapshot one has not)."""
    before = [at for at in _utc_times(lake, "broker_configs", "snapshot_at") if at < cutoff]
    settled = _utc_times(lake, SETTLED_MOVES_TABLE, "settled_through_at")
    through = max(before, default=None)
    return through if through is not None and (not settled or through > max(settled)) else None


def _utc_times(lake: Lake, table: str, column: str) -> list[datetime]:
    if not lake.exists(table):
        return []
    return [as_utc(moment) for moment in lake.read_arrow(table, [column]).column(column).to_pylist()]


def register_unsettled_move_snapshots(spark: "SparkSession", lake: Lake, view: str) -> None:
    """A view `view` of the log offset snapshot rows (snapshot_id, topic, partition) a move that
    unconsumed_messages can still judge may start or end at: each partition's rows from its latest
    snapshot at or before the one the moves are settled through on (all of them when none is). The
    other prunes keep what unconsumed_messages reads at those snapshots."""
    lake.spark_read(spark, PRUNED_TABLE).createOrReplaceTempView(f"{view}__log_rows")
    lake.spark_read(spark, "broker_configs").createOrReplaceTempView(f"{view}__broker_configs")
    lake.spark_read(spark, SETTLED_MOVES_TABLE).createOrReplaceTempView(f"{view}__settled_moves")
    spark.sql(f"""
        select snapshot_id, topic, `partition`
        from (
            select
                o.snapshot_id,
                o.topic,
                o.`partition`,
                s.snapshot_at,
                max(case when s.snapshot_at <= t.snapshot_at then s.snapshot_at end)
                    over (partition by o.topic, o.`partition`) as latest_settled_at
            from {view}__log_rows as o
            inner join {view}__broker_configs as s on o.snapshot_id = s.snapshot_id
            cross join (select max(settled_through_at) as snapshot_at from {view}__settled_moves) as t
        )
        where latest_settled_at is null or snapshot_at >= latest_settled_at
    """).createOrReplaceTempView(view)


def status_window_size(lake: Lake) -> int:
    """The consumer_status_window the last refresh used: the deepest rank in its window (the
    default when the model has not written one)."""
    default = int(default_variables()["consumer_status_window"])
    if not lake.exists("consumer_observations"):
        return default
    deepest = lake.query("select max(rank_from_latest) as deepest from consumer_observations",
                         "consumer_observations").column("deepest")[0].as_py()
    return max(default, deepest or 0)


def _register(spark: "SparkSession", lake: Lake, read_by_all: int, window_size: int) -> None:
    """The views the prune's SQL reads: each table at its latest version, the rows every model has
    read apart, and per partition where consumer_lag and consumer_status read it from."""
    p = _VIEW_PREFIX
    lake.spark_read(spark, PRUNED_TABLE).createOrReplaceTempView(f"{p}rows")
    lake.spark_read(spark, PRUNED_TABLE, read_by_all).createOrReplaceTempView(f"{p}rows_read")
    for table in ("broker_configs", "committed_offset_snapshots", "log_observations", "unconsumed_messages",
                  SETTLED_TABLE):
        lake.spark_read(spark, table).createOrReplaceTempView(f"{p}{table}")
    spark.sql(f"""
        select o.snapshot_id, o.topic, o.`partition`, o.log_start_offset, o.log_end_offset, s.snapshot_at
        from {p}rows as o
        inner join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
    """).createOrReplaceTempView(f"{p}complete_rows")
    # consumer_lag: from the snapshot before the first whose log end passed the latest known log
    # start (every snapshot when that is unknown; the latest when none passed it)
    spark.sql(f"""
        with log_start_now as (
            select topic, `partition`, max_by(log_start_offset, snapshot_at) as log_start_offset
            from {p}complete_rows
            group by topic, `partition`
        ),

        first_past as (
            select /*+ broadcast(n) */
                o.topic,
                o.`partition`,
                min(case when n.log_start_offset is null or o.log_end_offset > n.log_start_offset
                    then o.snapshot_at end) as first_at
            from {p}complete_rows as o
            inner join log_start_now as n on o.topic = n.topic and o.`partition` = n.`partition`
            group by o.topic, o.`partition`
        )

        select /*+ broadcast(f) */
            o.topic,
            o.`partition`,
            case
                when min(f.first_at) is null then max(o.snapshot_at)
                else coalesce(max(case when o.snapshot_at < f.first_at then o.snapshot_at end), min(f.first_at))
            end as from_at
        from {p}complete_rows as o
        inner join first_past as f on o.topic = f.topic and o.`partition` = f.`partition`
        group by o.topic, o.`partition`
    """).createOrReplaceTempView(f"{p}lag_from")
    # consumer_status: from the snapshot at or before the earliest observation that can be in a
    # window (the latest when there is none), in milliseconds as consumer_status compares them
    spark.sql(f"""
        with log_known as (
            select distinct group_id, topic, partition_id from {p}log_observations
        ),

        snapshot_changes as (
            select o.`group`, o.topic, o.`partition`, s.snapshot_at, o.committed_offset,
                lag(o.committed_offset) over (partition by o.`group`, o.topic, o.`partition`
                                              order by s.snapshot_at) as previous_value
            from {p}committed_offset_snapshots as o
            inner join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
            left anti join log_known as l
                on o.`group` = l.group_id and o.topic = l.topic and o.`partition` = l.partition_id
        ),

        snapshot_observations as (
            select topic, `partition`, unix_millis(snapshot_at) as at_ms
            from (
                select *, row_number() over (partition by `group`, topic, `partition`
                                             order by snapshot_at desc) as from_last
                from snapshot_changes
                where previous_value is null or previous_value <> committed_offset
            )
            where from_last <= {window_size}
        ),

        earliest as (
            select topic, `partition`, min(at_ms) as at_ms
            from (
                select topic, partition_id as `partition`, observed_at_ms as at_ms
                from {p}log_observations
                where observed_at_ms is not null
                union all
                select * from snapshot_observations
            )
            group by topic, `partition`
        )

        select /*+ broadcast(e) */
            o.topic,
            o.`partition`,
            case
                when min(e.at_ms) is null then max(o.snapshot_at)
                else coalesce(max(case when unix_millis(o.snapshot_at) <= e.at_ms then o.snapshot_at end),
                              min(o.snapshot_at))
            end as from_at
        from {p}complete_rows as o
        left join earliest as e on o.topic = e.topic and o.`partition` = e.`partition`
        group by o.topic, o.`partition`
    """).createOrReplaceTempView(f"{p}status_from")


def _verdicts(spark: "SparkSession", cutoff: datetime) -> "DataFrame":
    """Every row of a complete snapshot, whether it is a candidate (read by every model, older than
    the cutoff) and why it is kept (null: no model can read it again)."""
    p = _VIEW_PREFIX
    return spark.sql(f"""
        with rows as (
            select
                *,
                max(case when snapshot_at < {timestamp_literal(cutoff)} then snapshot_at end)
                    over (partition by topic, `partition`) as latest_before_cutoff_at
            from {p}complete_rows
        )

        select /*+ broadcast(l, s) */
            r.snapshot_id,
            r.topic,
            r.`partition`,
            r.snapshot_at,
            r.snapshot_at < {timestamp_literal(cutoff)} and d.snapshot_id is not null as is_candidate,
            case
                when r.snapshot_at >= l.from_at then 'consumer_lag'
                when r.snapshot_at >= s.from_at then 'consumer_status'
                when r.snapshot_at >= r.latest_before_cutoff_at then 'the latest before the cutoff'
            end as kept_because
        from rows as r
        left join {p}lag_from as l on r.topic = l.topic and r.`partition` = l.`partition`
        left join {p}status_from as s on r.topic = s.topic and r.`partition` = s.`partition`
        left join {p}rows_read as d
            on r.snapshot_id = d.snapshot_id and r.topic = d.topic and r.`partition` = d.`partition`
    """)


def _losses_to_settle(spark: "SparkSession", settled_through: datetime, now: datetime) -> "DataFrame":
    """The rows of unconsumed_messages of the moves seen at or before `settled_through`, but those
    settled already (by an earlier prune, or one that died before recording how far it settled)."""
    p = _VIEW_PREFIX
    columns = ", ".join(f"u.{name}" for name in TABLES[SETTLED_TABLE].schema.names if name != "settled_at")
    return spark.sql(f"""
        select {columns}, {timestamp_literal(now)} as settled_at
        from {p}unconsumed_messages as u
        left anti join {p}{SETTLED_TABLE} as s
            on
                u.topic = s.topic and u.partition_id = s.partition_id and u.group_id = s.group_id
                and u.observed_at = s.observed_at
        where u.observed_at <= {timestamp_literal(settled_through)}
    """)
