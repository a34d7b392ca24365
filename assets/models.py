"""The dbt-like models as one Dagster multi-asset: an asset per model (dependencies from its refs
and sources, description and columns from the layer's YAML, code version from a hash of its SQL)
and a Great Expectations check per model table that declares tests.

The way dagster-dbt turns a manifest into assets, without dbt. One step runs the selected models
with the same `ModelRunner.iter_runs` as the command line and the benchmarks: on one SparkSession,
with each source pinned to one version for the whole refresh, two models at a time. Each table is
validated as soon as it is written, in the same step, and its check result reported with its
materialization; a table that fails an error-severity check feeds none of the models downstream
of it in the step, and Dagster then fails the step, which stops the assets after it. Selecting
some models, or only a check, in the UI runs just those.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
import json
from datetime import datetime, timezone
from typing import Optional

from dagster import (AssetCheckSpec, AssetExecutionContext, AssetKey, AssetsDefinition, AssetSpec,
                     ConfigurableResource, InitResourceContext, MaterializeResult, MetadataValue, TableColumn,
                     TableSchema, multi_asset)
from pydantic import Field, PrivateAttr

from offsets_platform_dagster.key_numbers import KEY_NUMBER_INPUTS, key_numbers
from offsets_platform_dagster.quality import CHECK_NAME, check_result, suite_description
from offsets_platform_dagster.resources import LakeResource, SparkResource
from offsets_platform_dagster.table_specs import table_metadata
from offsets_platform.lake import Lake
from offsets_platform.models import Model, ModelProject, ModelRun, ModelRunner, default_variables
from offsets_platform.quality import SuiteResult, specs_for_model, validate_table


class ModelsResource(ConfigurableResource):
    """The variables of the models; `as_of` ("now" in the rules) is fixed once per run."""

    offsets_retention_minutes_fallback: int = Field(
        default=10080, description="offsets.retention.minutes when the broker does not expose it")
    watched_groups_json: str = Field(
        default="{}", description='KIP-490 watch list, e.g. {"invoices": ["billing"]}; on unlisted topics a '
                                  "group watches the partitions where it holds an offset")
    metrics_bucket_minutes: int = Field(default=60, description="width of a coordinator_metrics bucket")
    consumer_status_window: int = Field(
        default=10, description="observations per partition that consumer_status judges (Burrow's intervals)")
    consumer_status_min_distance_seconds: int = Field(
        default=60, description="at most one consumer_status observation per partition per this many seconds "
                                "(Burrow's min-distance)")

    _as_of: Optional[datetime] = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._as_of = datetime.now(timezone.utc)

    def runner(self, spark, lake, emit, project: Optional[ModelProject] = None) -> ModelRunner:
        variables = default_variables(self._as_of)
        variables.update(offsets_retention_minutes_fallback=self.offsets_retention_minutes_fallback,
                         watched_groups=json.loads(self.watched_groups_json),
                         metrics_bucket_minutes=self.metrics_bucket_minutes,
                         consumer_status_window=self.consumer_status_window,
                         consumer_status_min_distance_seconds=self.consumer_status_min_distance_seconds)
        return ModelRunner(spark, lake, project=project, variables=variables, emit=emit)


def model_assets(project: ModelProject) -> AssetsDefinition:
    """The multi-asset of every model of `project`, with the check of each model that declares tests."""
    specs = {model.name: specs_for_model(model) for model in project.models}
    check_specs = [AssetCheckSpec(CHECK_NAME, asset=name, blocking=any(spec.is_error for spec in tests),
                                  description=suite_description(tests))
                   for name, tests in specs.items() if tests]

    @multi_asset(name="models", specs=[_model_spec(model) for model in project.models], check_specs=check_specs,
                 can_subset=True, description="Refresh the selected models, each table validated once written.")
    def run_models(context: AssetExecutionContext, spark: SparkResource, lake: LakeResource, models: ModelsResource):
        runner = models.runner(spark.session(), lake.lake(), context.log.info, project)
        the_lake = runner.lake  # knows the project's model tables
        selected = [key.to_user_string() for key in context.selected_asset_keys]
        to_check = {key.asset_key.to_user_string() for key in context.selected_asset_check_keys}
        results: dict[str, SuiteResult] = {}

        def validated(run: ModelRun) -> bool:
            """Whether the models downstream of the run's table may read it."""
            if run.model not in to_check:
                return True
            results[run.model] = validate_table(the_lake, spark.session, run.model, specs[run.model], run.rows_in_table)
            context.log.info(results[run.model].summary())
            return not results[run.model].failed_errors

        # A table's materialization carries its key numbers, which read other models' tables too
        # (losses leave out the offsets expirable_offsets calls abandoned): it waits until those
        # are written in this step, so that the UI gives the answer the command line and the
        # report give of the same tables. Dagster wants a multi-asset's outputs in the order of
        # their dependencies, so the models downstream of a waiting one wait too.
        in_step = set(selected)
        ended: set[str] = set()  # ran or blocked in this step
        shown: set[str] = set()  # materialized, or blocked (never materialized)
        waiting: list[tuple[ModelRun, Optional[SuiteResult]]] = []

        def ready(run: ModelRun) -> bool:
            return (set(project.model(run.model).refs) & in_step <= shown
                    and KEY_NUMBER_INPUTS.get(run.model, set()) & in_step <= ended)

        def release():
            while (run_and_result := next((item for item in waiting if ready(item[0])), None)) is not None:
                waiting.remove(run_and_result)
                run, result = run_and_result
                shown.add(run.model)
                yield _materialization(the_lake, run)
                if result is not None:
                    yield check_result(result, asset_key=run.model)

        for run in runner.iter_runs(select=selected, gate=validated):
            ended.add(run.model)
            if run.mode == "blocked":
                shown.add(run.model)  # not materialized: Dagster shows it skipped
            else:
                waiting.append((run, results.pop(run.model, None)))
            yield from release()
        # checks selected without their model: the table as it is
        for name in sorted(to_check - set(selected)):
            result = validate_table(the_lake, spark.session, name, specs[name])
            context.log.info(result.summary())
            yield check_result(result, asset_key=name)

    return run_models


def _model_spec(model: Model) -> AssetSpec:
    return AssetSpec(
        key=model.name,
        group_name=model.layer,
        description=model.description,
        code_version=model.code_version,
        deps=[AssetKey(table) for _, table in model.sources] + [AssetKey(ref) for ref in model.refs],
        kinds={"spark", "delta", "sql"},
        # not materialized when a table upstream of it failed an error-severity check
        skippable=True,
        metadata={
            "grain": model.grain,
            "in Kafka's terms": model.in_kafka,
            "materialized": model.materialized + (f" (merge on {', '.join(model.unique_key)})"
                                                  if model.materialized == "incremental" else ""),
            "sql": MetadataValue.path(f"dbt_like_sql/{model.layer}/{model.sql_path.name}"),
            "dagster/column_schema": TableSchema(columns=[
                TableColumn(c.name, c.data_type, description=c.description or None) for c in model.columns]),
        },
    )


def _materialization(lake: Lake, run: ModelRun) -> MaterializeResult:
    return MaterializeResult(asset_key=run.model, metadata={
        **table_metadata(lake, run.model, rows=run.rows_in_table),
        "mode": run.mode,
        "rows_written": run.rows_written,
        "seconds": round(run.seconds, 2),
        **key_numbers(lake, run.model),
    })
