"""The one Dagster `Definitions` of offsets_platform (workspace.yaml points here)."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from assets.bronze import offsets_topic_bronze
from assets.cleanup import apply_cleanup, approve_cleanup, cleanup_plan, cleanup_record_tables
from assets.models import ModelsResource, model_assets
from assets.quality import expectation_checks
from assets.resources import KafkaResource, LakeResource, SparkResource
from assets.snapshots import cluster_snapshot
from offsets_platform.models import default_project

project = default_project()

# One job refreshes everything; the in-process executor lets one SparkSession serve a run.
refresh_job = define_asset_job(
    "refresh",
    selection=AssetSelection.all(),
    executor_def=in_process_executor,
    description="Ingest __consumer_offsets, snapshot the cluster, and refresh every table.",
)

# The bronze half alone: ingest and snapshot, no Spark (the demo runs it while the live workload
# changes the cluster, so the snapshots follow it closely).
ingest_job = define_asset_job(
    "ingest",
    selection=AssetSelection.groups("bronze"),
    executor_def=in_process_executor,
    description="Ingest __consumer_offsets and snapshot the cluster (bronze only).",
)

defs = Definitions(
    assets=[offsets_topic_bronze, cluster_snapshot, *model_assets(project), cleanup_plan,
            *cleanup_record_tables],
    asset_checks=expectation_checks(project),
    jobs=[refresh_job, ingest_job, approve_cleanup, apply_cleanup],
    resources={
        "kafka": KafkaResource(),
        "lake": LakeResource(),
        "spark": SparkResource(),
        "models": ModelsResource(),
    },
    executor=in_process_executor,
)
