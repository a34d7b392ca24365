"""Pruning the committed offset snapshots: the rows no model can read again leave the lake.

Every admin-API snapshot adds a row per group and partition with a committed offset to
`committed_offset_snapshots` (OffsetFetch of every group): a cluster with 100,000 committed
partitions and a snapshot every 15 minutes adds 9.6 M rows a day. Beyond the latest snapshot's
rows, the models read them as a history per group and partition, or at a few snapshots, and each
needs only a little of it:

- snapshot_offsets gives each offset the first snapshot of its latest run (the snapshots in a row
  of those that saw the key, that saw one value). Only the row that starts that run says so: a
  later row of the same value only repeats it, and the row before it, once gone, still leaves it
  starting a run (after no row, a value starts one);
- consumer_observations takes, for the keys the log holds no commit of (log_observations knows
  none), the latest consumer_status_window values at the first snapshot that saw each: the rows
  that start the key's latest runs, as many as the window;
- unconsumed_messages judges the moves of a partition's log start between two consecutive log
  offset snapshots with the offsets every group held there at both, and the time each group's
  OffsetFetch was sent at the earlier one, but never a move the prune of the log offset snapshots
  settled (every one seen at or before the snapshot recorded in settled_log_start_moves): the
  partition's rows from its latest log offset snapshot at or before that one on (all of them when
  none is), and at each of those snapshots one row per group, the one fetched first;
- coordinator_metrics counts an audited OffsetDelete whose tombstone the log does not show when
  the latest complete snapshot before it held the offset: that row.

A row leaves when it is a candidate (of a complete snapshot older than the cutoff, read by every
model that reads the table) and none of those keeps it. A key whose offset was ever null (no
writer writes one: a snapshot leaves out "no offset") keeps every row, because the two models tell
runs apart differently around a null. Removing the repeats of a run changes no row's run: between
two rows that stay, those that left held the earlier one's value. So every model answers the same
after a prune, incrementally and in full; tests/models/test_snapshot_pruning.py checks every table.

The cutoff, the leases and the window's size are those of the prune of the log offset snapshots
(offsets_platform.models.snapshot_pruning), which runs first: the moves it settled need no
committed offsets here any more. It settles every move seen before the cutoff, so of the rows at
moves, only those at each partition's latest snapshot before the cutoff stay.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable

from offsets_platform.lake import Lake
from offsets_platform.models.project import ModelProject, default_project
from offsets_platform.models.pruning import (
    DEFAULT_HORIZON,
    count_and_delete_unkept,
    prune_scope,
    timed_under_every_lease,
    timestamp_literal,
)
from offsets_platform.models.snapshot_pruning import (
    SnapshotPruneResult,
    finished_prune,
    register_unsettled_move_snapshots,
    status_window_size,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PRUNED_TABLE = "committed_offset_snapshots"
_VIEW_PREFIX = "committed_prune__"  # the runner caches views by name in a session: these must not clash


def prune_committed_offset_snapshots(spark: "SparkSession", lake: Lake, horizon: timedelta = DEFAULT_HORIZON,
                                     now: datetime | None = None, dry_run: bool = False,
                                     lease_wait_s: float = 30.0, project: ModelProject | None = None,
                                     emit: Callable[[str], None] = print) -> SnapshotPruneResult:
    """Remove the committed offset snapshot rows older than `horizon` that no model can read
    again (module doc)."""
    project = project or default_project()
    return timed_under_every_lease(lake, project, "prune of committed offset snapshots", lease_wait_s, emit, lambda: _prune(
        spark, lake, project, horizon, now or datetime.now(timezone.utc), dry_run, emit))


def _prune(spark: "SparkSession", lake: Lake, project: ModelProject, horizon: timedelta, now: datetime,
           dry_run: bool, emit: Callable[[str], None]) -> SnapshotPruneResult:
    scope = prune_scope(lake, project, PRUNED_TABLE, now, horizon)
    if scope.cutoff is None:
        return SnapshotPruneResult.nothing(scope, dry_run)
    emit(f"pruning committed offset snapshot rows of complete snapshots before {scope.cutoff:%Y-%m-%d %H:%M:%S} "
         f"UTC that every model has read (table version {scope.read_by_all}) and none can read again")
    _register(spark, lake, scope.read_by_all)
    # the candidates' verdicts sort the table: computed once for the counts and the delete
    verdicts = _verdicts(spark, scope.cutoff, status_window_size(lake)).where("is_candidate") \
        .select("snapshot_id", "group", "topic", "partition", "kept_because")
    kept, removed = count_and_delete_unkept(lake, PRUNED_TABLE, verdicts, dry_run)
    return finished_prune(lake, PRUNED_TABLE, "committed offset snapshot", scope, kept, removed, dry_run, emit)


def _register(spark: "SparkSession", lake: Lake, read_by_all: int) -> None:
    """The views the prune's SQL reads: each table at its latest version, the rows every model has
    read apart, and the snapshots of the moves unconsumed_messages can still judge."""
    p = _VIEW_PREFIX
    lake.spark_read(spark, PRUNED_TABLE).createOrReplaceTempView(f"{p}rows")
    lake.spark_read(spark, PRUNED_TABLE, read_by_all).createOrReplaceTempView(f"{p}rows_read")
    for table in ("broker_configs", "log_observations", "cleanup_audit"):
        lake.spark_read(spark, table).createOrReplaceTempView(f"{p}{table}")
    register_unsettled_move_snapshots(spark, lake, f"{p}interval_ends")


def _verdicts(spark: "SparkSession", cutoff: datetime, window_size: int) -> "DataFrame":
    """Every row of a complete snapshot, whether it is a candidate (read by every model, older than
    the cutoff) and why it is kept (null: no model can read it again)."""
    p = _VIEW_PREFIX
    before_cutoff = f"< {timestamp_literal(cutoff)}"
    return spark.sql(f"""
        with log_known as (
            select distinct group_id, topic, partition_id from {p}log_observations
        ),

        offset_deletes as (
            -- the latest complete snapshot before each OffsetDelete the project sent
            select a.`group`, a.topic, a.`partition`, max_by(s.snapshot_id, s.snapshot_at) as snapshot_id
            from {p}cleanup_audit as a
            inner join {p}broker_configs as s on a.at >= s.snapshot_at
            where a.action = 'OffsetDelete' and a.outcome = 'deleted'
            group by a.audit_id, a.`group`, a.topic, a.`partition`
        ),

        committed as (
            select
                o.snapshot_id,
                o.`group`,
                o.topic,
                o.`partition`,
                o.fetched_at,
                s.snapshot_at,
                lag(o.committed_offset) over k is distinct from o.committed_offset as starts_run,
                bool_or(o.committed_offset is null)
                    over (partition by o.`group`, o.topic, o.`partition`) as has_null_offset
            from {p}rows as o
            inner join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
            window k as (partition by o.`group`, o.topic, o.`partition` order by s.snapshot_at)
        ),

        runs as (
            select
                c.*,
                l.group_id is null as is_log_unknown,
                -- 1 for the key's latest run, 2 for the one before, ... (null: not a run's first row):
                -- the runs after this one counted in the order `committed` sorted the rows in, so
                -- that Spark sorts them once
                case when c.starts_run then 1 + sum(cast(c.starts_run as int)) over (
                    partition by c.`group`, c.topic, c.`partition`
                ) - sum(cast(c.starts_run as int)) over (
                    partition by c.`group`, c.topic, c.`partition` order by c.snapshot_at
                    rows between unbounded preceding and current row
                ) end as run_from_latest,
                row_number() over (
                    partition by c.snapshot_id, c.`group` order by c.fetched_at asc nulls last, c.topic, c.`partition`
                ) as fetched_rank
            from committed as c
            left join log_known as l on c.`group` = l.group_id and c.topic = l.topic and c.`partition` = l.partition_id
        )

        select
            r.snapshot_id,
            r.`group`,
            r.topic,
            r.`partition`,
            r.snapshot_at {before_cutoff} and d.snapshot_id is not null as is_candidate,
            case
                when r.has_null_offset or r.run_from_latest = 1 then 'snapshot_offsets'
                when r.is_log_unknown and r.run_from_latest <= {window_size} then 'consumer_status'
                when e.snapshot_id is not null or (r.fetched_rank = 1 and f.snapshot_id is not null)
                    then 'unconsumed_messages'
                when x.snapshot_id is not null then 'coordinator_metrics'
            end as kept_because
        from runs as r
        -- the snapshots whose committed offsets (and OffsetFetch times) bound a move
        -- unconsumed_messages can still judge
        left join {p}interval_ends as e
            on r.snapshot_id = e.snapshot_id and r.topic = e.topic and r.`partition` = e.`partition`
        left join (select distinct snapshot_id from {p}interval_ends) as f on r.snapshot_id = f.snapshot_id
        left join (select distinct * from offset_deletes) as x
            on r.snapshot_id = x.snapshot_id and r.`group` = x.`group` and r.topic = x.topic
            and r.`partition` = x.`partition`
        left join {p}rows_read as d
            on r.snapshot_id = d.snapshot_id and r.`group` = d.`group` and r.topic = d.topic
            and r.`partition` = d.`partition`
    """)
