"""Pruning: the offset commit records no model needs any more leave the lake, counted first.

`offset_commit_records` is the lake's one table that grows with the commit rate: a cluster whose
consumers commit 10,000 offsets a second adds 864 M records a day. The models keep what they need
of them as state (log_offset_state, log_observations, offset_commit_counts, offset_removals) and
read only the records appended since their last run, so once every model has read a record, most
records are only history. A prune removes, in each partition of the log, the records older than
the cutoff that no model's answer depends on, the way Kafka's log cleaner keeps the latest record
of each key, and keeps:

- the latest record of each offset key (group, topic, partition): log_offset_state's answer;
- every tombstone, and the record before it of the same key: offset_removals finds the commit a
  tombstone removed there;
- the commits log_observations keeps (a status window per partition): consumer_status reads them;
- the commits of a topic partition appended while its log start moved between two snapshots, up
  to the next snapshot's read of it: unconsumed_messages bounds what a group lost with every
  offset the group held then (its `moves` and `held`), but not once the move is settled (a prune
  of the log offset snapshots settles every move seen before its cutoff, and it runs first).

The records a prune removes are counted per minute first (`pruned_offset_commit_counts`), so that a
full refresh of offset_commit_counts gives the counts it gave before. Only records that every
model reading the table has read are candidates, and only those appended before the cutoff: the
horizon before now (raw records stay readable at least that long), never after the latest
complete snapshot, whose interval to the next one may still show a move, nor after a complete
snapshot some model has not read (its moves are not judged yet). So every model answers
the same after a prune, incrementally or in full (tests/models/test_pruning.py checks it on every
table), as long as `as_of` is not moved back before the cutoff.

A prune holds the leases of ingest and of every model: no refresh reads between the count and the
delete. Its delete is one Delta commit marked as a prune (`Lake.spark_delete_pruned`), which
incremental models read past as they read past appends; Delta's VACUUM then removes the files no
version within the table's retention uses (a week by Delta's default), so readers pinned to a
recent version keep theirs.
"""

from __future__ import annotations

import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

import pyarrow as pa

from offsets_platform.lake import Lake
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.models.project import ModelProject, default_project
from offsets_platform.models.runner import RUNS_TABLE, model_lease

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PRUNED_TABLE = "offset_commit_records"
COUNTS_TABLE = "pruned_offset_commit_counts"
# Raw records stay at least this long: Kafka's default offsets.retention.minutes, a week.
DEFAULT_HORIZON = timedelta(days=7)
Result = TypeVar("Result")
_VIEW_PREFIX = "prune__"  # the runner caches views by name in a session: these must not clash


@dataclass(frozen=True)
class PruneResult:
    """What a prune did (or, `dry_run`, would do)."""
    cutoff: datetime | None  # records appended before it were candidates; None: nothing was
    records_before: int  # in offset_commit_records
    removed: int  # records removed (would be, in a dry run)
    kept: dict[str, int] = field(default_factory=dict)  # candidates kept, by reason
    commits_counted: int = 0  # commit records counted into pruned_offset_commit_counts
    files_vacuumed: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    nothing_because: str = ""  # why no record was a candidate


def prune_offset_commits(spark: "SparkSession", lake: Lake, horizon: timedelta = DEFAULT_HORIZON,
                         now: datetime | None = None, dry_run: bool = False, lease_wait_s: float = 30.0,
                         project: ModelProject | None = None, emit: Callable[[str], None] = print) -> PruneResult:
    """Remove the offset commit records older than `horizon` that no model needs (module doc)."""
    project = project or default_project()
    return timed_under_every_lease(lake, project, "prune of offset commit records", lease_wait_s, emit, lambda: _prune(
        spark, lake, project, horizon, now or datetime.now(timezone.utc), dry_run, emit))


def timed_under_every_lease(lake: Lake, project: ModelProject, purpose: str, wait_s: float,
                            emit: Callable[[str], None], prune: Callable[[], Result]) -> Result:
    """A prune's result (a dataclass with `seconds`), run holding every lease, with the seconds it
    took, the wait for the leases included."""
    started = time.monotonic()
    with holding_every_lease(lake, project, purpose, wait_s, emit):
        result = prune()
    return replace(result, seconds=time.monotonic() - started)


