"""Ephemeral (staging) models: inlined where ref'd, never run, no table, and what they read and
their code count as their users'."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models import ModelRunner, load_project
from offsets_platform.models.project import model_table_specs
from offsets_platform.models.render import RenderError, new_rows_view, render
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import rows_by
from tests.models.test_project import write_project

STAGING_SQL = """select
    `group` as group_id,
    topic,
    `partition` as partition_id,
    `offset` as committed_offset
from {{ source('bronze', 'offset_commit_records') }}
where not tombstone
"""
STAGING_YML = """models:
  - name: stg_commits
    materialized: ephemeral
    columns:
      - {name: group_id, data_type: string}
      - {name: topic, data_type: string}
      - {name: partition_id, data_type: int}
      - {name: committed_offset, data_type: bigint}
"""
LATEST_SQL = """select group_id, topic, partition_id, max(committed_offset) as committed_offset
from {{ ref('stg_commits', new_only=true) }} as c
group by group_id, topic, partition_id
"""
COUNT_SQL = "select count(*) as commits from {{ ref('stg_commits') }}"
SILVER_YML = """models:
  - name: latest_commits
    materialized: incremental
    unique_key: [group_id, topic, partition_id]
    columns:
      - {name: group_id, data_type: string}
      - {name: topic, data_type: string}
      - {name: partition_id, data_type: int}
      - {name: committed_offset, data_type: bigint}
  - name: commit_count
    columns: [{name: commits, data_type: bigint}]
