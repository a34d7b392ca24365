"""The runner on Spark: incremental runs equal a full refresh, and failures name the model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from offsets_platform.lake import Lake
from offsets_platform.lake.lease import LeaseBusy, hold_lease
from offsets_platform.models import ModelRunError, ModelRunner, default_project, lake_for_models, load_project
from offsets_platform.models.runner import ARROW_MAX_BYTES, ARROW_RESULT_MAX_ROWS, SMALL_DATA_MAX_BYTES
from tests.at_once import Meeting, run_at_once
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import needed_for, rows_by
from tests.models.test_project import write_project

AS_OF = {"as_of": "2026-01-05 00:00:00"}
# The tests of removals, commit counts and metrics refresh only these: a fifth of the project
METRICS = needed_for("coordinator_metrics")


def _history(b: BronzeBuilder, start_hour: int) -> None:
    for hour in range(start_hour, start_hour + 3):
        b.group_record("g", at(hours=hour), members={"m": ["t"]}, current_state_at=at(hours=hour), generation=hour)
        b.commit("g", "t", 0, hour * 10, at(hours=hour, minutes=5))
        b.commit("g", "old", hour % 2, hour, at(hours=hour, minutes=6))
    b.offset_tombstone("g", "old", 0, at(hours=start_hour + 2, minutes=30))


def test_an_incremental_run_reads_only_new_files_and_equals_a_full_refresh(spark, tmp_path, monkeypatch):
    builder = BronzeBuilder()
    _history(builder, 0)
    incremental_lake = lake_for_models(tmp_path / "incremental")
    builder.write(incremental_lake)
    runner = ModelRunner(spark, incremental_lake, variables=AS_OF, emit=lambda line: None)
    views_made = []
    spark_read = Lake.spark_read
    monkeypatch.setattr(Lake, "spark_read", lambda self, session, name, version=None, **how:
                        views_made.append(name) or spark_read(self, session, name, version, **how))
    first = {run.model: run for run in runner.run_all()}
    monkeypatch.undo()
    assert first["log_offset_state"].mode == "full"
    # The first run, in full, makes each view of a table version once: models read the same sources
    # and refs, and each view made is a round trip and an analysis on a Spark Connect server (that
    # two lakes on one session keep their own rows is checked below).
    sources = {table for model in default_project().models for _, table in model.sources}
    assert {run.mode for run in first.values()} == {"full"}
    assert len(views_made) == len(set(views_made)), views_made  # none made twice
    # and a view of every table with rows (views of empty tables are alike whatever the lake)
    assert {name for name in sources | set(first) if incremental_lake.files(name)} <= set(views_made)

    second_round = BronzeBuilder()
    second_round._next_offset = builder._next_offset  # the log goes on where it stopped
    _history(second_round, 3)
    second_round.write(incremental_lake)
    second = {run.model: run for run in runner.run_all()}
    assert second["log_offset_state"].mode == "incremental"
    assert second["log_offset_state"].new_files == {"offset_commit_records": 1}
    assert second["log_offset_state"].rows_written == 3  # the keys the new records touched: t-0, old-0, old-1

    # the same history in one full run, of the models the compared tables need only
    full_lake = lake_for_models(tmp_path / "full")
    for part in (builder, second_round):
        part.write(full_lake)
    ModelRunner(spark, full_lake, variables=AS_OF, emit=lambda line: None).run_all(
        select=needed_for("expirable_offsets"))
    for table in ("log_offset_state", "committed_offsets", "expirable_offsets"):
        assert rows_by(incremental_lake, table, "group_id", "topic", "partition_id") == \
            rows_by(full_lake, table, "group_id", "topic", "partition_id"), table
    assert rows_by(full_lake, "committed_offsets", "group_id", "topic", "partition_id")[("g", "t", 0)]["committed_offset"] == 50

    # a full refresh is asked for explicitly
    assert runner.run_all(select=["log_offset_state"], full_refresh=True)[0].mode == "full"


def test_log_offset_state_keeps_each_keys_latest_record_when_log_partitions_share_offsets(spark, tmp_path):
    # Two groups whose records live in different partitions of __consumer_offsets, at the same
    # offsets there: a record is identified by its partition and offset, not its offset alone.
    builder = BronzeBuilder()
    for offset in (1, 2, 3):
        builder.commit("a", "t", 0, offset, at(hours=offset))
    builder._next_offset = 0
    builder.commit("b", "t", 0, 10, at(hours=1))
    builder.offset_tombstone("b", "t", 0, at(hours=2))
    for row in builder.rows["offset_commit_records"][3:]:
        row["source_partition"] = 1
    lake = lake_for_models(tmp_path / "lake")
    builder.write(lake)
    ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None).run_all(select=["log_offset_state"])

    rows = lake.read_arrow("log_offset_state").to_pylist()
    assert len(rows) == 2  # one per key
    latest = {row["group_id"]: row for row in rows}
    assert (latest["a"]["committed_offset"], latest["a"]["is_removed"], latest["a"]["source_offset"]) == (3, False, 2)
    assert (latest["b"]["is_removed"], latest["b"]["source_partition"], latest["b"]["source_offset"]) == (True, 1, 1)


def _removals_round_one(b: BronzeBuilder) -> None:
    _history(b, 0)
    b.commit("g", "x", 0, 7, at(hours=1, minutes=10))
    b.commit("g", "y", 0, 8, at(hours=1, minutes=20))
    b.offset_tombstone("g", "y", 0, at(hours=1, minutes=30))


def _removals_round_two(b: BronzeBuilder) -> None:
    b.offset_tombstone("g", "x", 0, at(hours=2, minutes=50))  # removes the commit of round one
    b.commit("g", "x", 0, 9, at(hours=2, minutes=55))
    b.offset_tombstone("g", "x", 0, at(hours=2, minutes=58))  # removes the commit just before
    b.offset_tombstone("g", "y", 0, at(hours=2, minutes=59))  # y-0 was already removed in round one
    _history(b, 3)


def _refreshed_round_one_then_round_two_written(spark, lake: Lake) -> tuple[ModelRunner, list[BronzeBuilder]]:
    """Round one written and refreshed, round two written: the runner and both rounds."""
    first_round = BronzeBuilder()
    _removals_round_one(first_round)
    second_round = first_round.next_round()
    _removals_round_two(second_round)
    first_round.write(lake)
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None)
    runner.run_all(select=METRICS)
    second_round.write(lake)
    return runner, [first_round, second_round]


def _assert_metrics_equal(incremental_lake: Lake, full_lake: Lake) -> None:
    for table, key in (("offset_removals", ("source_partition", "source_offset")),
                       ("coordinator_metrics", ("bucket_start_at",))):
        assert rows_by(incremental_lake, table, *key) == rows_by(full_lake, table, *key), table

    def commits_per_minute(lake: Lake) -> dict:  # file names differ between the two lakes
        totals: dict = {}
        for row in lake.read_arrow("offset_commit_counts").to_pylist():
            totals[row["minute_start_at"]] = totals.get(row["minute_start_at"], 0) + row["count_offset_commits"]
        return totals

    assert commits_per_minute(incremental_lake) == commits_per_minute(full_lake)


def test_tombstones_find_the_commit_they_removed_in_earlier_runs_and_metrics_equal_a_full_refresh(spark, tmp_path):
    incremental_lake = lake_for_models(tmp_path / "incremental")
    runner, rounds = _refreshed_round_one_then_round_two_written(spark, incremental_lake)
    second = {run.model: run for run in runner.run_all(select=METRICS)}
    assert second["offset_removals"].mode == second["offset_commit_counts"].mode == "incremental"
    assert second["offset_commit_counts"].new_files["offset_commit_records"] == 1

    removals = rows_by(incremental_lake, "offset_removals", "source_offset")
    x_tombstones = sorted((r for r in removals.values() if r["topic"] == "x"), key=lambda r: r["source_offset"])
    # the first x-0 tombstone's commit is in round one: found in log_offset_state as last seen
    assert [(r["is_offset_removed"], r["committed_at"]) for r in x_tombstones] == [
        (True, at(hours=1, minutes=10)), (True, at(hours=2, minutes=55))]
    y_tombstones = sorted((r for r in removals.values() if r["topic"] == "y"), key=lambda r: r["source_offset"])
    assert [r["is_offset_removed"] for r in y_tombstones] == [True, False]  # the second removed nothing

    full_lake = lake_for_models(tmp_path / "full")
    for part in rounds:
        part.write(full_lake)
    ModelRunner(spark, full_lake, variables=AS_OF, emit=lambda line: None).run_all(select=METRICS)
    _assert_metrics_equal(incremental_lake, full_lake)
    commits = sum(1 for part in rounds for row in part.rows["offset_commit_records"] if not row["tombstone"])
    assert sum(r["count_offset_commits"] for r in incremental_lake.read_arrow("coordinator_metrics").to_pylist()) == commits


def _sorted_rows(lake: Lake, table: str) -> list[dict]:
    return sorted(lake.read_arrow(table).to_pylist(), key=repr)


def test_small_tables_via_arrow_and_every_table_through_delta_spark_give_the_same_tables(spark, tmp_path):
    # The runner hands small tables to Spark via Arrow, writes small results with delta-rs
    # (ARROW_MAX_BYTES, ARROW_RESULT_MAX_ROWS) and runs a refresh of little data with the settings for
    # little data (SMALL_DATA_MAX_BYTES: interpreted expressions, one shuffle partition, no adaptive
    # execution, no broadcast joins); at -1 every read and write goes through delta-spark with the
    # session's own settings, as for a large lake. Both paths, each through a full refresh and then an
    # incremental one (new rows from the change data feed, merged; a ref read as at the last run),
    # give the same rows in every table.
    first_round = BronzeBuilder()
    _removals_round_one(first_round)
    first_round.snapshot(at(hours=3))
    second_round = first_round.next_round()
    _removals_round_two(second_round)
    second_round.snapshot(at(hours=6))
    lakes = {"delta-spark": lake_for_models(tmp_path / "delta-spark"), "arrow": lake_for_models(tmp_path / "arrow")}
    runners = {path: ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None,
                                 arrow_max_bytes=-1 if path == "delta-spark" else ARROW_MAX_BYTES,
                                 small_data_max_bytes=-1 if path == "delta-spark" else SMALL_DATA_MAX_BYTES,
                                 arrow_result_max_rows=-1 if path == "delta-spark" else ARROW_RESULT_MAX_ROWS)
               for path, lake in lakes.items()}
    settings = ("spark.sql.codegen.factoryMode", "spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
                "spark.sql.autoBroadcastJoinThreshold")
    seen: dict[str, set] = {"delta-spark": set(), "arrow": set()}
    before = tuple(spark.conf.get(key) for key in settings)
    for round_ in (first_round, second_round):
        runs = {}
        for path, lake in lakes.items():
            round_.write(lake)
            runs[path] = {run.model: run.mode for run in runners[path].iter_runs(
                gate=lambda run, path=path: seen[path].add(tuple(spark.conf.get(key) for key in settings)) or True)}
        assert runs["delta-spark"] == runs["arrow"]
        for model in default_project().models:
            assert _sorted_rows(lakes["delta-spark"], model.name) == _sorted_rows(lakes["arrow"], model.name), model.name
    assert runs["arrow"]["offset_removals"] == runs["arrow"]["log_offset_state"] == "incremental"
    # each took its own path: delta-spark's writer, and delta-rs's; the session's settings, and
    # those for little data, the session's own back after the refresh
    for path, writer in (("delta-spark", "Apache-Spark"), ("arrow", "delta-rs")):
        for model in ("log_offset_state", "offset_removals", "committed_offsets", "consumer_status"):
            assert lakes[path].table(model).history(1)[0]["engineInfo"].startswith(writer), (path, model)
    assert seen == {"delta-spark": {before}, "arrow": {("NO_CODEGEN", "1", "false", "-1")}}
    assert before[0] != "NO_CODEGEN" and before[2] == "true" and before[3] != "-1"
    assert tuple(spark.conf.get(key) for key in settings) == before


def test_a_small_result_of_large_inputs_is_written_by_delta_rs_once_a_run_showed_it_small(spark, tmp_path):
    # every input as if large (arrow_max_bytes=-1): a first run does not know how large its result
    # is and writes it with delta-spark; a later one, whose last run wrote few rows, counts its
    # result and writes it with delta-rs
    first_round = BronzeBuilder()
    _history(first_round, 0)
    second_round = first_round.next_round()
    _history(second_round, 3)
    lake = lake_for_models(tmp_path)
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None, arrow_max_bytes=-1)
    models = needed_for("committed_offsets")
    for round_, writer in ((first_round, "Apache-Spark"), (second_round, "delta-rs")):
        round_.write(lake)
        runs = {run.model: run.mode for run in runner.run_all(select=models)}
        assert runs["log_offset_state"] == ("full" if writer == "Apache-Spark" else "incremental")
        for model in ("log_offset_state", "committed_offsets"):
            assert lake.table(model).history(1)[0]["engineInfo"].startswith(writer), (model, writer)
    assert rows_by(lake, "committed_offsets", "group_id", "topic", "partition_id")[("g", "t", 0)]["committed_offset"] == 50


def test_a_state_read_by_a_model_that_ran_alone_is_not_trusted_the_next_run_is_full(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    runner, rounds = _refreshed_round_one_then_round_two_written(spark, lake)
    # log_offset_state has not read round two: offset_removals cannot record it as its state
    assert runner.run("offset_removals").mode == "incremental"
    third_round = rounds[-1].next_round()
    third_round.offset_tombstone("g", "t", 0, at(hours=6))
    third_round.write(lake)
    third = {run.model: run for run in runner.run_all(select=METRICS)}
    assert third["offset_removals"].mode == "full"
    assert third["log_offset_state"].mode == "incremental"

    full_lake = lake_for_models(tmp_path / "full")
    for part in [*rounds, third_round]:
        part.write(full_lake)
    ModelRunner(spark, full_lake, variables=AS_OF, emit=lambda line: None).run_all(select=METRICS)
    _assert_metrics_equal(lake, full_lake)


def test_a_refresh_compacts_the_small_files_runs_leave_and_incremental_runs_go_on(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    messages: list[str] = []
    rounds = [BronzeBuilder()]
    _removals_round_one(rounds[0])
    rounds[0].write(lake)
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=messages.append, compact_at_files=2)
    runner.run_all(select=METRICS)
    for start in (3, 6):
        rounds.append(rounds[-1].next_round())
        _history(rounds[-1], start)
        rounds[-1].offset_tombstone("g", "t", 0, at(hours=start + 2, minutes=40))
        rounds[-1].write(lake)
        runs = {run.model: run for run in runner.run_all(select=METRICS)}
        # compacting model_runs kept what each model read: the runs stay incremental
        assert runs["log_offset_state"].mode == runs["offset_removals"].mode == "incremental"
        assert runs["offset_commit_counts"].mode == "incremental"
    assert len(lake.files("offset_commit_counts")) == len(lake.files("offset_removals")) == 1
    assert len(lake.files("model_runs")) <= 2
    assert any(message.startswith("compacted offset_commit_counts: 3 small files") for message in messages)
    assert any(message.startswith("compacted model_runs:") for message in messages)
    assert len(lake.files("offset_commit_records")) == 3  # a source is never compacted

    full_lake = lake_for_models(tmp_path / "full")
    for part in rounds:
        part.write(full_lake)
    ModelRunner(spark, full_lake, variables=AS_OF, emit=lambda line: None).run_all(select=METRICS)
    _assert_metrics_equal(lake, full_lake)
    assert rows_by(lake, "log_offset_state", "group_id", "topic", "partition_id") == \
        rows_by(full_lake, "log_offset_state", "group_id", "topic", "partition_id")


def test_a_result_whose_columns_differ_from_the_yaml_is_refused(spark, tmp_path):
    project = load_project(write_project(tmp_path / "p", {"mismatch_model": "select 1 as y"}))
    runner = ModelRunner(spark, Lake(tmp_path / "lake"), project=project, emit=lambda line: None)
    with pytest.raises(ModelRunError, match=r"missing from the SQL: \['x'\], not declared: \['y'\]"):
        runner.run("mismatch_model")


def test_an_incremental_model_whose_columns_were_renamed_is_rebuilt_in_full_not_merged(spark, tmp_path):
    # a new version of a model renames its columns: its table, written with the old names, is
    # replaced whole (a changed SQL means a full run, and the overwrite replaces the schema)
    def project(root, key: str):
        sql = (f"select `group` as {key}, max(offset) as latest "
               "from {{ source('bronze', 'offset_commit_records', new_only=true) }} group by `group`")
        yml = (f"models:\n  - name: latest\n    materialized: incremental\n    unique_key: [{key}]\n"
               f"    columns: [{{name: {key}, data_type: string}}, {{name: latest, data_type: bigint}}]\n")
        return load_project(write_project(root, {"latest": sql}, yml=yml))

    lake = Lake(tmp_path / "lake")
    first = BronzeBuilder()
    first.commit("a", "t", 0, 1, at(hours=1))
    first.write(lake)
    old = project(tmp_path / "old", "group")
    ModelRunner(spark, lake, project=old, emit=lambda line: None).run_all()
    second = BronzeBuilder()
    second._next_offset = first._next_offset
    second.commit("b", "t", 0, 2, at(hours=2))
    second.write(lake)
    renamed = project(tmp_path / "new", "group_id")
    runner = ModelRunner(spark, lake, project=renamed, emit=lambda line: None)
    assert [run.mode for run in runner.run_all()] == ["full"]
    assert runner.lake.read_arrow("latest").column_names == ["group_id", "latest"]
    assert rows_by(runner.lake, "latest", "group_id") == {"a": {"group_id": "a", "latest": 1},
                                                           "b": {"group_id": "b", "latest": 2}}
    assert [run.mode for run in runner.run_all()] == ["unchanged"]


def test_failing_sql_names_the_model_and_its_file(spark, tmp_path):
    project = load_project(write_project(tmp_path / "p", {"broken_model": "select x from no_such_table"}))
    runner = ModelRunner(spark, Lake(tmp_path / "lake"), project=project, emit=lambda line: None)
    with pytest.raises(ModelRunError, match=r"model broken_model \(silver/broken_model.sql\) failed"):
        runner.run("broken_model")
    assert not runner.lake.exists("broken_model"), "nothing is written for a failed model"


def test_each_models_spark_jobs_carry_its_name_and_the_threads_own_label_comes_back(spark, tmp_path):
    # two models run at once in a refresh: a job's group tells which one started it
    builder = BronzeBuilder()
    _history(builder, 0)
    lake = lake_for_models(tmp_path / "lake")
    builder.write(lake)
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None)
    context = spark.sparkContext
    runner.run("log_offset_state")
    assert context.getLocalProperty("spark.jobGroup.id") is None
    # a job group of the caller's own (a notebook's) is the thread's again after the run
    context.setJobGroup("my notebook", "my analysis")
    try:
        runner.run("committed_offsets")
        assert (context.getLocalProperty("spark.jobGroup.id"), context.getLocalProperty("spark.job.description")) \
            == ("my notebook", "my analysis")
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setJobDescription(None)
    for model in ("log_offset_state", "committed_offsets"):
        assert context.statusTracker().getJobIdsForGroup(f"model {model}"), f"no Spark job of {model} carries its name"


def test_a_model_whose_inputs_did_not_change_is_not_run_again(spark, tmp_path):
    builder = BronzeBuilder()
    _history(builder, 0)
    builder.snapshot(at(hours=3))
    lake = lake_for_models(tmp_path / "lake")
    builder.write(lake)
    ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None).run_all()

    # nothing new, the same variables: every table is already the result
    again = ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None).run_all()
    assert {run.mode for run in again} == {"unchanged"}

    # a new snapshot only: what reads the log alone stays, what reads snapshots runs
    snapshot_only = builder.next_round()
    snapshot_only.snapshot(at(hours=4))
    snapshot_only.write(lake)
    runs = {run.model: run.mode for run in ModelRunner(spark, lake, variables=AS_OF,
                                                       emit=lambda line: None).run_all()}
    assert runs["log_offset_state"] == runs["offset_removals"] == runs["offset_commit_counts"] == "unchanged"
    assert runs["snapshot_offsets"] == runs["committed_offsets"] == runs["expirable_offsets"] == "full"

    # another value of a variable reruns the models that use it, and what reads them
    runs = {run.model: run.mode for run in ModelRunner(spark, lake, variables={**AS_OF, "metrics_bucket_minutes": 30},
                                                       emit=lambda line: None).run_all()}
    assert runs["coordinator_metrics"] == runs["non_consumed_metrics"] == "full"
    assert runs["committed_offsets"] == "unchanged"
    assert {row["bucket_minutes"] for row in lake.read_arrow("coordinator_metrics").to_pylist()} == {30}

    # asked for, a full refresh runs what it selects though nothing changed (one model of the
    # log, one of the snapshots, one downstream of both: every model takes the same path)
    assert {run.mode for run in ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None)
            .run_all(select=["log_offset_state", "snapshot_offsets", "committed_offsets"],
                     full_refresh=True)} == {"full"}


def test_two_refreshes_of_one_model_at_once_run_it_once(spark, tmp_path, monkeypatch):
    # Each run pauses once it has read the model's last run, until the other read it too
    # (tests/at_once.py). Without the model's lease both would run it.
    builder = BronzeBuilder()
    _history(builder, 0)
    lake_root = tmp_path / "lake"
    builder.write(Lake(lake_root))
    meet = Meeting()
    monkeypatch.setattr(ModelRunner, "_last_versions", meet.after(ModelRunner._last_versions))
    said: list[str] = []
    runs = run_at_once(lambda: ModelRunner(spark, Lake(lake_root), variables=AS_OF, emit=said.append)
                       .run("log_offset_state"))
    modes = [run.mode for run in runs]
    assert sorted(modes) == ["full", "unchanged"]
    assert any(line.startswith("waiting up to 600 s for the lake's 'model-log_offset_state' lease, held by "
                               "refresh of model log_offset_state (pid ") for line in said), said


def test_a_refresh_that_will_not_wait_names_the_run_it_found(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    BronzeBuilder().write(lake)
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=lambda line: None, lease_wait_s=0)
    with hold_lease(lake.root, "model-log_offset_state", "refresh of model log_offset_state"):
        with pytest.raises(LeaseBusy, match="held by refresh of model log_offset_state"):
            runner.run("log_offset_state")
    assert not lake.exists("log_offset_state")


def test_a_model_that_declares_it_runs_full_when_most_of_its_sources_rows_are_new(spark, tmp_path):
    # full_when_mostly_new: for a model whose incremental plan over a batch as large as the history
    # costs more than a full run (FULL_RUN_NEW_SHARE); the minimum size is lifted, as this history
    # is small. Here offset_removals declares it; offset_commit_counts (also merging) and
    # log_offset_state (rewriting) do not, and stay incremental
    project = default_project()
    project = replace(project, models=[replace(model, full_when_mostly_new=model.name == "offset_removals")
                                       for model in project.models])
    first_round = BronzeBuilder()
    _history(first_round, 0)
    second_round = first_round.next_round()
    _history(second_round, 3)
    modes, tables = {}, {}
    for share in (0.25, 10.0):  # the second never finds the new rows a large enough share
        lake = lake_for_models(tmp_path / str(share))
        said: list[str] = []
        runner = ModelRunner(spark, lake, project=project, variables=AS_OF, emit=said.append,
                             full_run_new_share=share, full_run_min_new_bytes=0)
        first_round.write(lake)
        runner.run_all(select=METRICS)
        second_round.write(lake)
        modes[share] = {run.model: run.mode for run in runner.run_all(select=METRICS)}
        tables[share] = {model: _sorted_rows(lake, model) for model in METRICS}
        assert [line.split(":")[0] for line in said if "a full run costs it less than an incremental one" in line] \
            == (["model offset_removals"] if share < 1 else [])
    assert [modes[0.25][model] for model in ("offset_removals", "offset_commit_counts", "log_offset_state")] == \
        ["full", "incremental", "incremental"]
    assert modes[10.0]["log_offset_state"] == modes[10.0]["offset_removals"] == "incremental"
    assert tables[0.25] == tables[10.0]
