"""The registry of Delta tables: name, layer, schema, keys and partitioning in one place.

Bronze tables keep the decoded fields of each `__consumer_offsets` record next to where it came
from (`source_partition`, `source_offset`), which is also what makes ingest resumable.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from offsets_platform.codec import schemas as codec_schemas

UTC_MICROS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class TableSpec:
    """One Delta table: where it lives, its columns, and the columns that identify a row."""

    name: str
    layer: str
    schema: pa.Schema
    keys: tuple[str, ...]
    description: str
    partition_by: tuple[str, ...] = ()


# Where a bronze row came from in `__consumer_offsets`; (source_partition, source_offset) is
# unique per record.
SOURCE_FIELDS = [
    pa.field("source_partition", pa.int32(), nullable=False),
    pa.field("source_offset", pa.int64(), nullable=False),
    pa.field("source_timestamp", UTC_MICROS),
    pa.field("ingest_run_id", pa.string(), nullable=False),
    pa.field("ingested_at", UTC_MICROS, nullable=False),
]


def _bronze_schema(decoded: pa.Schema, extra: list[pa.Field] | None = None) -> pa.Schema:
    """Source fields + the codec's decoded fields (without its batch-local `row`) + extras."""
    fields = [_micros(f) for f in decoded if f.name != "row"]
    return pa.schema(SOURCE_FIELDS + fields + (extra or []))


def _micros(field: pa.Field) -> pa.Field:
    # Delta stores timestamps in microseconds; declare them that way so reads round-trip.
    if pa.types.is_timestamp(field.type):
        return field.with_type(UTC_MICROS)
    return field


_RECORD_KEY = ("source_partition", "source_offset")

_SPECS = [
    TableSpec(
        name="offset_commit_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.OFFSET_COMMIT_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per offset commit record (or its tombstone) in __consumer_offsets.",
    ),
    TableSpec(
        name="group_metadata_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.GROUP_METADATA_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per classic group metadata record (or its tombstone).",
    ),
    TableSpec(
        name="group_metadata_members",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.GROUP_MEMBER_SCHEMA),
        keys=_RECORD_KEY + ("member_index",),
        description="One row per member listed in a classic group metadata record.",
    ),
    TableSpec(
        name="consumer_group_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.CONSUMER_GROUP_RECORD_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per KIP-848 consumer group record (types 3-8) or its tombstone.",
    ),
    TableSpec(
        name="rejected_records",
        layer="bronze",
        schema=_bronze_schema(
            codec_schemas.REJECTED_SCHEMA,
            [pa.field("key", pa.binary()), pa.field("value", pa.binary())],
        ),
        keys=_RECORD_KEY,
        description="One row per record that could not be decoded or has an unsupported type, "
        "kept raw with the reason.",
    ),
    TableSpec(
        name="offsets_topic_checkpoints",
        layer="bronze",
        schema=pa.schema(
            [
                pa.field("ingest_run_id", pa.string(), nullable=False),
                pa.field("source_partition", pa.int32(), nullable=False),
                pa.field("next_offset", pa.int64(), nullable=False),
                pa.field("record_count", pa.int64(), nullable=False),
                pa.field("checkpointed_at", UTC_MICROS, nullable=False),
            ]
        ),
        keys=("ingest_run_id", "source_partition", "next_offset"),
        description="One row per ingest batch and partition: every record below next_offset "
        "is in bronze.",
    ),
]

TABLES: dict[str, TableSpec] = {spec.name: spec for spec in _SPECS}

# The bronze tables that hold decoded records, in the order ingest writes them.
RECORD_TABLES = (
    "offset_commit_records",
    "group_metadata_records",
    "group_metadata_members",
    "consumer_group_records",
    "rejected_records",
)


def table_spec(name: str) -> TableSpec:
    """The registered spec of a table, or a KeyError that lists the known names."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}") from None