"""


def staged_project(root: Path, staging_sql: str = STAGING_SQL) -> Path:
    write_project(root, {"stg_commits": staging_sql}, layer="staging", yml=STAGING_YML)
    return write_project(root, {"latest_commits": LATEST_SQL, "commit_count": COUNT_SQL}, yml=SILVER_YML)


def test_a_ref_to_an_ephemeral_model_renders_its_sql_as_a_subquery_in_the_referencing_context():
    ephemerals = {"stg_commits": STAGING_SQL}
    full = render("latest_commits", LATEST_SQL, ephemerals=ephemerals)
    assert "from (\nselect\n    `group` as group_id" in full.sql
    assert "from offset_commit_records\nwhere not tombstone\n) as c" in full.sql
    assert full.sources == [("bronze", "offset_commit_records")] and full.new_only_sources == []

    incremental = render("latest_commits", LATEST_SQL, incremental=True, ephemerals=ephemerals)
    assert f"from {new_rows_view('latest_commits', 'offset_commit_records')}\n" in incremental.sql
    assert incremental.new_only_sources == ["offset_commit_records"]

    # without new_only the ephemeral model reads its sources whole, even in an incremental run
    whole = render("commit_count", COUNT_SQL, incremental=True, ephemerals=ephemerals)
    assert whole.new_only_sources == [] and "from offset_commit_records\n" in whole.sql


def test_new_only_on_a_ref_to_a_model_with_a_table_is_an_error():
    with pytest.raises(RenderError, match="needs an ephemeral model"):
        render("m", "select * from {{ ref('committed_offsets', new_only=true) }}")


def test_users_of_an_ephemeral_model_take_in_its_sources_and_code(tmp_path):
    project = load_project(staged_project(tmp_path / "one"))
    assert [m.name for m in project.models] == ["commit_count", "latest_commits"]
    assert set(project.ephemeral) == {"stg_commits"}
    latest = project.model("latest_commits")
    assert latest.refs == () and latest.inlines == ("stg_commits",)
    assert latest.sources == (("bronze", "offset_commit_records"),)
    assert set(model_table_specs(project)) == {"commit_count", "latest_commits"}  # no table for staging
    assert [m.name for m in project.downstream({"stg_commits"})] == ["commit_count", "latest_commits"]
    with pytest.raises(KeyError, match="ephemeral"):
        project.model("stg_commits")

    same = load_project(staged_project(tmp_path / "two")).model("latest_commits")
    changed = load_project(staged_project(tmp_path / "three", STAGING_SQL.replace("not tombstone", "true")))
    assert latest.code_version == same.code_version != changed.model("latest_commits").code_version


def test_variables_of_an_ephemeral_model_are_its_users(tmp_path):
    with_var = STAGING_SQL.replace("where not tombstone", "where `offset` >= {{ var('min_offset') }}")
    # an incremental user records their values too: a change makes its next run full
    assert load_project(staged_project(tmp_path / "p", with_var)).model("latest_commits").variables == ("min_offset",)
    write_project(tmp_path / "q", {"stg_commits": with_var}, layer="staging", yml=STAGING_YML)
    write_project(tmp_path / "q", {"commit_count": COUNT_SQL},
                  yml="models:\n  - name: commit_count\n    columns: [{name: commits, data_type: bigint}]\n")
    assert load_project(tmp_path / "q").model("commit_count").variables == ("min_offset",)


def _commits(builder: BronzeBuilder, start_hour: int) -> None:
    for hour in range(start_hour, start_hour + 3):
        builder.commit("g", "t", hour % 2, hour * 10, at(hours=hour))
    builder.offset_tombstone("g", "t", 0, at(hours=start_hour + 3))


def test_an_incremental_user_of_an_ephemeral_model_reads_only_new_files_and_no_table_is_written(spark, tmp_path):
    project = load_project(staged_project(tmp_path / "project"))
    lake = Lake(tmp_path / "incremental", model_tables=model_table_specs(project))
    first_round = BronzeBuilder()
    _commits(first_round, 0)
    first_round.write(lake)
    runner = ModelRunner(spark, lake, project=project, emit=lambda line: None)
    assert {run.model: run.mode for run in runner.run_all()} == {"commit_count": "full", "latest_commits": "full"}

    second_round = BronzeBuilder()
    second_round._next_offset = first_round._next_offset
    _commits(second_round, 3)
    second_round.write(lake)
    second = {run.model: run for run in runner.run_all()}
    assert second["latest_commits"].mode == "incremental"
    assert second["latest_commits"].new_files == {"offset_commit_records": 1}
    assert second["latest_commits"].rows_written == 2  # the new commits touched t-0 and t-1

    full_lake = Lake(tmp_path / "full", model_tables=model_table_specs(project))
    for part in (first_round, second_round):
        part.write(full_lake)
    ModelRunner(spark, full_lake, project=project, emit=lambda line: None).run_all()
    key = ("group_id", "topic", "partition_id")
    assert rows_by(lake, "latest_commits", *key) == rows_by(full_lake, "latest_commits", *key)
    assert rows_by(lake, "commit_count", "commits") == rows_by(full_lake, "commit_count", "commits") != {}
    assert not [path for path in lake.root.rglob("stg_commits*")]  # never written


def test_a_changed_ephemeral_model_reruns_its_users(spark, tmp_path):
    project = load_project(staged_project(tmp_path / "one"))
    lake = Lake(tmp_path / "lake", model_tables=model_table_specs(project))
    builder = BronzeBuilder()
    _commits(builder, 0)
    builder.write(lake)
    ModelRunner(spark, lake, project=project, emit=lambda line: None).run_all()
    again = ModelRunner(spark, lake, project=project, emit=lambda line: None).run_all()
    assert {run.mode for run in again} == {"unchanged"}
    changed = load_project(staged_project(tmp_path / "two", STAGING_SQL.replace("not tombstone", "true")))
    runs = {run.model: run for run in ModelRunner(spark, lake, project=changed, emit=lambda line: None).run_all()}
    assert runs["latest_commits"].mode == runs["commit_count"].mode == "full"
    assert rows_by(lake, "commit_count", "commits") == {4: {"commits": 4}}  # the tombstone counted now


def test_every_shipped_staging_model_produces_its_declared_columns(spark, tmp_path):
    # a staging model never runs on its own: render it as a model's subquery over the empty bronze
    # tables and compare what Spark makes of it with its YAML
    from pyspark.sql.pandas.types import from_arrow_schema

    from offsets_platform.models import default_project

    project = default_project()
    lake = Lake(tmp_path / "lake")
    for name, model in project.ephemeral.items():
        for _, table in model.sources:
            lake.spark_read(spark, table).createOrReplaceTempView(table)
        context = render(f"check_{name}", f"select * from {{{{ ref('{name}') }}}} as s",
                         ephemerals=project.ephemeral_sql())
        produced = spark.sql(context.sql).schema
        declared = from_arrow_schema(model.table_spec().schema)
        assert [(f.name, f.dataType) for f in produced] == [(f.name, f.dataType) for f in declared], name
