"""Dagster resources: the cluster connection, the lake and Spark.

Fields left empty fall back, at run time, to `OFFSETS_PLATFORM_*` environment variables
(offsets_platform.settings) and then to the defaults; nothing is read at import time. An empty
bootstrap address means the embedded broker, which the resource starts for the run and stops
after it. Secrets (the SASL password) are never logged or put in asset metadata, and are accepted
only as the name of an environment variable: Dagster stores every run's config in its run history,
so a password typed into the launchpad would be kept there in plain text.
"""

from __future__ import annotations

import os
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Iterator, Optional

from dagster import Config, ConfigurableResource, EnvVar, InitResourceContext
from pydantic import Field, PrivateAttr, field_validator

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.quality import load_great_expectations
from offsets_platform.settings import KafkaConnection, Settings

if TYPE_CHECKING:
    from dagster._core.snap.execution_plan_snapshot import ExecutionStepSnap


class PlainTextSecret(Exception):
    """A secret was given as its value instead of the name of an environment variable.

    Not a ValueError: pydantic would wrap that in a ValidationError that repeats the input,
    i.e. print the password it refuses."""


class SecretFromEnv(Config):
    """A secret kept in an environment variable of the run's process; only the name is in config."""

    env: str = Field(description="the name of the environment variable that holds the secret")

    def value(self, field_name: str) -> str:
        value = os.environ.get(self.env)
        if not value:
            raise SecretNotSet(f"kafka resource: {field_name} names the environment variable {self.env}, "
                               "which is not set in the run's process")
        return value


class SecretNotSet(RuntimeError):
    """The environment variable a secret field names is not set where the run executes."""