@contextmanager
def holding_every_lease(lake: Lake, project: ModelProject, purpose: str, wait_s: float,
                        emit: Callable[[str], None]) -> Iterator[None]:
    """The leases of ingest and of every model: no refresh reads while a prune decides and deletes."""
    from offsets_platform.ingest.offsets_topic import INGEST_LEASE

    with ExitStack() as held:
        for name in [INGEST_LEASE] + [model_lease(model.name) for model in project.models]:
            held.enter_context(hold_lease(lake.leases, name, purpose, wait_s=wait_s, emit=emit))
        yield


def _prune(spark: "SparkSession", lake: Lake, project: ModelProject, horizon: timedelta, now: datetime,
           dry_run: bool, emit: Callable[[str], None]) -> PruneResult:
    scope = prune_scope(lake, project, PRUNED_TABLE, now, horizon)
    records_before, read_by_all, cutoff = scope.rows_before, scope.read_by_all, scope.cutoff
    if cutoff is None:
        return PruneResult(cutoff=None, records_before=records_before, removed=0, dry_run=dry_run,
                           nothing_because=scope.nothing_because)
    emit(f"pruning offset commit records appended before {cutoff:%Y-%m-%d %H:%M:%S} UTC that every model has "
         f"read (table version {read_by_all}) and none needs")

    _register(spark, lake, read_by_all, cutoff)
    verdicts = _verdicts(spark)
    kept = {row["kept_because"]: row["records"] for row in verdicts.where("below_cutoff")
            .groupBy("kept_because").count().withColumnRenamed("count", "records").collect()}
    removable = kept.pop(None, 0)
    counts = _counts_to_fold(spark, now)
    commits_counted = int(sum(counts.column("count_offset_commits").to_pylist()))
    if dry_run:
        return PruneResult(cutoff=cutoff, records_before=records_before, removed=removable, kept=kept,
                           commits_counted=commits_counted, dry_run=True)
    # Counted before they leave: a prune that dies between the two commits leaves counts that a
    # full refresh reads in place of the records below counted_below_offset, removed or not. Each
    # prune counts from where the last count stopped, so its rows are new keys: an append, which
    # offset_commit_counts' incremental runs read past (a rewrite would make their next run full).
    if counts.num_rows:
        lake.append(COUNTS_TABLE, counts)
    emit(f"counted {commits_counted:,} commit records per minute into {COUNTS_TABLE}")
    removed = 0
    if removable:
        doomed = verdicts.where("below_cutoff and kept_because is null").select("source_partition", "source_offset")
        removed = lake.spark_delete_pruned(PRUNED_TABLE, doomed)
    emit(f"removed {removed:,} of {records_before:,} records; kept of those older {kept_counts(kept)}")
    files = lake.vacuum(PRUNED_TABLE)
    return PruneResult(cutoff=cutoff, records_before=records_before, removed=removed, kept=kept,
                       commits_counted=commits_counted, files_vacuumed=files)


@dataclass(frozen=True)
class PruneScope:
    """What a prune of one table starts from."""
    rows_before: int
    read_by_all: int | None  # the version every model reading the table has read; None: none is a candidate
    nothing_because: str  # why, when read_by_all is None
    cutoff: datetime | None  # rows before it are candidates; None when read_by_all is


def prune_scope(lake: Lake, project: ModelProject, table: str, now: datetime, horizon: timedelta) -> PruneScope:
    """The rows of `table` now, the version every model reading it has read, and the cutoff."""
    rows_before = lake.count(table) if lake.exists(table) else 0
    read_by_all, why_not = version_read_by_every_model(lake, project, table)
    cutoff = prune_cutoff(lake, project, now, horizon) if read_by_all is not None else None
    return PruneScope(rows_before, read_by_all, why_not, cutoff)


def count_and_delete_unkept(lake: Lake, table: str, verdicts: "DataFrame", dry_run: bool) -> tuple[dict[str, int], int]:
    """The candidates' `verdicts` (the table's keys and kept_because) counted by why they are kept,
    and those no reason keeps deleted (counted only, in a dry run): the counts and the rows removed
    (that would be). The verdicts are computed once for both."""
    verdicts = verdicts.persist()
    try:
        kept = {row["kept_because"]: row["rows"] for row in verdicts.groupBy("kept_because").count()
                .withColumnRenamed("count", "rows").collect()}
        removable = kept.pop(None, 0)
        if dry_run or not removable:
            return kept, removable
        return kept, lake.spark_delete_pruned(table, verdicts.where("kept_because is null"))
    finally:
        verdicts.unpersist()


