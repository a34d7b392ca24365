"""Dagster asset specs and metadata for the lake's registered tables."""

from dagster import AssetSpec, MetadataValue, TableColumn, TableSchema

from offsets_platform.lake import Lake, table_spec


def table_asset_spec(name: str, group_name: str, kinds: set[str]) -> AssetSpec:
    """An asset spec whose description and column schema (with each column's description) come from
    the table registry."""
    spec = table_spec(name)
    return AssetSpec(
        key=name,
        group_name=group_name,
        description=spec.description,
        kinds={"delta", *kinds},
        metadata={
            "dagster/column_schema": TableSchema(columns=[
                TableColumn(f.name, str(f.type), description=spec.column_descriptions.get(f.name))
                for f in spec.schema]),
            "keys": ", ".join(spec.keys),
        },
    )


def table_metadata(lake: Lake, name: str, rows: int | None = None) -> dict:
    """Row count (`rows` when the caller knows it) and location of a table, for a materialization."""
    return {"dagster/row_count": lake.count(name) if rows is None else rows,
            "path": MetadataValue.path(str(lake.path(name)))}
