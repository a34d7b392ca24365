"""The Dagster definitions load, validate, and the refresh job fills bronze from a real broker."""

import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, EnvVar

from offsets_platform_dagster.definitions import defs
from offsets_platform.codec import encode
from offsets_platform.lake import Lake
from tests.ingest.conftest import mirror_connection, produce  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.fast
def test_every_job_resolves_and_bronze_assets_are_grouped():
    job = defs.resolve_job_def("refresh")
    assert job.executor_def.name == "in_process"
    graph = defs.resolve_asset_graph()
    bronze = {key.to_user_string() for key in graph.get_all_asset_keys()
              if graph.get(key).group_name == "bronze"}
    assert {"offset_commit_records", "group_metadata_records", "group_metadata_members",
            "consumer_group_records", "rejected_records", "offsets_topic_checkpoints"} <= bronze
    for key in graph.get_all_asset_keys():
        assert graph.get(key).description, f"{key} has no description"


def test_dagster_validates_the_workspace():
    dagster = Path(sys.executable).with_name("dagster")
    result = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_ingest_job_ingests_through_dagster(mirror_connection, tmp_path):
    # Hand-made records, so they go to a topic of __consumer_offsets' layout that the kafka
    # resource's offsets_topic names. The ingest job runs the refresh job's bronze assets (the
    # demo runs the whole refresh job).
    records = [(4, encode.offset_commit_key("g", "t", p), encode.offset_commit_value(10 + p, 1_790_000_000_000),
                1_790_000_000_000) for p in range(3)]
    produce(mirror_connection, records)
    lake = Lake(tmp_path / "lake")
    run_config = {"resources": {"kafka": {"config": {"bootstrap_servers": mirror_connection.bootstrap_servers,
                                                     "offsets_topic": mirror_connection.offsets_topic}},
                                "lake": {"config": {"root": str(lake.root)}}}}
    with DagsterInstance.ephemeral() as instance:
        result = defs.resolve_job_def("ingest").execute_in_process(run_config=run_config, instance=instance)
        assert result.success
        materialization = instance.get_latest_materialization_event(AssetKey("offset_commit_records"))
        metadata = materialization.asset_materialization.metadata
        assert metadata["dagster/row_count"].value == 3
        assert metadata["rows_added"].value == 3
        checkpoint = instance.get_latest_materialization_event(AssetKey("offsets_topic_checkpoints"))
        assert checkpoint.asset_materialization.metadata["records_read"].value == 3
    assert sorted(r["offset"] for r in lake.read_arrow("offset_commit_records").to_pylist()) == [10, 11, 12]


def test_without_a_bootstrap_address_the_run_uses_and_stops_the_embedded_broker(tmp_path, monkeypatch):
    import psutil

    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", raising=False)

    def brokers():
        return {p.pid for p in psutil.process_iter(["name", "cmdline"])
                if "kafka.Kafka" in (p.info["cmdline"] or []) and str(tmp_path) in " ".join(p.info["cmdline"] or [])}

    # the ingest job: the part of a refresh that talks to the broker (the demo runs the whole job)
    with DagsterInstance.ephemeral() as instance:
        result = defs.resolve_job_def("ingest").execute_in_process(instance=instance)
    assert result.success
    assert (tmp_path / "home" / "broker" / "server.log").exists()
    # the broker's log is empty, so ingest has nothing to write; every snapshot writes broker_configs
    assert Lake(tmp_path / "home" / "lake").exists("broker_configs")
    assert brokers() == set(), "the embedded broker must be stopped after the run"


