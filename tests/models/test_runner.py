"""The runner on Spark: incremental runs equal a full refresh, and failures name the model."""

from __future__ import annotations

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models import ModelRunError, ModelRunner, load_project
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import rows_by
from tests.models.test_project import write_project

AS_OF = {"as_of": "2026-01-05 00:00:00"}


def _history(b: BronzeBuilder, start_hour: int) -> None:
    for hour in range(start_hour, start_hour + 3):
        b.group_record("g", at(hours=hour), members={"m": ["t"]}, current_state_at=at(hours=hour), generation=hour)
        b.commit("g", "t", 0, hour * 10, at(hours=hour, minutes=5))
        b.commit("g", "old", hour % 2, hour, at(hours=hour, minutes=6))
    b.offset_tombstone("g", "old", 0, at(hours=start_hour + 2, minutes=30))


def test_an_incremental_run_reads_only_new_files_and_equals_a_full_refresh(spark, tmp_path):
    builder = BronzeBuilder()
    _history(builder, 0)
    incremental_lake = Lake(tmp_path / "incremental")
    builder.write(incremental_lake)
    runner = ModelRunner(spark, incremental_lake, variables=AS_OF, emit=lambda line: None)
    first = {run.model: run for run in runner.run_all()}
    assert first["log_offset_state"].mode == "full"

    second_round = BronzeBuilder()
    second_round._next_offset = builder._next_offset  # the log goes on where it stopped
    _history(second_round, 3)
    second_round.write(incremental_lake)
    second = {run.model: run for run in runner.run_all()}
    assert second["log_offset_state"].mode == "incremental"
    assert second["log_offset_state"].new_files == {"offset_commit_records": 1}
    assert second["log_offset_state"].rows_written == 3  # the keys the new records touched: t-0, old-0, old-1

    full_lake = Lake(tmp_path / "full")
    for part in (builder, second_round):
        part.write(full_lake)
    ModelRunner(spark, full_lake, variables=AS_OF, emit=lambda line: None).run_all()
    for table in ("log_offset_state", "committed_offsets", "expirable_offsets"):
        assert rows_by(incremental_lake, table, "group", "topic", "partition") == \
            rows_by(full_lake, table, "group", "topic", "partition"), table
    assert rows_by(full_lake, "committed_offsets", "group", "topic", "partition")[("g", "t", 0)]["committed_offset"] == 50

    # a full refresh is asked for explicitly
    again = {run.model: run for run in runner.run_all(full_refresh=True)}
    assert again["log_offset_state"].mode == "full"


def test_a_result_whose_columns_differ_from_the_yaml_is_refused(spark, tmp_path):
    project = load_project(write_project(tmp_path / "p", {"mismatch_model": "select 1 as y"}))
    runner = ModelRunner(spark, Lake(tmp_path / "lake"), project=project, emit=lambda line: None)
    with pytest.raises(ModelRunError, match=r"missing from the SQL: \['x'\], not declared: \['y'\]"):
        runner.run("mismatch_model")


def test_failing_sql_names_the_model_and_its_file(spark, tmp_path):
    project = load_project(write_project(tmp_path / "p", {"broken_model": "select x from no_such_table"}))
    runner = ModelRunner(spark, Lake(tmp_path / "lake"), project=project, emit=lambda line: None)
    with pytest.raises(ModelRunError, match=r"model broken_model \(silver/broken_model.sql\) failed"):
        runner.run("broken_model")
    assert not runner.lake.exists("broken_model"), "nothing is written for a failed model"
