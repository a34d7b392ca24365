"""Bronze assets: `__consumer_offsets` into Delta, incrementally.

The ingest asset is in the concurrency pool "ingest": with the instance's pool limit (see
assets/dagster.yaml) a scheduled run that overlaps another shows as waiting for the pool. The
lake's "ingest" lease (offsets_platform.ingest.offsets_topic) still guards runs outside Dagster.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from dagster import AssetExecutionContext, MaterializeResult, multi_asset

from offsets_platform_dagster.resources import KafkaResource, LakeResource
from offsets_platform_dagster.table_specs import table_asset_spec, table_metadata
from offsets_platform.ingest.log_check import IDENTITY
from offsets_platform.ingest.offsets_topic import CHECKPOINTS, PENDING, ingest_offsets_topic
from offsets_platform.lake.tables import RECORD_TABLES

BRONZE_OFFSETS_TABLES = RECORD_TABLES + (CHECKPOINTS, PENDING, IDENTITY)
INGEST_POOL = "ingest"  # Dagster's concurrency pool of the ingest asset


@multi_asset(specs=[table_asset_spec(name, "bronze", {"kafka"}) for name in BRONZE_OFFSETS_TABLES],
             can_subset=False, pool=INGEST_POOL)
def offsets_topic_bronze(context: AssetExecutionContext, kafka: KafkaResource, lake: LakeResource):
    """Read `__consumer_offsets` (or the configured topic of its layout) from where bronze stops to
    its end, decode, append to bronze."""
    the_lake = lake.lake()
    result = ingest_offsets_topic(kafka.connection(), the_lake, emit=context.log.info)
    for name in BRONZE_OFFSETS_TABLES:
        metadata = table_metadata(the_lake, name)
        if name in result.rows_written:
            metadata["rows_added"] = result.rows_written[name]
        if name == CHECKPOINTS:
            metadata.update({
                "ingest_run_id": result.run_id,
                "records_read": result.records_read,
                "seconds": round(result.seconds, 2),
                "records_per_second": round(result.records_read / result.seconds) if result.seconds else 0,
            })
        if name == PENDING:
            metadata["pending_commits"] = result.pending_commits
        yield MaterializeResult(asset_key=name, metadata=metadata)