class KafkaResource(ConfigurableResource):
    """Connection to the Kafka cluster whose consumer groups are modelled."""

    bootstrap_servers: str = Field(default="", description="host:port[,host:port]; empty = embedded broker")
    security_protocol: str = Field(default="", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: Optional[str] = None
    sasl_username: Optional[str] = None
    sasl_password: Optional[SecretFromEnv] = Field(default=None, description=(
        "only as an environment variable, never as text (Dagster keeps every run's config in its history): "
        "{env: NAME} in the launchpad, EnvVar(\"NAME\") in code; empty = $OFFSETS_PLATFORM_SASL_PASSWORD"))
    ssl_cafile: Optional[str] = None
    ssl_certfile: Optional[str] = None
    ssl_keyfile: Optional[str] = None
    offsets_topic: str = Field(default="", description="the log ingest reads; empty = $OFFSETS_PLATFORM_OFFSETS_TOPIC "
                               "or __consumer_offsets (another name: a regular topic of the same layout, a mirror)")

    _connection: Optional[KafkaConnection] = PrivateAttr(default=None)

    @field_validator("sasl_password", mode="before")
    @classmethod
    def _only_from_the_environment(cls, value):
        if isinstance(value, EnvVar):  # EnvVar("NAME") in code; in run config it arrives as {"env": NAME}
            return SecretFromEnv(env=value.env_var_name)
        if isinstance(value, str):
            raise PlainTextSecret('kafka resource: sasl_password was given as text; give the name of an environment '
                                  'variable that holds it instead: EnvVar("NAME") in code, {env: NAME} in the '
                                  "launchpad. Dagster stores every run's config, so the password would be kept in "
                                  "its run history.")
        return value

    @contextmanager
    def yield_for_execution(self, context: InitResourceContext) -> Iterator["KafkaResource"]:
        settings = Settings.from_env()
        connection = self._merge(settings.kafka)
        with ExitStack() as stack:
            if connection.is_embedded:
                broker = stack.enter_context(EmbeddedBroker(settings.broker_data_dir))
                connection = connection.with_bootstrap(broker.bootstrap_servers)
                context.log.info(f"started the embedded broker at {broker.bootstrap_servers} "
                                 f"(data in {settings.broker_data_dir})")
            self._connection = connection
            yield self

    def _merge(self, from_env: KafkaConnection) -> KafkaConnection:
        """This resource's fields where set, the environment's settings elsewhere."""
        merged = KafkaConnection(**{field.name: getattr(self, field.name) or getattr(from_env, field.name)
                                    for field in fields(KafkaConnection) if field.name != "sasl_password"})
        return replace(merged, sasl_password=self._password() or from_env.sasl_password)

    def _password(self) -> Optional[str]:
        secret = self.sasl_password
        if isinstance(secret, EnvVar):  # outside a run Dagster keeps the EnvVar given in code
            secret = SecretFromEnv(env=secret.env_var_name)
        return secret.value("sasl_password") if secret else None

    def connection(self) -> KafkaConnection:
        """The resolved connection (inside a run)."""
        if self._connection is None:  # called outside a run, e.g. from a test
            self._connection = self._merge(Settings.from_env().kafka)
        return self._connection


class LakeResource(ConfigurableResource):
    """Where the Delta tables live."""

    root: str = Field(default="", description="folder of the lake, or s3://bucket/prefix; empty = "
                      "$OFFSETS_PLATFORM_LAKE_URI, else $OFFSETS_PLATFORM_HOME/lake")

    # One Lake for the whole run, so that the tables it keeps open serve every asset of the run
    # (a refresh reads the same tables many times). Dagster sets a resource up on a copy of its
    # own, once per run in each process that executes it, so no two runs share a Lake.
    _lake: Optional[Lake] = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._lake = self._new_lake()

    def lake(self) -> Lake:
        """The run's lake (a new one when called outside a run, e.g. from a test)."""
        return self._lake if self._lake is not None else self._new_lake()

    def _new_lake(self) -> Lake:
        # knowing the shipped models' tables: the model, quality, report and cleanup assets use them
        return lake_for_models(self.root or Settings.from_env().lake_root)  # a folder or an s3:// URI


# The steps that always use Spark: the models' and the prune's (a source table's check uses it only
# for a table too large to validate in the run's process).
SPARK_STEPS = frozenset({"models", "prune_lake"})


class SparkResource(ConfigurableResource):
    """The SparkSession the models run on (one per run with the in-process executor)."""

    master: str = Field(default="", description="Spark master; empty = $OFFSETS_PLATFORM_SPARK_MASTER or local[*]")
    remote: str = Field(default="", description="Spark Connect endpoint (sc://host:port); overrides master")

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Start what the run's steps will need, in the background, so that it overlaps the steps
        before them (the snapshot and ingest, which wait on Kafka) instead of following them:
        - a run that will execute a step of SPARK_STEPS starts its session: the JVM's start takes
          seconds. The step's own `session()` returns the session once it is up, or fails with
          the reason if starting it failed;
        - a run that will validate a table (a step reporting a Great Expectations check: a
          source table's check, the models' step) imports Great Expectations (3-4 s, mostly scipy
          and pandas), which every run would otherwise do in its first check. Through a Spark
          Connect server that was a fifth of the demo's refresh job."""
        steps = _steps_to_execute(context)
        if any(step.key in SPARK_STEPS for step in steps):
            threading.Thread(target=self._start_early, name="spark-start", daemon=True).start()
        if any(_reports_expectations(step) for step in steps):
            threading.Thread(target=_load_great_expectations_early, name="great-expectations-load",
                             daemon=True).start()

    def _start_early(self) -> None:
        try:
            self.session()
        except Exception:  # noqa: BLE001 - the step's own call raises it again, where it is reported
            pass

    def session(self):
        from offsets_platform.lake.spark import get_spark

        settings = Settings.from_env()
        return get_spark(master=self.master or settings.spark_master, remote=self.remote or settings.spark_remote)


def _load_great_expectations_early() -> None:
    try:
        load_great_expectations()
    except Exception:  # noqa: BLE001 - the first validation raises it again, where it is reported
        pass


def _steps_to_execute(context: InitResourceContext) -> list[ExecutionStepSnap]:
    """The steps the run being set up executes (none outside a run)."""
    run, instance = context.run, context.instance
    if run is None or instance is None or run.execution_plan_snapshot_id is None:
        return []
    steps = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id).steps
    keys = run.step_keys_to_execute
    return [step for step in steps if keys is None or step.key in keys]


def _reports_expectations(step: ExecutionStepSnap) -> bool:
    """Whether the step reports a table's Great Expectations check (not, say, a freshness check)."""
    from offsets_platform_dagster.quality import CHECK_NAME  # here: that module imports this one

    checks = [output.properties.asset_check_key for output in step.outputs if output.properties]
    return any(check is not None and check.name == CHECK_NAME for check in checks)
