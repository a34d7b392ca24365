"""The one Dagster `Definitions` of offsets_platform (workspace.yaml points here)."""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
import warnings

from dagster import (AssetExecutionContext, AssetSelection, BetaWarning, Definitions, ObserveResult,
                     define_asset_job, in_process_executor, multi_observable_source_asset)

from offsets_platform_dagster.alerts import build_alerts
from offsets_platform_dagster.automation import build_automation, with_freshness_policy
from offsets_platform_dagster.bronze import offsets_topic_bronze
from offsets_platform_dagster.cleanup import apply_cleanup, approve_cleanup, cleanup_plan, cleanup_record_tables, open_cleanup_plans_sensor
from offsets_platform_dagster.reset import plan_offset_reset
from offsets_platform_dagster.maintenance import prune_job
from offsets_platform_dagster.models import ModelsResource, model_assets
from offsets_platform_dagster.quality import expectation_checks
from offsets_platform_dagster.report import cluster_report
from offsets_platform_dagster.resources import KafkaResource, LakeResource, SparkResource
from offsets_platform_dagster.snapshots import cluster_snapshot
from offsets_platform_dagster.table_specs import table_asset_spec, table_metadata
from offsets_platform.models import default_project

project = default_project()

# `offsets-platform prune` and the prune job write the counts of the commit records they remove
# (offsets_platform.models.pruning), and the losses of unconsumed_messages they settle and how far
# (offsets_platform.models.snapshot_pruning), which refreshes read; a refresh observes their row counts.
prune_written_specs = [table_asset_spec(name, "bronze", set()) for name in (
    "pruned_offset_commit_counts", "settled_unconsumed_messages", "settled_log_start_moves")]

# One job refreshes everything; the in-process executor lets one SparkSession serve a run.
refresh_job = define_asset_job(
    "refresh",
    # Every asset, and the observation of the row counts of the tables other jobs write (defined below).
    selection=AssetSelection.all() | AssetSelection.assets(
        *(spec.key for spec in [*cleanup_record_tables, *prune_written_specs])),
    executor_def=in_process_executor,
    description="Ingest __consumer_offsets, snapshot the cluster, and refresh every table.",
)

# The bronze half alone: ingest and snapshot, no Spark (the demo runs it while the live workload
# changes the cluster, so the snapshots follow it closely). The bronze tables' Great Expectations
# checks run on Spark, so they run with the refresh job, not here.
ingest_job = define_asset_job(
    "ingest",
    selection=AssetSelection.groups("bronze").without_checks(),
    executor_def=in_process_executor,
    description="Ingest __consumer_offsets and snapshot the cluster (bronze only).",
)

# cleanup_plans' columns, from the table registry like every other table's.
cleanup_plans = cleanup_plan.map_asset_specs(lambda spec: spec.merge_attributes(metadata={
    "dagster/column_schema": table_asset_spec("cleanup_plans", "cleanup", set()).metadata["dagster/column_schema"]}))


def row_count_observer(name: str, specs: list, description: str):
    """An observable source asset whose observation (in every refresh) puts the row counts of
    tables another job writes in the UI next to every other table's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=BetaWarning)

        @multi_observable_source_asset(name=name, specs=specs, required_resource_keys={"lake"},
                                       description=description)
        def observe(context: AssetExecutionContext):
            the_lake = context.resources.lake.lake()
            for spec in specs:
                yield ObserveResult(asset_key=spec.key, metadata=table_metadata(the_lake, spec.key.to_user_string()))

    return observe


cleanup_records = row_count_observer("cleanup_records", cleanup_record_tables,
                                     "Row counts of the tables the approve and apply jobs write.")
prune_records = row_count_observer("prune_records", prune_written_specs,
                                   "Row counts of the tables `offsets-platform prune` writes.")

bronze = [offsets_topic_bronze, cluster_snapshot]
models = model_assets(project)
others = [cleanup_plans, cleanup_records, prune_records, cluster_report]

# Schedules (refresh, daily cleanup plan, daily prune), the freshness policies of bronze and the models,
# and the bronze freshness checks with their sensor; their settings are read here, when the definitions
# load (see assets/automation.py).
automation = build_automation(
    refresh_job,
    bronze_assets=bronze,
    refreshed_keys=[key for definition in [*bronze, models, *others] if definition.is_executable
                    for key in definition.keys],
    prune_job=prune_job,
)

assets = [*(with_freshness_policy(definition, automation.bronze_freshness) for definition in bronze),
          with_freshness_policy(models, automation.model_freshness), *others]

# The alerts after each refresh: to a webhook, or as a failed `alert` run (see assets/alerts.py).
alert_job, alerts_sensor = build_alerts()

defs = Definitions(
    assets=assets,
    asset_checks=[*expectation_checks(project), *automation.asset_checks],
    jobs=[refresh_job, ingest_job, plan_offset_reset, approve_cleanup, apply_cleanup, prune_job, *automation.jobs, alert_job],
    schedules=automation.schedules,
    sensors=[*automation.sensors, alerts_sensor, open_cleanup_plans_sensor],
    resources={
        "kafka": KafkaResource(),
        "lake": LakeResource(),
        "spark": SparkResource(),
        "models": ModelsResource(),
    },
    executor=in_process_executor,
)