@pytest.mark.fast
def test_resource_fields_override_the_environment_field_by_field(monkeypatch):
    from offsets_platform_dagster.resources import KafkaResource

    monkeypatch.setenv("OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", "from-env:9092")
    monkeypatch.setenv("OFFSETS_PLATFORM_SASL_USERNAME", "env-user")
    monkeypatch.setenv("KAFKA_PASSWORD", "pw")
    connection = KafkaResource(sasl_mechanism="PLAIN", sasl_password=EnvVar("KAFKA_PASSWORD")).connection()
    assert (connection.bootstrap_servers, connection.sasl_mechanism, connection.sasl_username) == (
        "from-env:9092", "PLAIN", "env-user")
    assert connection.sasl_password == "pw"
    assert connection.security_protocol == "PLAINTEXT"


@pytest.mark.fast
def test_every_model_is_an_asset_with_its_refs_as_deps_and_its_sql_hash_as_code_version():
    from offsets_platform.models import default_project

    graph = defs.resolve_asset_graph()
    for model in default_project().models:
        node = graph.get(AssetKey(model.name))
        assert node.group_name == model.layer and node.description == model.description
        assert node.code_version == model.code_version
        parents = {key.to_user_string() for key in node.parent_keys}
        assert set(model.refs) | {table for _, table in model.sources} == parents
    checks = {key.asset_key.to_user_string() for key in graph.asset_check_keys}
    assert {m.name for m in default_project().models} | {"rejected_records"} <= checks
    for name in ("refresh", "ingest", "plan_offset_reset", "approve_cleanup", "apply_cleanup"):
        assert defs.resolve_job_def(name).executor_def.name == "in_process"


@pytest.mark.fast
def test_every_column_in_the_ui_has_a_description():
    graph = defs.resolve_asset_graph()
    described = set()
    for key in graph.get_all_asset_keys():
        schema = graph.get(key).metadata.get("dagster/column_schema")
        if schema is None:
            continue
        undescribed = [column.name for column in schema.columns if not column.description]
        assert schema.columns and not undescribed, f"{key.to_user_string()}: {undescribed}"
        described.add(key.to_user_string())
    # models (silver, gold), bronze records, snapshots and cleanup tables alike
    assert {"committed_offsets", "consumer_status", "offset_commit_records", "group_snapshots",
            "cleanup_plans", "cleanup_audit"} <= described


def test_the_approval_job_records_who_approved_and_refuses_an_unknown_plan(tmp_path):
    from datetime import datetime, timedelta, timezone

    from offsets_platform.cleanup.plans import CleanupPlan, PlannedAction, save_plan

    lake = Lake(tmp_path / "lake")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    plan = CleanupPlan("p1", now, now + timedelta(hours=1), "test",
                       (PlannedAction("DeleteGroups", "old-group", None, None, "idle", {"member_count": 0}),))
    save_plan(lake, plan)
    job = defs.resolve_job_def("approve_cleanup")

    def run(plan_id):
        config = {"resources": {"lake": {"config": {"root": str(lake.root)}}}}
        with DagsterInstance.ephemeral() as instance:
            instance.add_dynamic_partitions(job.partitions_def.name, [plan_id])
            return job.execute_in_process(run_config=config, instance=instance, raise_on_error=False,
                                          tags={"offsets_platform/user": "alice"}, partition_key=plan_id)

    assert run("p1").success
    assert [(r["plan_id"], r["approved_by"]) for r in lake.read_arrow("cleanup_approvals").to_pylist()] == [("p1", "alice")]
    assert not run("nope").success


@pytest.mark.fast
def test_the_ingest_job_runs_no_spark_check_and_refresh_runs_them_all():
    # The bronze checks run Great Expectations on Spark: the ingest job, run every few seconds by
    # the demo, stays free of Spark; the refresh job checks every table.
    ingest, refresh = defs.resolve_job_def("ingest"), defs.resolve_job_def("refresh")
    assert not ingest.asset_layer.asset_graph.asset_check_keys
    bronze = set(ingest.asset_layer.asset_graph.get_all_asset_keys())
    checked = {key.asset_key for key in refresh.asset_layer.asset_graph.asset_check_keys}
    assert bronze & checked, "the bronze tables' checks run with the refresh job"
