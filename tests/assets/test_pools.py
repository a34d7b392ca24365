"""Ingest and the cleanup steps run one at a time in Dagster: the ingest asset is in the pool
"ingest", the cleanup ops and the plan asset in the pool "cleanup", and the instance settings the
project ships limit every pool to one at a time (and turn Dagster's telemetry off)."""

import shutil
from pathlib import Path

import pytest
from dagster import DagsterInstance

from offsets_platform_dagster.bronze import INGEST_POOL
from offsets_platform_dagster.cleanup import CLEANUP_POOL
from offsets_platform_dagster.definitions import defs

pytestmark = pytest.mark.fast  # make test-fast

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "dagster.yaml"


def test_the_plan_asset_and_the_approve_and_apply_ops_are_in_the_cleanup_pool():
    assert CLEANUP_POOL == "cleanup"
    for job in ("apply_cleanup", "approve_cleanup", "plan_offset_reset"):
        assert {node.definition.pool for node in defs.resolve_job_def(job).graph.nodes} == {CLEANUP_POOL}, job
    assert defs.resolve_assets_def("cleanup_plans").op.pool == CLEANUP_POOL


def test_the_ingest_asset_is_in_the_ingest_pool():
    assert INGEST_POOL == "ingest"
    assert defs.resolve_assets_def("offset_commit_records").op.pool == INGEST_POOL


def test_the_shipped_instance_settings_let_one_step_of_each_pool_run_at_a_time(tmp_path):
    shutil.copy(SHIPPED, tmp_path / "dagster.yaml")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        for pool in (INGEST_POOL, CLEANUP_POOL):
            info = instance.event_log_storage.get_concurrency_info(pool)
            assert (info.limit, info.using_default_limit) == (1, True), pool


def test_the_shipped_instance_settings_turn_telemetry_off(tmp_path):
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.telemetry_enabled, "Dagster's default, which the shipped settings change"
    shutil.copy(SHIPPED, tmp_path / "dagster.yaml")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert not instance.telemetry_enabled
