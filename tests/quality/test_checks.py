"""The Dagster `expectations` checks on a tiny project: real Delta tables, real Spark, real runs.

A model table's check runs in the models' step on the table just written; a source table's check
is a step of its own."""

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, AssetSelection, build_asset_check_context, materialize

from offsets_platform_dagster.models import ModelsResource, model_assets
from offsets_platform_dagster.quality import CHECK_NAME, expectation_checks
from offsets_platform_dagster.resources import LakeResource, SparkResource
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import table_spec
from offsets_platform.models.project import lake_for_models, load_project

MODEL = "quality_check_offsets"
DOWNSTREAM = "quality_check_groups"

SILVER_YML = f"""
models:
  - name: {MODEL}
    description: offsets, for the quality tests
    columns:
      - {{name: group, data_type: string, tests: [not_null]}}
      - {{name: committed_offset, data_type: bigint, tests: [{{range: {{min: -1}}}}]}}
      - {{name: note, data_type: string, tests: [{{not_null: {{severity: warn}}}}]}}
    tests:
      - unique_combination: {{columns: [group, committed_offset]}}
  - name: {DOWNSTREAM}
    description: groups of the offsets above
    columns:
      - {{name: group, data_type: string}}
"""
SOURCES_YML = """
sources:
  - name: bronze
    tables:
      - name: offset_commit_records
      - name: rejected_records
        tests:
          - row_count: {max: 0, severity: warn}
"""
MODEL_SQL = ("select `group`, `offset` as committed_offset, metadata as note "
             "from {{ source('bronze', 'offset_commit_records') }}")
DOWNSTREAM_SQL = f"select distinct `group` from {{{{ ref('{MODEL}') }}}}"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "silver").mkdir()
    (root / "silver" / "silver.yml").write_text(SILVER_YML)
    (root / "silver" / f"{MODEL}.sql").write_text(MODEL_SQL)
    (root / "silver" / f"{DOWNSTREAM}.sql").write_text(DOWNSTREAM_SQL)
    (root / "sources.yml").write_text(SOURCES_YML)
    return load_project(root)


@pytest.fixture
def lake(tmp_path, project) -> Lake:
    """A lake that knows this project's model tables (the shipped project's are not needed)."""
    return lake_for_models(tmp_path / "lake", project)


def commits(rows: list[tuple]) -> pa.Table:
    """Bronze offset commits of (group, offset, metadata)."""
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return pa.Table.from_pylist([
        {"source_partition": 0, "source_offset": i, "ingest_run_id": "run", "ingested_at": now,
         "group": group, "topic": "t", "partition": 0, "offset": offset, "metadata": note}
        for i, (group, offset, note) in enumerate(rows)], schema=table_spec("offset_commit_records").schema)


def rejected(count: int) -> pa.Table:
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rows = [{"source_partition": 0, "source_offset": i, "ingest_run_id": "run", "ingested_at": now,
             "reason": "unsupported key version"} for i in range(count)]
    return pa.Table.from_pylist(rows, schema=table_spec("rejected_records").schema)


def refresh(project, lake: Lake, selection=None):
    """The models' step of this project as Dagster runs it."""
    resources = {"lake": LakeResource(root=str(lake.root)), "spark": SparkResource(master="local[2]"),
                 "models": ModelsResource()}
    return materialize([model_assets(project)], resources=resources, selection=selection, raise_on_error=False)


def evaluations(result) -> dict[str, object]:
    return {e.asset_key.to_user_string(): e for e in result.get_asset_check_evaluations()}


def materialized(result) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


def run_source_check(check, lake: Lake):
    context = build_asset_check_context()
    with context.op_execution_context:  # closes the context's resources now, not at interpreter exit
        return check(context, lake=LakeResource(root=str(lake.root)), spark=SparkResource())


@pytest.mark.fast
def test_one_blocking_check_per_model_table_with_tests_and_a_non_blocking_one_for_a_warn_only_source(project):
    [model_check] = model_assets(project).check_specs
    [source_check] = [spec for check in expectation_checks(project) for spec in check.check_specs]
    assert (model_check.key, model_check.blocking) == (AssetCheckKey(AssetKey(MODEL), CHECK_NAME), True)
    assert (source_check.key, source_check.blocking) == (AssetCheckKey(AssetKey("rejected_records"), CHECK_NAME),
                                                         False)


def test_in_the_models_step_a_good_table_passes_and_feeds_the_models_downstream(project, lake, spark):
    lake.append("offset_commit_records", commits([("g1", 5, "x"), ("g2", -1, "y")]))
    result = refresh(project, lake)
    assert result.success
    assert materialized(result) == {MODEL, DOWNSTREAM}
    check = evaluations(result)[MODEL]
    assert check.passed
    assert check.metadata["rows_checked"].value == 2
    assert check.metadata["[error] committed_offset >= -1"].value == 0


def test_a_failed_error_check_blocks_the_models_downstream_in_the_same_step(project, lake, spark):
    lake.append("offset_commit_records", commits([("g1", 3, "x"), ("g1", 3, None), (None, 4, None), ("g2", -7, "z")]))
    result = refresh(project, lake)
    assert not result.success, "a failed blocking check fails the step"
    assert materialized(result) == {MODEL}
    broken = evaluations(result)[MODEL]
    assert not broken.passed and broken.severity == AssetCheckSeverity.ERROR
    assert {key: value.value for key, value in broken.metadata.items()} == {
        "rows_checked": 4, "[error] group is not null": 1, "[error] committed_offset >= -1": 1,
        "[warn] note is not null": 2, "[error] (group, committed_offset) is unique": 2}
    assert broken.description.startswith(f"{MODEL}: 4 of 4 checks failed (3 errors, 1 warnings) on 4 rows")
    assert not lake.exists(DOWNSTREAM)


def test_only_warnings_failing_is_a_warn_result_that_blocks_nothing(project, lake, spark):
    lake.append("offset_commit_records", commits([("g1", 5, None)]))
    result = refresh(project, lake)
    assert result.success and materialized(result) == {MODEL, DOWNSTREAM}
    check = evaluations(result)[MODEL]
    assert not check.passed and check.severity == AssetCheckSeverity.WARN


def test_a_check_selected_without_its_model_validates_the_table_as_it_is(project, lake, spark):
    lake.append("offset_commit_records", commits([(None, 5, "x")]))
    assert refresh(project, lake, selection=AssetSelection.assets(MODEL).without_checks()).success
    result = refresh(project, lake, selection=AssetSelection.checks(AssetCheckKey(AssetKey(MODEL), CHECK_NAME)))
    assert materialized(result) == set()
    check = evaluations(result)[MODEL]
    assert not check.passed and check.metadata["[error] group is not null"].value == 1


@pytest.mark.fast
def test_source_checks_warn_on_rejected_records_and_pass_on_an_empty_table(project, lake):
    checks = {next(iter(c.check_keys)).asset_key.to_user_string(): c for c in expectation_checks(project)}
    assert run_source_check(checks["rejected_records"], lake).passed
    lake.overwrite("rejected_records", rejected(2))
    source = run_source_check(checks["rejected_records"], lake)
    assert not source.passed and source.severity == AssetCheckSeverity.WARN
    assert source.metadata["[warn] row count <= 0"].value == 2
