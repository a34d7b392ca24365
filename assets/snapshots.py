"""Bronze assets: admin-API snapshots of the cluster (works on any Kafka, managed ones too)."""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, multi_asset

from offsets_platform_dagster.resources import KafkaResource, LakeResource
from offsets_platform_dagster.table_specs import table_asset_spec, table_metadata
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.lake.tables import SNAPSHOT_TABLES
from offsets_platform.views.summary import groups_by_state


@multi_asset(specs=[table_asset_spec(name, "bronze", {"kafka"}) for name in SNAPSHOT_TABLES], can_subset=False)
def cluster_snapshot(context: AssetExecutionContext, kafka: KafkaResource, lake: LakeResource):
    """Take one admin-API snapshot (groups, members, committed offsets, log offsets, configs)."""
    the_lake = lake.lake()
    result = snapshot_cluster(kafka.connection(), the_lake, emit=context.log.info)
    for name in SNAPSHOT_TABLES:
        metadata = table_metadata(the_lake, name)
        metadata.update({"snapshot_id": result.snapshot_id, "rows_added": result.rows_written[name]})
        if name == "group_snapshots":
            metadata["groups_by_state"] = MetadataValue.md(_groups_by_state_markdown(the_lake, result.snapshot_id))
        if name == "snapshot_errors":
            metadata["errors_in_snapshot"] = len(result.errors)
        yield MaterializeResult(asset_key=name, metadata=metadata)


def _groups_by_state_markdown(lake, snapshot_id: str) -> str:
    rows = groups_by_state(lake, snapshot_id)
    return "| state | groups |\n|---|---|\n" + "\n".join(f"| {r['state']} | {r['groups']} |" for r in rows)
