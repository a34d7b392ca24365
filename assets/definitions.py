"""The one Dagster `Definitions` of offsets_platform (workspace.yaml points here)."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from assets.bronze import offsets_topic_bronze
from assets.resources import KafkaResource, LakeResource, SparkResource
from assets.snapshots import cluster_snapshot

# One job refreshes everything; the in-process executor lets one SparkSession serve a run.
refresh_job = define_asset_job(
    "refresh",
    selection=AssetSelection.all(),
    executor_def=in_process_executor,
    description="Ingest __consumer_offsets, snapshot the cluster, and refresh every table.",
)

defs = Definitions(
    assets=[offsets_topic_bronze, cluster_snapshot],
    jobs=[refresh_job],
    resources={
        "kafka": KafkaResource(),
        "lake": LakeResource(),
        "spark": SparkResource(),
    },
    executor=in_process_executor,
)
