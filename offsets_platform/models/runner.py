"""Running the dbt-like models on Spark and writing each result to its Delta table.

Every model reads its sources and refs as Delta tables, each at the version pinned for the run,
and Delta's own Spark writer writes a large result (`Lake.spark_*`): its rows never pass through
this process. Small tables are the exception (ARROW_MAX_BYTES): delta-rs reads them and hands
their rows to Spark, and a small result (ARROW_RESULT_MAX_ROWS, or any result of small inputs)
is written by delta-rs from its rows collected as Arrow; the SQL runs on Spark either way. A
`table` model is recomputed and overwrites its table. An `incremental` model, once it has run, sees in
`source(..., new_only=true)` only the rows appended to that source since its last run (Delta's
change data feed), and its result is merged into its table by `unique_key` (MERGE INTO, or the
table rewritten with the result's rows in place), or is the table's whole new content, computed
from the rows it kept and the new ones (`incremental_strategy`); the first run, a `full_refresh`, a change of the model's SQL, or a
source that was rewritten rather than appended to make it a full run. Incremental models must be
idempotent: if a run dies after its write but before it is recorded in `model_runs`, the
next run reads the same new rows again. A model with `delete_when` also deletes, in the same merge,
the table's rows whose key comes back in a result row flagged so. An incremental model that uses
variables runs full when a value changed since its last run, or when `as_of` went back: it must
keep state from which any later `as_of` gives what a full run then would. One whose YAML says
`full_when_small: true` runs full while its sources hold at most `full_when_small_max_bytes`
(SMALL_DATA_MAX_BYTES), where its incremental plan costs more than a full run.

A model whose inputs are all as they were at its last run (its SQL, the versions of its sources
and refs, the values of the variables it uses) is not run again: its table is already the
result (mode `unchanged`). A model using `as_of` ("now") therefore always runs.

An ephemeral model is never run: the models that ref it read its SQL as a subquery (see
`offsets_platform.models.render`), and its sources are theirs.

An incremental model may also read a ref as it was at its own last run
(`ref('m', at_last_run=true)`): the state of `m` before the rows now new. That table version is
recorded only when `m`'s latest run had read exactly the source versions this model read, so
the state and the new rows meet without a gap or an overlap; without such a record the model
runs full. `run_all` pins every source's version when it starts, so the models of one refresh
read the same data, and runs models whose refs are done two at a time: most of what a small
query costs Spark is driver work on one core (planning, code generation), so two overlap well
on a small machine. A refresh of little data (SMALL_DATA_MAX_BYTES) runs with Spark's settings for
little data: expressions interpreted instead of compiled, one shuffle partition, no adaptive
execution (`offsets_platform.lake.spark.small_data_settings`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
import weakref
from contextlib import nullcontext
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator

import pyarrow as pa

from offsets_platform.lake import Lake
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.spark import labelled_jobs, lazy_sql, small_data_settings
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.models.project import Model, ModelProject, default_project, model_table_specs
from offsets_platform.models.render import at_last_run_view, new_rows_view, render, this_view

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RUNS_TABLE = "model_runs"
NO_SOURCE = "-"  # the model_runs row of a model that reads no source
REF_PREFIX = "ref:"  # model_runs rows naming a ref's table version, for ref(..., at_last_run=true)
INPUTS = "inputs"  # the model_runs row whose version is a fingerprint of everything the result depends on
# an incremental model's model_runs rows of the variables its merged rows were computed with: a
# fingerprint of their values (as_of aside), and as_of in epoch microseconds
VARIABLES = "variables"
AS_OF = "as_of"
# model_runs gains a file per model run and an incremental model's table one per merge, and every
# read opens them all (model_runs is read once per model run): past this many, they are compacted.
COMPACT_AT_FILES = 50
# A refresh that finds another one running a model waits this long for it (a full refresh of a
# large lake runs a model for minutes), then gives up naming it.
DEFAULT_LEASE_WAIT_S = 600.0
# A table version (or the rows appended to one) whose data files total at most this many bytes
# reaches Spark as rows delta-rs read, and a model whose inputs all did is written back by
# delta-rs from its result collected as Arrow. Each read and write through delta-spark rebuilds a
# table version's state in Spark jobs, a second or more per model however few its rows (a full
# refresh of a test lake: 72 s through delta-spark alone, 13 s so). Larger inputs stay with
# delta-spark, whose rows never pass through this process: Spark joins rows handed over this way
# more slowly than a Delta scan of the same rows once they number a few hundred thousand (with
# 8 MB, a refresh of 300,000 records took as long as through delta-spark alone, with 1 MB a
# sixth less; docs/design.md).
ARROW_MAX_BYTES = 1024 * 1024
# A refresh whose sources' data files total at most this many bytes runs its queries with the
# session's settings for little data (offsets_platform.lake.spark.small_data_settings): on so few
# rows compiling expressions, splitting shuffles and re-planning stages cost more than they save.
SMALL_DATA_MAX_BYTES = 1024 * 1024
# A result of at most this many rows is written by delta-rs from Arrow, whatever its inputs' size:
# a commit through Delta's Spark writer costs about a second however few its rows, and most
# model tables are small next to the bronze they are computed from. The result is computed once
# and counted first, so a larger one never reaches this process; only a model whose last run
# wrote no more is counted (`_expects_small_result`).
ARROW_RESULT_MAX_ROWS = 100_000
# An incremental model that declares `full_when_mostly_new` runs full instead when the rows new
# since its last run are more than this share of what its sources hold, and more than
# FULL_RUN_MIN_NEW_BYTES of data files. Below the minimum either way costs little, and a refresh
# after a few minutes' traffic stays incremental. Whether a model is better off so was measured
# model by model on 9 M new records of 10,000 groups after 9 M and 18 M earlier ones
# (benchmarks/cycle_bench.py): unconsumed_messages' incremental runs took 33 and 86 s where its
# full runs took 29 and 60 s, so it declares it. offset_commit_counts and offset_removals, whose
# new rows are new keys merged into a small table, took 12 and 11-16 s incrementally against
# 20-27 and 15-23 s full, and log_offset_state (a rewrite) 12 s against 23-28 s: they do not.
# (log_observations, when it still merged, took 188 s incrementally where its full run over the
# first 9 M had taken 47 s; it now returns its whole state instead.)
FULL_RUN_NEW_SHARE = 0.25
FULL_RUN_MIN_NEW_BYTES = 16 * 1024 * 1024

# Tables written last, to mark the writes before them complete: a snapshot's `broker_configs`
# row, an ingest batch's checkpoint. They are pinned before the other sources, so that whatever a
# pinned marker says is complete is in the versions pinned after it: a refresh never sees a
# snapshot complete without all its rows, nor a batch checkpointed without its records. (Named
# here, not imported: the ingest modules that write them bring the Kafka clients.)
COMPLETION_MARKERS = ("broker_configs", "offsets_topic_checkpoints")


def _in_pin_order(tables) -> list[str]:
    return sorted(tables, key=lambda table: (table not in COMPLETION_MARKERS, table))


# Per SparkSession, the temporary views runners made: view name -> a digest of the files it shows,
# and a lock per view name, held from checking a view to recording it: two models that run at once
# and read one table would otherwise both find no view and both make it.
# Kept per session rather than per runner because runners over different lakes may share one.
_VIEWS: "weakref.WeakKeyDictionary[SparkSession, dict[str, str]]" = weakref.WeakKeyDictionary()
_VIEW_LOCKS: "weakref.WeakKeyDictionary[SparkSession, dict[str, threading.Lock]]" = weakref.WeakKeyDictionary()
_VIEWS_LOCK = threading.Lock()


def model_lease(model: str) -> str:
    """The name of the lake lease a refresh holds while it runs `model`."""
    return f"model-{model}"


class ModelRunError(RuntimeError):
    """A model's SQL failed or its result does not match its declared columns."""


