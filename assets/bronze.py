"""Bronze assets: `__consumer_offsets` into Delta, incrementally."""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from dagster import AssetExecutionContext, AssetSpec, MaterializeResult, MetadataValue, multi_asset

from assets.resources import KafkaResource, LakeResource
from offsets_platform.ingest.offsets_topic import CHECKPOINTS, ingest_offsets_topic
from offsets_platform.lake.tables import RECORD_TABLES, table_spec

BRONZE_OFFSETS_TABLES = RECORD_TABLES + (CHECKPOINTS,)


def _spec(name: str) -> AssetSpec:
    spec = table_spec(name)
    return AssetSpec(
        key=name,
        group_name="bronze",
        description=spec.description,
        kinds={"delta", "kafka"},
        metadata={"dagster/column_schema": _column_schema(name), "grain": spec.description},
    )


def _column_schema(name: str):
    from dagster import TableColumn, TableSchema

    return TableSchema(columns=[TableColumn(f.name, str(f.type)) for f in table_spec(name).schema])


@multi_asset(specs=[_spec(name) for name in BRONZE_OFFSETS_TABLES], can_subset=False)
def offsets_topic_bronze(context: AssetExecutionContext, kafka: KafkaResource, lake: LakeResource):
    """Read `__consumer_offsets` from where bronze stops to its end, decode, append to bronze."""
    the_lake = lake.lake()
    result = ingest_offsets_topic(kafka.connection(), the_lake, emit=context.log.info)
    for name in BRONZE_OFFSETS_TABLES:
        metadata = {"dagster/row_count": the_lake.count(name), "path": MetadataValue.path(str(the_lake.path(name)))}
        if name in result.rows_written:
            metadata["rows_added"] = result.rows_written[name]
        if name == CHECKPOINTS:
            metadata.update({
                "ingest_run_id": result.run_id,
                "records_read": result.records_read,
                "seconds": round(result.seconds, 2),
                "records_per_second": round(result.records_read / result.seconds) if result.seconds else 0,
            })
        yield MaterializeResult(asset_key=name, metadata=metadata)
