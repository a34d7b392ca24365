"""One Dagster asset per dbt-like model: dependencies from its refs and sources, its description
and columns from the layer's YAML, its code version from a hash of its SQL.

The way dagster-dbt turns a manifest into assets, without dbt: the models run on the run's one
SparkSession (in-process executor) and write Delta through the lake.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
import json
from datetime import datetime, timezone
from typing import Optional

from dagster import (AssetExecutionContext, AssetKey, AssetsDefinition, ConfigurableResource, InitResourceContext,
                     MaterializeResult, MetadataValue, TableColumn, TableSchema, asset)
from pydantic import Field, PrivateAttr

from assets.key_numbers import key_numbers
from assets.resources import LakeResource, SparkResource
from assets.table_specs import table_metadata
from offsets_platform.models import Model, ModelProject, ModelRunner, default_variables


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

    def runner(self, spark, lake, emit) -> ModelRunner:
        variables = default_variables(self._as_of)
        variables.update(offsets_retention_minutes_fallback=self.offsets_retention_minutes_fallback,
                         watched_groups=json.loads(self.watched_groups_json),
                         metrics_bucket_minutes=self.metrics_bucket_minutes,
                         consumer_status_window=self.consumer_status_window,
                         consumer_status_min_distance_seconds=self.consumer_status_min_distance_seconds)
        return ModelRunner(spark, lake, variables=variables, emit=emit)


def model_assets(project: ModelProject) -> list[AssetsDefinition]:
    return [_model_asset(model) for model in project.models]


def _model_asset(model: Model) -> AssetsDefinition:
    deps = [AssetKey(table) for _, table in model.sources] + [AssetKey(ref) for ref in model.refs]

    @asset(
        name=model.name,
        group_name=model.layer,
        description=model.description,
        code_version=model.code_version,
        deps=deps,
        kinds={"spark", "delta", "sql"},
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
    def _run_model(context: AssetExecutionContext, spark: SparkResource, lake: LakeResource,
                   models: ModelsResource) -> MaterializeResult:
        the_lake = lake.lake()
        run = models.runner(spark.session(), the_lake, context.log.info).run(model.name)
        if run.mode == "unchanged":
            context.log.info(f"{model.name}: its SQL, inputs and variables are as at its last run; table kept")
        else:
            context.log.info(f"{model.name}: {run.mode} run, {run.rows_written:,} rows written in {run.seconds:.1f} s")
        return MaterializeResult(metadata={
            **table_metadata(the_lake, model.name),
            "mode": run.mode,
            "rows_written": run.rows_written,
            "seconds": round(run.seconds, 2),
            **key_numbers(the_lake, model.name),
        })

    return _run_model