@dataclass(frozen=True)
class ModelRun:
    model: str
    # 'full', 'incremental', 'unchanged' (not run: its inputs are as at its last run), or 'blocked'
    # (not run: a table upstream of it failed an error-severity check; iter_runs' gate)
    mode: str
    rows_written: int  # rows in the result (all rows for a full run, merged rows for incremental)
    rows_in_table: int
    seconds: float
    new_files: dict[str, int] = field(default_factory=dict)  # per new_only source, files read


@dataclass
class _SourceRead:
    version: int
    # in an incremental run, the files appended since the model's last run (None: it runs full)
    new_files: list[str] | None = None
    after_version: int = -1  # the version the model read in its last run


def default_variables(now: datetime | None = None) -> dict[str, Any]:
    """The variables every run gets unless the caller overrides them."""
    now = now or datetime.now(timezone.utc)
    return {
        # The instant "now" in the rules (expirable now, lag now); one value for a whole refresh.
        "as_of": now.strftime("%Y-%m-%d %H:%M:%S.%f"),
        # Kafka's default offsets.retention.minutes, used when no snapshot knows the broker's.
        "offsets_retention_minutes_fallback": 10080,
        # KIP-490 watch list per topic; elsewhere a group watches the partitions where it holds an offset.
        "watched_groups": {},
        # Width of a coordinator_metrics time bucket.
        "metrics_bucket_minutes": 60,
        # consumer_status: observations per partition in the window Burrow's rules judge (Burrow's
        # storage `intervals`, 10 there too).
        "consumer_status_window": 10,
        # consumer_status: at most one observation per partition per this many seconds (the latest
        # commit in it), like Burrow's `min-distance`: without it, a consumer auto-committing every
        # 5 s fills a window of 10 in under a minute, and a refresh a minute after ingest finds it
        # silent for longer than its window spans (STOP).
        "consumer_status_min_distance_seconds": 60,
    }


