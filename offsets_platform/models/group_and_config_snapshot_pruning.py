"""Pruning the group, member, topic config and error snapshots: the rows no model can read again
leave the lake.

Every admin-API snapshot adds a row per group to `group_snapshots` (ListGroups and the describe
calls), one per member to `group_member_snapshots`, one per topic to `topic_configs`
(DescribeConfigs) and one per failed call to `snapshot_errors`: 10,000 groups and a snapshot every
15 minutes add about a million group rows a day. Beyond the latest snapshot's rows, which no prune
removes, the models read little of them:

- group_state_history records a group's state each time a snapshot saw it change (the first row
  of each run of one state among the group's rows): those rows;
- group_state asks when the snapshots last saw the group in another state than the latest one
  does: the last row of a run. The latest snapshot's state is its latest run's, or a new one, so
  the last rows of the group's latest two runs answer it, whatever the next snapshots see;
- unconsumed_messages reads the members' subscriptions (is_abandoned) and the topic's configs at
  both snapshots of each move it judges: the rows of the snapshots of the moves not settled yet
  (every move seen at or before the snapshot recorded in settled_log_start_moves is settled, and
  no run judges it again; the prune of the log offset snapshots, which runs first, settles them);
- group_members, committed_offsets, group_state and retention_forecast read the latest
  snapshot's rows only, and no model reads an older snapshot's errors.

A row leaves when it is a candidate (of a complete snapshot older than the cutoff, which every
model reading the table has read) and none of those keeps it. Removing the rows inside a run of one
state changes no row's run: between two rows that stay, those that left held the same state. So
every model answers the same after a prune, incrementally and in full;
tests/models/test_group_and_config_snapshot_pruning.py checks every table. A snapshot older than the
cutoff that completes only after a prune (its broker_configs row written late) is read against the
rows left: one that saw another state in the middle of a run would split it at a row that is gone.

The cutoff and the leases are those of the other prunes (offsets_platform.models.pruning).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING, Callable

from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES
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
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PRUNED_TABLES = ("group_snapshots", "group_member_snapshots", "topic_configs", "snapshot_errors")
_VIEW_PREFIX = "group_config_prune__"  # the runner caches views by name in a session: these must not clash

# Per table, why a row of a complete snapshot stays (null: no model can read it again): a join
# and an expression over `r` (the row and, of group_snapshots, its run of one state) and `e` (the
# snapshots and partitions of the moves unconsumed_messages can still judge, `{p}ends`).
_KEPT_BECAUSE = {
    "group_snapshots": ("", """
        case
            when r.starts_run then 'group_state_history'
            when r.ends_run and r.run_from_latest <= 2 then 'group_state'
        end"""),
    "group_member_snapshots": (
        "left join (select distinct snapshot_id from {p}ends) as e on r.snapshot_id = e.snapshot_id",
        "case when e.snapshot_id is not null then 'unconsumed_messages' end"),
    "topic_configs": (
        "left join (select distinct snapshot_id, topic from {p}ends) as e "
        "on r.snapshot_id = e.snapshot_id and r.topic = e.topic",
        "case when e.snapshot_id is not null then 'unconsumed_messages' end"),
    "snapshot_errors": ("", "cast(null as string)"),
}


def prune_group_and_config_snapshots(spark: "SparkSession", lake: Lake, horizon: timedelta = DEFAULT_HORIZON,
                                     now: datetime | None = None, dry_run: bool = False,
                                     lease_wait_s: float = 30.0, project: ModelProject | None = None,
                                     emit: Callable[[str], None] = print) -> dict[str, SnapshotPruneResult]:
    """Remove the group, member, topic config and error snapshot rows older than `horizon` that no
    model can read again (module doc); what each table's prune did, by table."""
    project = project or default_project()
    now = now or datetime.now(timezone.utc)
    return {table: timed_under_every_lease(lake, project, f"prune of {table}", lease_wait_s, emit,
                                           partial(_prune, spark, lake, project, table, horizon, now, dry_run, emit))
            for table in PRUNED_TABLES}


def _prune(spark: "SparkSession", lake: Lake, project: ModelProject, table: str, horizon: timedelta,
           now: datetime, dry_run: bool, emit: Callable[[str], None]) -> SnapshotPruneResult:
    scope = prune_scope(lake, project, table, now, horizon)
    if scope.cutoff is None:
        return SnapshotPruneResult.nothing(scope, dry_run)
    emit(f"pruning {table} rows of complete snapshots before {scope.cutoff:%Y-%m-%d %H:%M:%S} UTC that every "
         f"model has read (table version {scope.read_by_all}) and none can read again")
    _register(spark, lake, table, scope.read_by_all)
    kept, removed = count_and_delete_unkept(lake, table, _verdicts(spark, table, scope.cutoff), dry_run)
    return finished_prune(lake, table, table, scope, kept, removed, dry_run, emit)


def _register(spark: "SparkSession", lake: Lake, table: str, read_by_all: int) -> None:
    """The views the prune's SQL reads: the table and broker_configs at their latest versions, the
    snapshots of the table every model has read, and, for the rules that read them, those of the
    moves not settled."""
    p = _VIEW_PREFIX
    lake.spark_read(spark, table).createOrReplaceTempView(f"{p}rows")
    lake.spark_read(spark, table, read_by_all).select("snapshot_id").distinct() \
        .createOrReplaceTempView(f"{p}snapshots_read")
    lake.spark_read(spark, "broker_configs").createOrReplaceTempView(f"{p}broker_configs")
    if _KEPT_BECAUSE[table][0]:  # the rule joins them
        register_unsettled_move_snapshots(spark, lake, f"{p}ends")


def _verdicts(spark: "SparkSession", table: str, cutoff: datetime) -> "DataFrame":
    """The candidates (rows of complete snapshots before the cutoff that every model has read), by
    their keys, and why each is kept (null: no model can read it again)."""
    p = _VIEW_PREFIX
    keys = ", ".join(f"r.`{key}`" for key in TABLES[table].keys)
    rows = _GROUP_RUNS if table == "group_snapshots" else _ROWS
    join, kept_because = _KEPT_BECAUSE[table]
    return spark.sql(f"""
        with r as ({rows.format(p=p)})

        select {keys}, {kept_because.strip()} as kept_because
        from r
        {join.format(p=p)}
        where
            r.snapshot_at < {timestamp_literal(cutoff)}
            and r.snapshot_id in (select snapshot_id from {p}snapshots_read)
    """)


# the rows of complete snapshots (every snapshot table has its snapshot's time)
_ROWS = """
    select o.*
    from {p}rows as o
    left semi join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
"""

# group_snapshots' rows of complete snapshots, each with whether it starts or ends a run of one
# state among the group's rows, and which run it is from the latest (1 for the latest)
_GROUP_RUNS = """
    select
        *,
        1 + sum(cast(starts_run as int)) over (partition by `group`)
        - sum(cast(starts_run as int)) over (partition by `group` order by snapshot_at
                                             rows between unbounded preceding and current row)
            as run_from_latest
    from (
        select
            o.*,
            lag(o.state) over w is distinct from o.state as starts_run,
            lead(o.state) over w is distinct from o.state as ends_run
        from {p}rows as o
        left semi join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
        window w as (partition by o.`group` order by o.snapshot_at)
    )
"""
