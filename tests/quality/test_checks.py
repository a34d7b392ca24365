"""The Dagster `expectations` checks on a tiny project: real Delta tables, real Spark, real runs."""

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, asset, build_asset_check_context, materialize

from assets.quality import CHECK_NAME, expectation_checks
from assets.resources import LakeResource, SparkResource
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import table_spec
from offsets_platform.models.project import lake_for_models, load_project

MODEL = "quality_check_offsets"

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


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "silver").mkdir()
    (root / "silver" / "silver.yml").write_text(SILVER_YML)
    (root / "silver" / f"{MODEL}.sql").write_text("select * from {{ source('bronze', 'offset_commit_records') }}")
    (root / "sources.yml").write_text(SOURCES_YML)
    return load_project(root)


@pytest.fixture
def lake(tmp_path, project) -> Lake:
    """A lake that knows this project's model table (the shipped project's are not needed)."""
    return lake_for_models(tmp_path / "lake", project)


@pytest.fixture(scope="module")
def checks(project):
    return {next(iter(c.check_keys)).asset_key.to_user_string(): c for c in expectation_checks(project)}


def offsets(lake: Lake, rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(["group", "committed_offset", "note"], row)) for row in rows],
                                schema=lake.spec(MODEL).schema)


def rejected(count: int) -> pa.Table:
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rows = [{"source_partition": 0, "source_offset": i, "ingest_run_id": "run", "ingested_at": now,
             "reason": "unsupported key version"} for i in range(count)]
    return pa.Table.from_pylist(rows, schema=table_spec("rejected_records").schema)


def run_check(check, lake: Lake):
    context = build_asset_check_context()
    with context.op_execution_context:  # closes the context's resources now, not at interpreter exit
        return check(context, lake=LakeResource(root=str(lake.root)), spark=SparkResource())


def test_one_blocking_check_per_model_and_a_non_blocking_one_for_a_warn_only_source(checks):
    assert sorted(checks) == sorted([MODEL, "rejected_records"])
    model_spec = next(iter(checks[MODEL].check_specs))
    source_spec = next(iter(checks["rejected_records"].check_specs))
    assert (model_spec.key, model_spec.blocking) == (AssetCheckKey(AssetKey(MODEL), CHECK_NAME), True)
    assert (source_spec.key, source_spec.blocking) == (AssetCheckKey(AssetKey("rejected_records"), CHECK_NAME), False)
    assert {"lake", "spark"} <= checks[MODEL].required_resource_keys


def test_the_model_check_passes_on_good_data_and_fails_as_an_error_on_broken_data(checks, lake, spark):
    lake.overwrite(MODEL, offsets(lake, [("g1", 5, "x"), ("g2", -1, "y")]))
    good = run_check(checks[MODEL], lake)
    assert good.passed, good.description
    assert good.metadata["rows_checked"].value == 2
    assert good.metadata["[error] committed_offset >= -1"].value == 0

    lake.overwrite(MODEL, offsets(lake, [("g1", 3, "x"), ("g1", 3, None), (None, 4, None), ("g2", -7, "z")]))
    broken = run_check(checks[MODEL], lake)
    assert not broken.passed and broken.severity == AssetCheckSeverity.ERROR
    assert {key: value.value for key, value in broken.metadata.items()} == {
        "rows_checked": 4, "[error] group is not null": 1, "[error] committed_offset >= -1": 1,
        "[warn] note is not null": 2, "[error] (group, committed_offset) is unique": 2}
    assert broken.description.startswith(f"{MODEL}: 4 of 4 checks failed (3 errors, 1 warnings) on 4 rows")


def test_only_warnings_failing_is_a_warn_result(checks, lake, spark):
    lake.overwrite(MODEL, offsets(lake, [("g1", 5, None)]))
    result = run_check(checks[MODEL], lake)
    assert not result.passed and result.severity == AssetCheckSeverity.WARN

    lake.overwrite("rejected_records", rejected(2))
    source = run_check(checks["rejected_records"], lake)
    assert not source.passed and source.severity == AssetCheckSeverity.WARN
    assert source.metadata["[warn] row count <= 0"].value == 2


def test_an_empty_bronze_table_passes_its_check(checks, lake, spark):
    assert run_check(checks["rejected_records"], lake).passed


def test_in_a_run_a_failed_error_check_blocks_the_models_downstream(checks, lake, spark):
    written = {}

    @asset(name=MODEL)
    def write_model():
        lake.overwrite(MODEL, written["rows"])

    @asset(deps=[MODEL])
    def downstream_report():
        return None

    resources = {"lake": LakeResource(root=str(lake.root)), "spark": SparkResource()}
    written["rows"] = offsets(lake, [("g1", 5, "x")])
    result = materialize([write_model, downstream_report, checks[MODEL]], resources=resources)
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed and result.success
    assert {e.asset_key for e in result.get_asset_materialization_events()} == {
        AssetKey(MODEL), AssetKey("downstream_report")}

    written["rows"] = offsets(lake, [(None, 5, "x")])
    result = materialize([write_model, downstream_report, checks[MODEL]], resources=resources, raise_on_error=False)
    [evaluation] = result.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR
    assert {e.asset_key for e in result.get_asset_materialization_events()} == {AssetKey(MODEL)}
