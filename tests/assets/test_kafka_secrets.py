"""The kafka resource takes its password only from an environment variable, so that no run's
stored config holds it: Dagster keeps every run's config, and shows it in the run's page."""

import pytest
from dagster import (DagsterInstance, DagsterInvalidConfigError, Definitions, EnvVar, OpExecutionContext,
                     in_process_executor, job, op, serialize_value)

from offsets_platform_dagster.definitions import defs
from offsets_platform_dagster.resources import KafkaResource, PlainTextSecret

pytestmark = pytest.mark.fast  # make test-fast

SECRET = "s3cret-typed-in-launchpad"
VARIABLE = "OFFSETS_PLATFORM_TEST_KAFKA_PASSWORD"


@op
def connect(context: OpExecutionContext, kafka: KafkaResource) -> None:
    assert kafka.connection().sasl_password == SECRET  # compared, never logged


@job(executor_def=in_process_executor)
def uses_kafka():
    connect()


def _stored_text(instance: DagsterInstance) -> str:
    """Everything the instance keeps of its runs: their config, job snapshots and event logs."""
    texts = []
    for run in instance.get_runs():
        texts.append(serialize_value(run.run_config))
        texts.append(serialize_value(instance.get_job_snapshot(run.job_snapshot_id)))
        texts += [serialize_value(entry) for entry in instance.all_logs(run.run_id)]
    return "\n".join(texts)


def test_a_password_given_as_text_in_code_is_refused_without_repeating_it():
    with pytest.raises(PlainTextSecret) as refused:
        KafkaResource(sasl_mechanism="PLAIN", sasl_password=SECRET)
    message = str(refused.value)
    assert message.startswith("kafka resource: sasl_password was given as text; give the name of an environment "
                              'variable that holds it instead: EnvVar("NAME") in code, {env: NAME} in the launchpad.')
    assert SECRET not in message


def test_a_password_typed_into_the_launchpad_is_refused_before_a_run_is_stored(tmp_path):
    run_config = {"resources": {"kafka": {"config": {"bootstrap_servers": "127.0.0.1:9", "sasl_mechanism": "PLAIN",
                                                     "sasl_password": SECRET}},
                                "lake": {"config": {"root": str(tmp_path / "lake")}}}}
    with DagsterInstance.ephemeral() as instance:
        with pytest.raises(DagsterInvalidConfigError) as refused:
            defs.resolve_job_def("apply_cleanup").execute_in_process(run_config=run_config, instance=instance)
        assert instance.get_runs() == []
    message = str(refused.value)
    assert "root:resources:kafka:config:sasl_password must be dict" in message and "env" in message
    assert SECRET not in message
    field = defs.resolve_job_def("apply_cleanup").resource_defs["kafka"].config_schema.config_type.fields[
        "sasl_password"]
    assert field.description.startswith("only as an environment variable, never as text")


def test_a_password_from_an_environment_variable_works_and_no_stored_run_holds_it(monkeypatch):
    monkeypatch.setenv(VARIABLE, SECRET)
    kafka_config = {"bootstrap_servers": "127.0.0.1:9", "sasl_mechanism": "PLAIN"}
    with DagsterInstance.ephemeral() as instance:
        # in the launchpad: {env: NAME}
        launched = Definitions(jobs=[uses_kafka], resources={"kafka": KafkaResource()}).resolve_job_def(
            "uses_kafka").execute_in_process(instance=instance, run_config={"resources": {"kafka": {"config": {
                **kafka_config, "sasl_password": {"env": VARIABLE}}}}})
        # in code: EnvVar("NAME")
        coded = Definitions(jobs=[uses_kafka], resources={"kafka": KafkaResource(
            **kafka_config, sasl_password=EnvVar(VARIABLE))}).resolve_job_def("uses_kafka").execute_in_process(
            instance=instance)
        assert launched.success and coded.success
        assert instance.get_run_by_id(launched.run_id).run_config["resources"]["kafka"]["config"][
            "sasl_password"] == {"env": VARIABLE}
        stored = _stored_text(instance)
    assert VARIABLE in stored and SECRET not in stored