def kept_counts(kept: dict[str, int]) -> str:
    """The rows (or records) a prune kept of the candidates, by reason, for its log line."""
    return ", ".join(f"{count:,} ({reason})" for reason, count in sorted(kept.items())) or "none"


def version_read_by_every_model(lake: Lake, project: ModelProject, table: str) -> tuple[int | None, str]:
    """The version of a bronze table every model that reads it has read (the least of their
    latest runs'), or None and why not."""
    readers = sorted(model.name for model in project.models if ("bronze", table) in model.sources)
    if not lake.exists(table):
        return None, f"the lake holds no {table}"
    if not lake.exists(RUNS_TABLE):
        return None, "the models have never run: refresh first"
    rows = lake.query(
        f"select model, source_version, finished_at from {RUNS_TABLE} "
        f"where source = {lake_string(table)} order by finished_at", RUNS_TABLE).to_pylist()
    versions = {row["model"]: row["source_version"] for row in rows}  # each model's latest run
    never = [name for name in readers if name not in versions]
    if never:
        return None, f"{', '.join(never)} never read {table}: refresh first"
    return min(versions[name] for name in readers), ""


def prune_cutoff(lake: Lake, project: ModelProject, now: datetime, horizon: timedelta) -> datetime:
    """Rows before it may be pruned: the horizon before now, never after the latest complete
    snapshot, whose interval to the next one may still show a move of a log start, nor after a
    complete snapshot some model has not read: the prune of the log offset snapshots settles the
    moves before the cutoff as the models judged them."""
    bounds = [now - horizon, latest_complete_snapshot(lake), _earliest_unread_snapshot(lake, project)]
    return min(bound for bound in bounds if bound is not None)


def latest_complete_snapshot(lake: Lake) -> datetime | None:
    if not lake.exists("broker_configs"):
        return None
    return as_utc(lake.query("select max(snapshot_at) as at from broker_configs", "broker_configs").column("at")[0].as_py())


def _earliest_unread_snapshot(lake: Lake, project: ModelProject) -> datetime | None:
    """The earliest complete snapshot (one row of broker_configs each) that some model reading
    them has not read yet: one that completed late, or after the last refresh."""
    if not lake.exists("broker_configs"):
        return None
    read_by_all, _ = version_read_by_every_model(lake, project, "broker_configs")
    read = set() if read_by_all is None else set(
        lake.read_arrow("broker_configs", ["snapshot_id"], version=read_by_all).column("snapshot_id").to_pylist())
    unread = [row["snapshot_at"] for row in lake.read_arrow("broker_configs", ["snapshot_id", "snapshot_at"]).to_pylist()
              if row["snapshot_id"] not in read]
    return as_utc(min(unread)) if unread else None


def as_utc(moment: datetime | None) -> datetime | None:
    """A time Delta gave without a zone, as the UTC it is."""
    return moment.replace(tzinfo=timezone.utc) if moment is not None and moment.tzinfo is None else moment


def _register(spark: "SparkSession", lake: Lake, read_by_all: int, cutoff: datetime) -> None:
    """The views the prune's SQL reads, each at the table's latest version except the records
    every model has read, and the bounds of the candidates."""
    lake.spark_read(spark, PRUNED_TABLE).createOrReplaceTempView(f"{_VIEW_PREFIX}records")
    lake.spark_read(spark, PRUNED_TABLE, read_by_all).createOrReplaceTempView(f"{_VIEW_PREFIX}records_read")
    for table in ("log_observations", "log_offset_snapshots", "broker_configs", COUNTS_TABLE,
                  "settled_log_start_moves"):
        lake.spark_read(spark, table).createOrReplaceTempView(f"{_VIEW_PREFIX}{table}")
    # per partition of the log: the candidates lie below the first record every model read that
    # was appended at or after the cutoff (or has no time), else below every record they read
    spark.sql(f"""
        select
            source_partition,
            coalesce(
                min(case when source_timestamp >= {timestamp_literal(cutoff)} or source_timestamp is null
                    then source_offset end),
                max(source_offset) + 1) as prune_below
        from {_VIEW_PREFIX}records_read
        group by source_partition
    """).createOrReplaceTempView(f"{_VIEW_PREFIX}bounds")


