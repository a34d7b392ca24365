"""A run that will execute the models' step starts Spark as its resources are set up, in the
background; other runs that use the resource leave Spark to the step that needs it. A run that
will validate a table imports Great Expectations the same way."""

from __future__ import annotations

import threading

import pytest
from dagster import (AssetCheckResult, AssetCheckSpec, AssetSpec, DagsterInstance, MaterializeResult, asset, asset_check,
                     job, materialize, multi_asset, op)

from offsets_platform_dagster import resources
from offsets_platform_dagster.quality import CHECK_NAME
from offsets_platform_dagster.resources import SparkResource

pytestmark = pytest.mark.fast


class RecordingSpark(SparkResource):
    """Records in which thread a session was asked for, instead of starting one."""

    def session(self):
        asked.append(threading.current_thread().name)


asked: list[str] = []


@op(name="models", required_resource_keys={"spark"})
def models_step(context) -> None:
    pass


@op(required_resource_keys={"spark"})
def bronze_check(context) -> None:  # uses Spark only for a large table
    pass


@job(resource_defs={"spark": RecordingSpark()})
def refresh():
    bronze_check()
    models_step()


@job(resource_defs={"spark": RecordingSpark()})
def checks_only():
    bronze_check()


def _started_early(run) -> list[str]:
    asked.clear()
    assert run().success
    for thread in threading.enumerate():
        if thread.name == "spark-start":
            thread.join(timeout=10)
    return list(asked)


def test_only_a_run_that_executes_the_models_starts_spark_early():
    instance = DagsterInstance.ephemeral()
    assert _started_early(lambda: refresh.execute_in_process(instance=instance)) == ["spark-start"]
    assert _started_early(lambda: checks_only.execute_in_process(instance=instance)) == []
    # a run of the refresh job that executes only the check
    assert _started_early(lambda: refresh.execute_in_process(instance=instance, op_selection=["bronze_check"])) == []


# Great Expectations, imported in the background by a run that will validate a table: a step that
# reports a table's `expectations` check (a source table's check, or the models' multi-asset).
loaded: list[str] = []


@pytest.fixture
def recorded_loads(monkeypatch):
    monkeypatch.setattr(resources, "load_great_expectations", lambda: loaded.append(threading.current_thread().name))
    loaded.clear()
    yield loaded


@asset(required_resource_keys={"spark"})
def source_table() -> None:
    pass


@asset_check(asset=source_table, name=CHECK_NAME, required_resource_keys={"spark"})
def source_table_expectations() -> AssetCheckResult:
    return AssetCheckResult(passed=True)


@asset_check(asset=source_table, name="freshness", required_resource_keys={"spark"})
def source_table_freshness() -> AssetCheckResult:
    return AssetCheckResult(passed=True)


@multi_asset(specs=[AssetSpec("model_table")], check_specs=[AssetCheckSpec(CHECK_NAME, asset="model_table")],
             required_resource_keys={"spark"})
def models_with_checks():
    yield MaterializeResult(asset_key="model_table")
    yield AssetCheckResult(asset_key="model_table", check_name=CHECK_NAME, passed=True)


def _loaded_in_background(*definitions) -> list[str]:
    assert materialize(list(definitions), resources={"spark": RecordingSpark()},
                       instance=DagsterInstance.ephemeral()).success
    for thread in threading.enumerate():
        if thread.name == "great-expectations-load":
            thread.join(timeout=10)
    return list(loaded)


def test_a_run_that_validates_a_table_loads_great_expectations_in_the_background(recorded_loads):
    assert _loaded_in_background(source_table, source_table_expectations) == ["great-expectations-load"]
    loaded.clear()
    assert _loaded_in_background(models_with_checks) == ["great-expectations-load"]


def test_a_run_without_a_table_s_expectations_does_not_load_them(recorded_loads):
    assert _loaded_in_background(source_table, source_table_freshness) == []
    assert _loaded_in_background(source_table) == []
    assert _started_early(lambda: refresh.execute_in_process(instance=DagsterInstance.ephemeral())) == ["spark-start"]
    assert loaded == []
