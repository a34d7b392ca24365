"""The registry of Delta tables: name, layer, schema, keys and partitioning in one place.

Bronze tables keep the decoded fields of each `__consumer_offsets` record next to where it came
from (`source_partition`, `source_offset`), which is also what makes ingest resumable.

Model tables (silver, gold) are not here: the model project declares them, and whoever builds a
`Lake` for model work hands it their specs, so the lake never depends on the models.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import pyarrow as pa

from offsets_platform.codec import schemas as codec_schemas
from offsets_platform.lake.timestamp_range import UTC_MICROS, out_of_range_column


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
    """Source fields + the codec's decoded fields (without its batch-local `row`) + extras, then
    for each time Kafka stored (the record's timestamp, the decoded timestamps) the column that
    keeps its milliseconds when they are outside the years 1-9999 (lake.timestamp_range).
    Those come last: a table created before them gains them as appended columns."""
    fields = [_micros(f) for f in decoded if f.name != "row"]
    kafka_times = ["source_timestamp"] + [f.name for f in decoded if pa.types.is_timestamp(f.type)]
    out_of_range = [pa.field(out_of_range_column(name), pa.int64()) for name in kafka_times]
    return pa.schema(SOURCE_FIELDS + fields + (extra or []) + out_of_range)


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
    # Every group record type Kafka 4.3 defines besides offset commits and classic groups: key
    # fields typed (member_id, regular_expression), the topics a group subscribes to typed
    # (resolved_topics of a regular expression, source_topics and source_topic_regexes of a streams
    # topology), every value field in value_json. (The UI shows descriptions on one line.)
    TableSpec(
        name="consumer_group_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.CONSUMER_GROUP_RECORD_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per KIP-848, share or streams group record (types 3-8, 10-17, 19-23) "
        "or its tombstone.",
    ),
    # skipped_by_kafka is true for a record type Kafka 4.3 does not define, which Kafka's loader
    # skips too (with a warning); false for malformed bytes or an unknown value version, on which
    # Kafka's loader fails the partition.
    TableSpec(
        name="rejected_records",
        layer="bronze",
        schema=_bronze_schema(
            codec_schemas.REJECTED_SCHEMA,
            [pa.field("key", pa.binary()), pa.field("value", pa.binary())],
        ),
        keys=_RECORD_KEY,
        description="One row per record that could not be decoded or whose type Kafka does not "
        "define, kept raw with the reason.",
    ),
    TableSpec(
        name="offsets_topic_checkpoints",
        layer="bronze",
        schema=pa.schema(
            [
                pa.field("ingest_run_id", pa.string(), nullable=False),
                pa.field("source_topic", pa.string(), nullable=False),
                pa.field("source_partition", pa.int32(), nullable=False),
                pa.field("next_offset", pa.int64(), nullable=False),
                pa.field("record_count", pa.int64(), nullable=False),
                pa.field("checkpointed_at", UTC_MICROS, nullable=False),
                # set on the row of an ingest told to accept that the log start had moved past
                # its position: how many records were deleted before ingest read them
                pa.field("skipped_records", pa.int64()),
            ]
        ),
        keys=("ingest_run_id", "source_partition", "next_offset"),
        description="One row per ingest batch and partition: every record of source_topic below "
        "next_offset is in bronze, except the skipped_records an ingest was told to skip.",
    ),
    TableSpec(
        name="offsets_topic_identity",
        layer="bronze",
        schema=pa.schema(
            [
                pa.field("source_topic", pa.string(), nullable=False),
                pa.field("cluster_id", pa.string(), nullable=False),
                pa.field("topic_id", pa.string(), nullable=False),
                pa.field("ingest_run_id", pa.string(), nullable=False),
                pa.field("recorded_at", UTC_MICROS, nullable=False),
            ]
        ),
        keys=("source_topic",),
        description="The log the bronze records come from: its cluster's id and its topic's id, "
        "recorded by the first ingest and checked by every later one.",
    ),
]

# Offset commits written inside a transaction that was still open when ingest reached the end
# of the committed log (read_committed stops at the last stable offset). Kafka never expires an
# offset while such a commit is pending; ingest replaces this table on every run.
_SPECS.append(TableSpec(
    name="pending_offset_commits",
    layer="bronze",
    schema=pa.schema([
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("source_partition", pa.int32(), nullable=False),
        pa.field("source_offset", pa.int64(), nullable=False),
        pa.field("observed_at", UTC_MICROS, nullable=False),
    ]),
    keys=("group", "topic", "partition", "source_partition", "source_offset"),
    description="One row per offset commit of a transaction still open at the last ingest.",
))

# Admin-API snapshots: every row carries the snapshot it belongs to. A call that failed for one
# group or topic is a row in `snapshot_errors`, and the other groups and topics are still there.
SNAPSHOT_FIELDS = [
    pa.field("snapshot_id", pa.string(), nullable=False),
    pa.field("snapshot_at", UTC_MICROS, nullable=False),
]
TOPIC_PARTITIONS = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))


def _snapshot_spec(name: str, fields: list[pa.Field], keys: tuple[str, ...], description: str) -> TableSpec:
    return TableSpec(name=name, layer="bronze", schema=pa.schema(SNAPSHOT_FIELDS + fields),
                     keys=("snapshot_id",) + keys, description=description)


_SPECS += [
    _snapshot_spec("group_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        # ListGroups v5's group type: 'classic', 'consumer' (KIP-848), 'streams' (KIP-1071) or
        # 'share' (KIP-932); each type is described by its own API
        pa.field("group_type", pa.string()),
        # as the API of the group's type reports it: Stable, Empty, PreparingRebalance (classic),
        # Reconciling, Assigning (consumer, streams), NotReady (streams), ...
        pa.field("state", pa.string()),
        pa.field("protocol_type", pa.string()),  # 'consumer', 'connect', ...; 'share', 'streams'
        pa.field("protocol", pa.string()),  # classic: the chosen protocol; consumer, share: the assignor
        pa.field("member_count", pa.int32()),  # null when the group could not be described
        pa.field("coordinator_id", pa.int32()),
    # ListGroups (type, state), then the describe API of the group's type: DescribeGroups,
    # ConsumerGroupDescribe, StreamsGroupDescribe or ShareGroupDescribe.
    ], ("group",), "One row per group per snapshot, described by the API of its type."),
    _snapshot_spec("group_member_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        pa.field("member_id", pa.string(), nullable=False),
        pa.field("group_instance_id", pa.string()),
        pa.field("client_id", pa.string()),
        pa.field("client_host", pa.string()),
        # classic: decoded from the consumer-protocol bytes (null for other protocols); consumer,
        # share: the broker's subscribed topic names ([] for a member subscribed by regex only);
        # streams: the topology's source topics
        pa.field("subscribed_topics", pa.list_(pa.string())),
        pa.field("subscribed_topic_regex", pa.string()),  # consumer (KIP-848) members only, as the client sent it
        # streams: the partitions of the source topics of the member's active tasks
        pa.field("assigned_partitions", TOPIC_PARTITIONS),
        pa.field("subscription_bytes", pa.binary()),  # classic members only
        pa.field("assignment_bytes", pa.binary()),  # classic members only
    ], ("group", "member_id"), "One row per group member per snapshot, of every group type: subscription "
                               "(topic names, regex) and assignment."),
    _snapshot_spec("committed_offset_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("committed_offset", pa.int64()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("metadata", pa.string()),
    ], ("group", "topic", "partition"),
        "One row per group and partition with a committed offset per snapshot (OffsetFetch of all partitions, KIP-88)."),
    _snapshot_spec("log_offset_snapshots", [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("log_start_offset", pa.int64()),
        pa.field("log_end_offset", pa.int64()),
    ], ("topic", "partition"), "One row per topic partition per snapshot (ListOffsets earliest and latest)."),
    _snapshot_spec("topic_configs", [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("retention_ms", pa.int64()),
        pa.field("retention_bytes", pa.int64()),
        pa.field("cleanup_policy", pa.string()),
    ], ("topic",), "One row per topic per snapshot: retention.ms, retention.bytes, cleanup.policy."),
    _snapshot_spec("broker_configs", [
        pa.field("offsets_retention_minutes", pa.int64(), nullable=False),
        pa.field("offsets_retention_source", pa.string(), nullable=False),  # 'broker' or 'fallback'
    ], (), "One row per snapshot: the broker's offsets.retention.minutes, or the configured fallback."),
    _snapshot_spec("snapshot_errors", [
        pa.field("scope", pa.string(), nullable=False),  # 'group', 'topic' or 'broker'
        pa.field("name", pa.string()),  # the group or topic; null for the broker
        pa.field("operation", pa.string(), nullable=False),  # e.g. DescribeGroups, OffsetFetch
        pa.field("error", pa.string(), nullable=False),  # Kafka's error name, e.g. GROUP_AUTHORIZATION_FAILED
        pa.field("message", pa.string()),
    ], ("scope", "name", "operation"), "One row per admin call that failed for one group or topic in a snapshot."),
]

# The dbt-like runner's memory: which version of each source a model last read, so an
# incremental run reads only the files appended since.
_SPECS.append(TableSpec(
    name="model_runs",
    layer="meta",
    schema=pa.schema([
        pa.field("model", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),  # 'full' or 'incremental' (an unchanged model is not recorded)
        pa.field("source", pa.string(), nullable=False),
        pa.field("source_version", pa.int64(), nullable=False),
        pa.field("code_version", pa.string(), nullable=False),
        pa.field("rows_written", pa.int64(), nullable=False),
        pa.field("finished_at", UTC_MICROS, nullable=False),
    ]),
    keys=("model", "run_id", "source"),
    description="One row per model run and source: the source's Delta version the run read.",
))

# Cleanup: plans (immutable, one row per proposed action), approvals by people, and the audit
# of everything sent to a broker (by an approved plan or by the direct CLI commands).
_SPECS += [
    TableSpec(name="cleanup_plans", layer="cleanup", schema=pa.schema([
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("action_id", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),  # 'OffsetDelete' or 'DeleteGroups'
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string()),  # null for DeleteGroups
        pa.field("partition", pa.int32()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("facts", pa.string(), nullable=False),  # JSON: state, subscriptions, commit time, lag, ...
        pa.field("created_at", UTC_MICROS, nullable=False),
        pa.field("expires_at", UTC_MICROS, nullable=False),
        pa.field("created_by", pa.string(), nullable=False),
    ]), keys=("plan_id", "action_id"),
        description="One row per action of a cleanup plan; a plan never changes once written."),
    TableSpec(name="cleanup_approvals", layer="cleanup", schema=pa.schema([
        pa.field("approval_id", pa.string(), nullable=False),
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("action_id", pa.string(), nullable=False),
        pa.field("approved_by", pa.string(), nullable=False),
        pa.field("approved_at", UTC_MICROS, nullable=False),
        pa.field("comment", pa.string()),
    ]), keys=("approval_id", "action_id"),
        description="One row per action a person approved, with who, when and why."),
    TableSpec(name="cleanup_audit", layer="cleanup", schema=pa.schema([
        pa.field("audit_id", pa.string(), nullable=False),
        pa.field("plan_id", pa.string()),  # null for the direct CLI commands
        pa.field("action_id", pa.string()),
        pa.field("origin", pa.string(), nullable=False),  # 'plan' or 'cli'
        pa.field("action", pa.string(), nullable=False),  # 'OffsetDelete' or 'DeleteGroups'
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        # 'sending' (an apply's intent, written before the request goes out), then 'deleted' or
        # 'failed' (Kafka's answer), or 'interrupted' (the apply stopped before the answer was
        # recorded and the broker still holds the offset or group); 'skipped' or 'dry_run' (not sent)
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("error", pa.string()),  # Kafka's error name, e.g. GROUP_SUBSCRIBED_TO_TOPIC
        pa.field("detail", pa.string()),  # why skipped, the error message, or how an outcome was reconciled
        pa.field("bootstrap_servers", pa.string(), nullable=False),
        pa.field("requested_by", pa.string(), nullable=False),
        pa.field("at", UTC_MICROS, nullable=False),
        # on the outcome of an apply's request: the audit_id of its 'sending' row; null otherwise
        pa.field("intent_id", pa.string()),
    ]), keys=("audit_id",),
        description="One row per partition or group of every OffsetDelete and DeleteGroups: an apply's intent "
                    "before it sends, then the outcome."),
]

SNAPSHOT_TABLES = ("group_snapshots", "group_member_snapshots", "committed_offset_snapshots",
                   "log_offset_snapshots", "topic_configs", "broker_configs", "snapshot_errors")

# The lake's own tables, read-only: model tables are handed to each Lake, never added here.
TABLES: Mapping[str, TableSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})

# The bronze tables that hold decoded records, in the order ingest writes them.
RECORD_TABLES = (
    "offset_commit_records",
    "group_metadata_records",
    "group_metadata_members",
    "consumer_group_records",
    "rejected_records",
)


def with_model_tables(tables: Mapping[str, TableSpec], model_tables: Mapping[str, TableSpec]) -> dict[str, TableSpec]:
    """`tables` plus the model tables (silver, gold), which the model project declares rather than
    this module; a name that already means another table is an error."""
    combined = dict(tables)
    for name, spec in model_tables.items():
        known = combined.get(name)
        if known is not None and known != spec:
            raise ValueError(f"table {name!r} is already registered with another layer or schema")
        combined[name] = spec
    return combined


def table_spec(name: str, tables: Mapping[str, TableSpec] = TABLES) -> TableSpec:
    """The spec of a table among `tables` (default: the lake's own, without model tables), or a
    KeyError that lists the known names."""
    try:
        return tables[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(tables))}") from None
