"""A run that will execute the models' step starts Spark as its resources are set up, in the
background; other runs that use the resource leave Spark to the step that needs it."""

from __future__ import annotations

import threading

import pytest
from dagster import DagsterInstance, job, op

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