def _verdicts(spark: "SparkSession") -> "DataFrame":
    """Every record, whether it is a candidate (below_cutoff) and why it is kept (null: no model
    needs it)."""
    p = _VIEW_PREFIX
    return spark.sql(f"""
        with records as (
            select
                source_partition,
                source_offset,
                source_timestamp,
                `group`,
                topic,
                `partition`,
                tombstone,
                row_number() over key_newest_first = 1 as is_latest,
                coalesce(lag(tombstone) over key_newest_first, false) as is_removed_next
            from {p}records
            window key_newest_first as (partition by `group`, topic, `partition`
                                        order by source_partition desc, source_offset desc)
        ),

        moves as (
            -- as unconsumed_messages' moves: the log start moved between two complete snapshots;
            -- the interval runs from the earlier one to the next snapshot's read of the log start.
            -- A settled move (one a prune settled, or whose earlier snapshot it removed): no run
            -- reads its commits.
            select topic, partition_id, previous_snapshot_at, coalesce(next_listed_at, listed_at) as interval_end_at
            from (
                select
                    o.topic,
                    o.`partition` as partition_id,
                    s.snapshot_at,
                    o.log_start_offset,
                    coalesce(o.listed_at, s.snapshot_at) as listed_at,
                    lag(o.log_start_offset) over w as previous_log_start_offset,
                    lag(s.snapshot_at) over w as previous_snapshot_at,
                    lead(coalesce(o.listed_at, s.snapshot_at)) over w as next_listed_at
                from {p}log_offset_snapshots as o
                inner join {p}broker_configs as s on o.snapshot_id = s.snapshot_id
                window w as (partition by o.topic, o.`partition` order by s.snapshot_at)
            )
            where
                log_start_offset > previous_log_start_offset
                and coalesce(snapshot_at > (select max(settled_through_at) from {p}settled_log_start_moves), true)
        ),

        in_moves as (
            select distinct r.source_partition, r.source_offset
            from records as r
            inner join moves as m
                on r.topic = m.topic and r.`partition` = m.partition_id
                and r.source_timestamp > m.previous_snapshot_at and r.source_timestamp <= m.interval_end_at
        )

        select
            r.source_partition,
            r.source_offset,
            coalesce(r.source_offset < b.prune_below, false) as below_cutoff,
            case
                when r.is_latest then 'latest of its key'
                when r.tombstone then 'tombstone'
                when r.is_removed_next then 'removed by a tombstone'
                when o.source_offset is not null then 'status window'
                when m.source_offset is not null then 'log start moved'
            end as kept_because
        from records as r
        left join {p}bounds as b on r.source_partition = b.source_partition
        left join {p}log_observations as o
            on r.`group` = o.group_id and r.topic = o.topic and r.`partition` = o.partition_id
            and r.source_offset = o.source_offset
        left join in_moves as m on r.source_partition = m.source_partition and r.source_offset = m.source_offset
    """)


def _counts_to_fold(spark: "SparkSession", now: datetime) -> pa.Table:
    """The commit records of each partition from where the last prune stopped counting up to where
    this one prunes, per minute of commit time, as offset_commit_counts counts them."""
    p = _VIEW_PREFIX
    frame = spark.sql(f"""
        with counted as (
            select source_partition, max(counted_below_offset) as counted_below_offset
            from {p}{COUNTS_TABLE}
            group by source_partition
        )

        select
            r.source_partition,
            min(r.source_offset) as first_source_offset,
            timestamp_seconds(floor(unix_seconds(r.commit_timestamp) / 60) * 60) as minute_start_at,
            count(*) as count_offset_commits,
            max(b.prune_below) as counted_below_offset,
            {timestamp_literal(now)} as pruned_at
        from {p}records as r
        inner join {p}bounds as b on r.source_partition = b.source_partition
        left join counted as c on r.source_partition = c.source_partition
        where
            not r.tombstone and r.commit_timestamp is not null
            and r.source_offset >= coalesce(c.counted_below_offset, 0) and r.source_offset < b.prune_below
        group by r.source_partition, floor(unix_seconds(r.commit_timestamp) / 60)
    """)
    return frame.toArrow()


def timestamp_literal(moment: datetime) -> str:
    """A moment as a Spark SQL timestamp, to the microsecond."""
    return f"timestamp_micros({(moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)})"