class ModelRunner:
    """Runs a project's models on one SparkSession against one lake."""

    def __init__(self, spark: "SparkSession", lake: Lake, project: ModelProject | None = None,
                 variables: dict[str, Any] | None = None, emit: Callable[[str], None] = print,
                 workers: int = 2, compact_at_files: int = COMPACT_AT_FILES,
                 lease_wait_s: float = DEFAULT_LEASE_WAIT_S, arrow_max_bytes: int = ARROW_MAX_BYTES,
                 small_data_max_bytes: int = SMALL_DATA_MAX_BYTES, arrow_result_max_rows: int = ARROW_RESULT_MAX_ROWS,
                 full_run_new_share: float = FULL_RUN_NEW_SHARE, full_run_min_new_bytes: int = FULL_RUN_MIN_NEW_BYTES,
                 full_when_small_max_bytes: int = SMALL_DATA_MAX_BYTES):
        self.spark = spark
        self.project = project or default_project()
        # the lake given, or one on its root that also knows this project's tables
        self.lake = lake.with_model_tables(model_table_specs(self.project))
        self.variables = {**default_variables(), **(variables or {})}
        self.emit = emit
        self.workers = workers  # models run_all runs at the same time
        self.compact_at_files = compact_at_files
        self.lease_wait_s = lease_wait_s
        self.arrow_max_bytes = arrow_max_bytes  # -1: every read and write through delta-spark
        self.small_data_max_bytes = small_data_max_bytes  # -1: every refresh keeps the session's settings
        self.arrow_result_max_rows = arrow_result_max_rows  # -1: a result of large inputs is written by delta-spark
        self.full_run_new_share = full_run_new_share  # above 1: an incremental model never runs full for its new rows
        self.full_run_min_new_bytes = full_run_min_new_bytes
        self.full_when_small_max_bytes = full_when_small_max_bytes  # -1: a full_when_small model runs as others do
        self._data_bytes: dict[tuple, int] = {}  # (table, version, appended after) -> bytes: versions never change
        self._pinned_versions: dict[str, int] | None = None  # set while run_all runs
        self._lock = threading.Lock()  # guards the pinned versions and the model_runs appends

    def run_all(self, select: list[str] | None = None, full_refresh: bool = False) -> list[ModelRun]:
        """Run the selected models (default all), each once the models it refs are done; returns
        the runs in the project's order. A failure stops new models from starting and is raised
        once the running ones end."""
        runs = {run.model: run for run in self.iter_runs(select, full_refresh)}
        return [runs[m.name] for m in self.project.models if m.name in runs]

    def iter_runs(self, select: list[str] | None = None, full_refresh: bool = False,
                  gate: Callable[[ModelRun], bool] | None = None) -> Iterator[ModelRun]:
        """Run the selected models as `run_all` does, yielding each run as it ends.

        `gate`, when given, is called with each run before the models that ref it may start (in
        this thread, while other models keep running): False stops them, and the selected models
        downstream of it are yielded as `blocked` runs instead. Dagster's refresh validates each
        table there, so a table that failed an error-severity check feeds nothing.

        The models a run frees start before the run is yielded: the caller's work with it
        (Dagster stores its materialization and check events) then overlaps theirs.
        """
        models = [m for m in self.project.models if select is None or m.name in select]
        selected = {m.name for m in models}
        waiting = {m.name: {ref for ref in m.refs if ref in selected} for m in models}
        position = {m.name: index for index, m in enumerate(models, start=1)}
        self._pinned_versions = {}
        try:
            with self._settings_for(models), \
                    ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="model") as pool:
                running: dict[Future, str] = {}

                def start_ready() -> None:
                    for name in [name for name, refs in waiting.items() if not refs]:
                        del waiting[name]
                        running[pool.submit(self._run_reported, name, full_refresh, position[name], len(models))] = name

                start_ready()
                while running:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        name = running.pop(future)
                        run = future.result()  # a failure: leaving the pool waits for the others
                        blocked = iter(()) if gate is None or gate(run) else self._block_downstream(name, waiting)
                        for refs in waiting.values():
                            refs.discard(name)
                        start_ready()
                        yield run
                        yield from blocked
        finally:
            self._pinned_versions = None

    def _settings_for(self, models: list[Model]) -> ContextManager[None]:
        """The settings for little data for a refresh of little data, the session's own otherwise."""
        sources = _in_pin_order({table for model in models for _, table in model.sources})
        data = sum(self._bytes_to_read(table, self._source_version(table), None, None) for table in sources)
        return small_data_settings(self.spark) if data <= self.small_data_max_bytes else nullcontext()

    def _block_downstream(self, name: str, waiting: dict[str, set[str]]) -> Iterator[ModelRun]:
        """Take every waiting model that refs `name`, directly or not, out of `waiting` now; the
        runs returned say, as they are iterated, that each was not run and why."""
        blocked, frontier = [], {name}
        while frontier:
            now_blocked = [model for model, refs in waiting.items() if refs & frontier]
            for model in now_blocked:
                del waiting[model]
            blocked += now_blocked
            frontier = set(now_blocked)
        return (self._blocked_run(model, name) for model in blocked)

    def _blocked_run(self, model: str, failed: str) -> ModelRun:
        self.emit(f"model {model}: not run, because {failed} failed an error-severity check upstream of it")
        return ModelRun(model=model, mode="blocked", rows_written=0, rows_in_table=0, seconds=0.0)

    def _run_reported(self, name: str, full_refresh: bool, index: int, total: int) -> ModelRun:
        model = self.project.model(name)
        self.emit(f"[{index}/{total}] model {model.layer}.{model.name} ...")
        run = self.run(model.name, full_refresh=full_refresh)
        self.emit(f"[{index}/{total}] model {model.layer}.{model.name}: {run.mode}, {run.rows_written:,} "
                  f"rows written, {run.rows_in_table:,} in table, {run.seconds:.1f} s")
        return run

    def run(self, name: str, full_refresh: bool = False) -> ModelRun:
        """Run one model, unless its inputs are as at its last run.

        Holds the lake's lease of the model from reading its last run to recording this one: two
        refreshes of one lake at once (a schedule overlapping a manual run) would otherwise both
        read the same last run and both merge the same new rows. The second waits, then finds the
        model unchanged.

        Raises:
            ModelRunError: the model's SQL failed or its result does not match its columns.
            LeaseBusy: another refresh kept running this model for longer than `lease_wait_s`.
        """
        model = self.project.model(name)
        with hold_lease(self.lake.leases, model_lease(model.name), f"refresh of model {model.name}",
                        wait_s=self.lease_wait_s, emit=self.emit), labelled_jobs(self.spark, f"model {model.name}"):
            return self._run_model(model, full_refresh)

    def _run_model(self, model: Model, full_refresh: bool) -> ModelRun:
        started = time.monotonic()
        source_versions = {table: self._source_version(table)
                           for table in _in_pin_order(table for _, table in model.sources)}
        # each ref's table version as this run sees it (model tables change only in runs; -1: not written yet)
        ref_versions = {ref: self.lake.version(ref) for ref in model.refs}
        inputs = self._inputs_fingerprint(model, source_versions, ref_versions)
        previous = {} if full_refresh else self._last_versions(model)
        # unchanged only while the table it wrote is still there
        if previous.get(INPUTS) == inputs and self.lake.exists(model.name):
            return ModelRun(model=model.name, mode="unchanged", rows_written=0,
                            rows_in_table=self.lake.count(model.name), seconds=time.monotonic() - started)
        last = previous if model.materialized == "incremental" and self._same_variables(model, previous) else {}
        reads = self._plan_reads(model, source_versions, last)
        states = {ref: last.get(REF_PREFIX + ref) for ref in model.refs_at_last_run}
        # _plan_reads finds appended files only for an incremental model that may run incrementally
        incremental = (bool(reads) and all(read.new_files is not None for read in reads.values())
                       and all(_loadable(self.lake, ref, version) for ref, version in states.items()))
        replaces = model.incremental_strategy == "replace"
        if incremental:
            new, whole = self._new_and_all_bytes(reads)
            why_full = None
            if (model.full_when_mostly_new and new > self.full_run_min_new_bytes
                    and new > self.full_run_new_share * whole):
                why_full = (f"{new / whole:.0%} of its sources' data is new since its last run; "
                            "a full run costs it less than an incremental one")
            elif model.full_when_small and whole <= self.full_when_small_max_bytes:
                why_full = f"its sources hold {whole:,} bytes; on so little data a full run costs less than an incremental one"
            if why_full:
                self.emit(f"model {model.name}: {why_full}")
                incremental, reads = False, {table: _SourceRead(version=read.version) for table, read in reads.items()}
        merges = incremental and not replaces  # a replacing run overwrites its table as a full one does
        context = render(model.name, model.sql, self.variables, incremental=incremental,
                         ephemerals=self.project.ephemeral_sql())
        via_arrow = self._register_views(model, context.new_only_sources, reads, ref_versions, incremental)
        if incremental:
            for ref, version in states.items():
                via_arrow &= self._view(at_last_run_view(model.name, ref), ref, version)
        try:
            result = self._checked_columns(model, lazy_sql(self.spark, context.sql))
            arrow_max_rows = self.arrow_result_max_rows if self._expects_small_result(model) else -1
            if merges:
                rows = self.lake.spark_merge(model.name, result, via_arrow=via_arrow, delete_when=model.delete_when,
                                             arrow_max_rows=arrow_max_rows,
                                             rewrite=model.incremental_strategy == "rewrite")
            else:
                if model.delete_when:  # nothing to delete in a table written anew
                    result = result.where(f"not {model.delete_when}").drop(model.delete_when)
                rows = self.lake.spark_overwrite(model.name, result, via_arrow=via_arrow, arrow_max_rows=arrow_max_rows)
        except ModelRunError:
            raise
        except Exception as error:  # Spark's analysis and runtime errors: say which model
            raise ModelRunError(f"model {model.name} ({model.layer}/{model.sql_path.name}) failed: "
                                f"{_first_line(error)}") from error
        if merges and len(self.lake.files(model.name)) > self.compact_at_files:
            self._compact(model.name)
        self._view(model.name, model.name, self.lake.version(model.name))
        self._record(model, "incremental" if incremental else "full", reads,
                     {**self._states_to_record(model, reads, ref_versions), **self._variable_rows(model),
                      INPUTS: inputs}, rows)
        return ModelRun(model=model.name, mode="incremental" if incremental else "full", rows_written=rows,
                        # an overwritten table holds exactly the result: no need to count it
                        rows_in_table=self.lake.count(model.name) if merges else rows,
                        seconds=time.monotonic() - started,
                        new_files={t: len(r.new_files) for t, r in reads.items() if r.new_files is not None})

    def _plan_reads(self, model: Model, source_versions: dict[str, int],
                    last: dict[str, int]) -> dict[str, _SourceRead]:
        """Each source's pinned version; for an incremental model that ran before with this code
        (`last` holds what it read then), also the files appended since."""
        reads = {}
        for table, version in source_versions.items():
            read = _SourceRead(version=version)
            if table in last and self.lake.exists(model.name):  # new rows merge into the table it has
                read.after_version = last[table]
                read.new_files = self.lake.appended_files(table, last[table], version)
            reads[table] = read
        return reads

    def _new_and_all_bytes(self, reads: dict[str, _SourceRead]) -> tuple[int, int]:
        """The bytes of the data files appended to the sources since the last run, and of all of
        them at the pinned versions."""
        new = sum(self._bytes_to_read(table, read.version, read.after_version, read.new_files)
                  for table, read in reads.items())
        return new, sum(self._bytes_to_read(table, read.version, None, None) for table, read in reads.items())

    def _inputs_fingerprint(self, model: Model, source_versions: dict[str, int], ref_versions: dict[str, int]) -> int:
        """A number that changes when anything the model's result depends on changes: its SQL and
        columns, the version of each source and ref, the value of each variable it uses."""
        inputs = {
            "code": model.code_version,
            "sources": source_versions,
            "refs": ref_versions,
            "variables": {name: self.variables.get(name) for name in model.variables},
        }
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
        return int(digest[:15], 16)  # 60 bits: fits model_runs' bigint version column

    def _variable_rows(self, model: Model) -> dict[str, int]:
        """What an incremental model records of the variables it used (VARIABLES, AS_OF)."""
        if model.materialized != "incremental" or not model.variables:
            return {}
        others = {name: self.variables.get(name) for name in model.variables if name != AS_OF}
        digest = hashlib.sha256(json.dumps(others, sort_keys=True, default=str).encode()).hexdigest()
        rows = {VARIABLES: int(digest[:15], 16)}
        if AS_OF in model.variables:
            as_of = datetime.fromisoformat(str(self.variables[AS_OF])).replace(tzinfo=timezone.utc)
            rows[AS_OF] = (as_of - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
        return rows

    def _same_variables(self, model: Model, last: dict[str, int]) -> bool:
        """Whether the rows an incremental model merged before hold for the variables now: the
        same values, except that as_of may have moved forward. A model that reads as_of keeps
        state that a later as_of can go on from (what a full run at the later as_of gives);
        going back in time needs what it has already dropped, so that run is full."""
        now = self._variable_rows(model)
        return (last.get(VARIABLES) == now.get(VARIABLES)
                and (AS_OF not in now or last.get(AS_OF, now[AS_OF] + 1) <= now[AS_OF]))

    def _source_version(self, table: str) -> int:
        with self._lock:
            if self._pinned_versions is None:
                return self.lake.version(table)
            if table not in self._pinned_versions:
                self._pinned_versions[table] = self.lake.version(table)
            return self._pinned_versions[table]

    def _last_versions(self, model: Model, any_code: bool = False) -> dict[str, int]:
        """What the model's latest run read: source -> version, and `ref:<model>` -> the
        ref's table version for refs read at_last_run. Empty when the code changed since."""
        rows = self.lake.query(
            f"select source, source_version, code_version, run_id, finished_at from {RUNS_TABLE} "
            f"where model = {lake_string(model.name)} order by finished_at desc", RUNS_TABLE).to_pylist()
        if not rows or (rows[0]["code_version"] != model.code_version and not any_code):
            return {}
        latest_run = rows[0]["run_id"]
        return {row["source"]: row["source_version"] for row in rows if row["run_id"] == latest_run}

    def _expects_small_result(self, model: Model) -> bool:
        """Whether the model's latest run wrote at most arrow_result_max_rows rows, so that this
        one's result is worth counting for delta-rs before an overwrite (a first run is not):
        keeping and counting a large result costs Spark one more pass. A merge counts its result
        either way, to commit nothing when it is empty."""
        if self.arrow_result_max_rows < 0:
            return False
        latest = self.lake.query(f"select rows_written from {RUNS_TABLE} where model = {lake_string(model.name)} "
                                 f"order by finished_at desc limit 1", RUNS_TABLE).to_pylist()
        return bool(latest) and latest[0]["rows_written"] <= self.arrow_result_max_rows

    def _states_to_record(self, model: Model, reads: dict[str, _SourceRead],
                          ref_versions: dict[str, int]) -> dict[str, int]:
        """For each ref read at_last_run, the version read now, when that ref's latest run read
        the same versions of the sources both models read: then, at the next run, that table is
        exactly the state before the files new since this run."""
        states = {}
        for ref in model.refs_at_last_run:
            ref_read = self._last_versions(self.project.model(ref), any_code=True)
            shared = set(ref_read) & set(reads)
            if shared and all(ref_read[table] == reads[table].version for table in shared):
                states[REF_PREFIX + ref] = ref_versions[ref]
        return states

    def _register_views(self, model: Model, new_only: list[str], reads: dict[str, _SourceRead],
                        ref_versions: dict[str, int], incremental: bool) -> bool:
        """Make the views the model's SQL reads; True when every one reached Spark via Arrow."""
        via_arrow = True
        for table, read in reads.items():
            via_arrow &= self._view(table, table, read.version)
        for table in new_only:
            read = reads[table]
            via_arrow &= self._view(new_rows_view(model.name, table), table, read.version,
                                    appended_after=read.after_version, appended_files=read.new_files)
        for ref in model.refs:
            via_arrow &= self._view(ref, ref, ref_versions[ref])
        if incremental:
            via_arrow &= self._view(this_view(model.name), model.name, self.lake.version(model.name))
        return via_arrow

    def _view(self, name: str, table: str, version: int, appended_after: int | None = None,
              appended_files: list[str] | None = None) -> bool:
        """Make `name` a temporary view of the table at `version` (or of the rows appended after
        `appended_after` up to it, in `appended_files`), unless the session has that view already:
        models of a refresh read the same sources and refs, and each registration is a round trip
        and an analysis on a Spark Connect server. A view of one version of one table shows the
        same rows however often it is read. Returns whether the view's rows reached Spark via
        Arrow (at most `arrow_max_bytes` of data files)."""
        via_arrow = self._bytes_to_read(table, version, appended_after, appended_files) <= self.arrow_max_bytes
        # the lake's root and the schema too: runners over other lakes share the session, and a
        # view of a table no write has created yet is an empty one with the table's columns
        shown = hashlib.sha256(json.dumps([str(self.lake.path(table)), str(self.lake.spec(table).schema),
                                           version, appended_after, via_arrow]).encode()).hexdigest()
        with _VIEWS_LOCK:
            views = _VIEWS.setdefault(self.spark, {})
            view_lock = _VIEW_LOCKS.setdefault(self.spark, {}).setdefault(name, threading.Lock())
        with view_lock:
            if views.get(name) == shown:
                return via_arrow
            if appended_after is None:
                frame = self.lake.spark_read(self.spark, table, version, via_arrow=via_arrow)
            else:
                frame = self.lake.spark_read_appended(self.spark, table, appended_after, version, via_arrow=via_arrow,
                                                      files=appended_files)
            frame.createOrReplaceTempView(name)
            views[name] = shown
        return via_arrow

    def _bytes_to_read(self, table: str, version: int, appended_after: int | None,
                       appended_files: list[str] | None) -> int:
        key = (table, version, appended_after)
        if key not in self._data_bytes:
            self._data_bytes[key] = self.lake.data_bytes(table, version, appended_files)
        return self._data_bytes[key]

    def _checked_columns(self, model: Model, result: "DataFrame") -> "DataFrame":
        """The result, once its columns are the declared ones (before anything is written)."""
        declared = [column.name for column in model.columns] + ([model.delete_when] if model.delete_when else [])
        produced = result.columns
        if sorted(declared) != sorted(produced):
            raise ModelRunError(
                f"model {model.name}: the SQL's columns do not match {model.layer}.yml; "
                f"missing from the SQL: {sorted(set(declared) - set(produced))}, "
                f"not declared: {sorted(set(produced) - set(declared))}")
        return result

    def _record(self, model: Model, mode: str, reads: dict[str, _SourceRead], states: dict[str, int],
                rows: int) -> None:
        run_id = uuid.uuid4().hex
        now = datetime.now(timezone.utc)
        entries = [(table, read.version) for table, read in reads.items()] or [(NO_SOURCE, -1)]
        entries += list(states.items())
        row = pa.table({
            "model": [model.name] * len(entries),
            "run_id": [run_id] * len(entries),
            "mode": [mode] * len(entries),
            "source": [table for table, _ in entries],
            "source_version": [version for _, version in entries],
            "code_version": [model.code_version] * len(entries),
            "rows_written": [rows] * len(entries),
            "finished_at": [now] * len(entries),
        })
        with self._lock:  # two models finishing together would race for the same Delta version
            version = self.lake.append(RUNS_TABLE, row)
            if version % self.compact_at_files == 0:  # each version since the last compaction added one file
                self._compact(RUNS_TABLE)

    def _compact(self, table: str) -> None:
        """Rewrite a table that runs fill with small files. Never a source: an incremental model
        reads the files new there, and a compacted source would make its next run full. The
        older versions keep their files, so a ref read at_last_run still finds its rows."""
        self.emit(f"compacted {table}: {self.lake.compact(table):,} small files rewritten")


def _loadable(lake: Lake, table: str, version: int | None) -> bool:
    """Whether the table's `version` is recorded and can still be loaded."""
    if version is None:
        return False
    try:
        lake.files(table, version)
    except Exception:  # delta-rs raises various errors for versions whose log was cleaned up
        return False
    return True


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
