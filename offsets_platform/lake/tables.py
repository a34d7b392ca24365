"""The registry of Delta tables: name, layer, schema, keys and partitioning in one place.

Bronze tables keep the decoded fields of each `__consumer_offsets` record next to where it came
from (`source_partition`, `source_offset`), which is also what makes ingest resumable.

Model tables (silver, gold) are not here: the model project declares them, and whoever builds a
`Lake` for model work hands it their specs, so the lake never depends on the models.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
    # What each column means, for the Dagster UI (a model table's columns are described in its
    # layer's YAML instead). Kept beside the schema rather than in its fields' metadata, which
    # would follow the schema into every Delta table created, every cast of written data and every
    # Spark read, and leave the tables created before a change with the old words. A description
    # is not part of a table's identity, so specs compare without it.
    column_descriptions: Mapping[str, str] = field(default_factory=dict, compare=False)


# Where a bronze row came from in `__consumer_offsets`; (source_partition, source_offset) is
# unique per record.
SOURCE_FIELDS = [
    pa.field("source_partition", pa.int32(), nullable=False),
    pa.field("source_offset", pa.int64(), nullable=False),
    pa.field("source_timestamp", UTC_MICROS),
    pa.field("ingest_run_id", pa.string(), nullable=False),
    pa.field("ingested_at", UTC_MICROS, nullable=False),
]
SOURCE_DESCRIPTIONS = {
    "source_partition": "the partition of the log read (__consumer_offsets, or a mirror) that holds the record",
    "source_offset": "the record's offset in that partition; with source_partition, it identifies the record",
    "source_timestamp": "the record's timestamp (UTC): when the coordinator appended it, by its clock; null "
                        "outside the years 1-9999",
    "ingest_run_id": "the ingest run that wrote the row",
    "ingested_at": "when that ingest run started (UTC)",
}


def _described(spec: TableSpec, *parts: Mapping[str, str]) -> TableSpec:
    """`spec` with the column descriptions of `parts`, plus one for each column that keeps a time's
    milliseconds outside the years 1-9999. A description of a column the schema does not have is
    an error: it was misspelled or outlived its column."""
    schema = spec.schema
    descriptions = {name: text for part in parts for name, text in part.items()}
    for time in schema.names:
        if out_of_range_column(time) in schema.names:
            descriptions[out_of_range_column(time)] = (f"the milliseconds Kafka stored in {time} when they are "
                                                       f"outside the years 1-9999 ({time} is null then); null "
                                                       "otherwise")
    unknown = sorted(set(descriptions) - set(schema.names))
    if unknown:
        raise ValueError(f"table {spec.name}: descriptions of columns it lacks: {unknown}")
    return replace(spec, column_descriptions=MappingProxyType(descriptions))


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

_OFFSET_COMMIT_DESCRIPTIONS = {
    "key_version": "the key type: 0 (legacy offset commit) or 1 (offset commit)",
    "group": "the consumer group (group.id) of the offset key",
    "topic": "the topic of the offset key",
    "partition": "the partition of the offset key",
    "tombstone": "the record has no value: the offset was removed (expiration, OffsetDelete, DeleteGroups or a "
                 "deleted topic)",
    "value_version": "the OffsetCommitValue version (0-4); null for a tombstone",
    "offset": "the committed offset: the offset of the next message the group will read; null for a tombstone",
    "leader_epoch": "the leader epoch committed with the offset (value v3+); null when none (-1), for older "
                    "values, or for a tombstone",
    "metadata": "the metadata string the consumer committed with the offset; null for a tombstone",
    "commit_timestamp": "when the coordinator accepted the commit (UTC); null for a tombstone or outside the "
                        "years 1-9999",
    "expire_timestamp": "the legacy per-offset expire time (value v1, UTC), from the retention an old client "
                        "chose; null when none (-1) or outside the years 1-9999",
}
_GROUP_METADATA_DESCRIPTIONS = {
    "key_version": "the key type: 2 (classic group metadata)",
    "group": "the classic group (group.id)",
    "tombstone": "the record has no value: the group was deleted (Dead)",
    "value_version": "the GroupMetadataValue version (0-4); null for a tombstone",
    "protocol_type": "the group's protocol type: consumer, connect, ...; empty for a group that only commits "
                     "offsets",
    "generation": "the group's generation: a new one for each completed rebalance",
    "protocol": "the protocol the group chose (for consumers, the assignor); null without members",
    "leader": "the member id of the group's leader; null without members",
    "current_state_timestamp": "when the group entered its current state (UTC, value v2+); null when unknown "
                               "(-1), for older values, or outside the years 1-9999",
    "member_count": "members listed in the record; 0 means the group went Empty",
}
_GROUP_MEMBER_DESCRIPTIONS = {
    "group": "the classic group (group.id)",
    "member_index": "the member's position in the record's member list",
    "member_id": "the member id the coordinator gave the member",
    "group_instance_id": "the static member's group.instance.id (value v3+); null for a dynamic member",
    "client_id": "the client.id of the member's client",
    "client_host": "the host the member's client connected from, as the coordinator recorded it",
    "rebalance_timeout": "the member's rebalance timeout (ms; value v1+)",
    "session_timeout": "the member's session timeout (ms)",
    "subscription_version": "the consumer-protocol subscription's version; null when it did not decode or the "
                            "protocol type is not consumer",
    "subscribed_topics": "the topics the member subscribes to (consumer protocol); null when not decoded",
    "subscription_user_data": "the subscription's user data (the assignor's bytes)",
    "owned_partitions": "the partitions the member owned when it joined (subscription v1+, cooperative "
                        "rebalancing)",
    "subscription_generation_id": "the generation the member last took part in (subscription v2+)",
    "rack_id": "the member's client.rack (subscription v3+)",
    "assignment_version": "the consumer-protocol assignment's version; null when it did not decode or is empty",
    "assigned_partitions": "the partitions the leader assigned the member",
    "assignment_user_data": "the assignment's user data (the assignor's bytes)",
    "subscription_bytes": "the member's subscription as the coordinator stored it, raw",
    "assignment_bytes": "the member's assignment as the coordinator stored it, raw",
    "subscription_error": "why the consumer-protocol subscription did not decode (the group's subscriptions "
                          "are then unknown, as in Kafka); null otherwise",
    "assignment_error": "why the consumer-protocol assignment did not decode; null otherwise",
}
_CONSUMER_GROUP_RECORD_DESCRIPTIONS = {
    "record_type": "the record type's name, e.g. consumer_group_member_metadata",
    "key_version": "the key type: 3-8 KIP-848, 10-15 share, 16 regular expression, 17 and 19-23 streams",
    "group": "the group (group.id)",
    "member_id": "the member the record is about (member records); null for the group's own records",
    "regular_expression": "the regular expression of the key (type 16); null for other types",
    "tombstone": "the record has no value: the coordinator removed what the key names (a member, the group, a "
                 "regular expression)",
    "value_version": "the value's version; null for a tombstone",
    "group_epoch": "the group's epoch (the group metadata records: types 3, 11, 17); null for other types",
    "assignment_epoch": "the epoch of the target assignment; null for types without one",
    "member_epoch": "the member's epoch (current member assignment records); null for other types",
    "member_state": "the member's state, Kafka's MemberState byte (current member assignment records); null for "
                    "other types",
    "subscribed_topic_names": "the topics a member subscribes to by name (member metadata records)",
    "subscribed_topic_regex": "the regular expression a KIP-848 member subscribes with, as the client sent it",
    "client_id": "the client.id of the member's client (member metadata records)",
    "client_host": "the host the member's client connected from (member metadata records)",
    "rack_id": "the member's client.rack (member metadata records)",
    "resolved_topics": "type 16: the topics the key's regular expression resolved to; the group subscribes to "
                       "them",
    "source_topics": "type 23 (streams_group_topology): the topics the topology reads by name, source and "
                     "repartition source topics of every subtopology",
    "source_topic_regexes": "type 23 (streams_group_topology): the topology's source topic regular expressions",
    "value_json": "every value field of the record as JSON, bytes in base64; null for a tombstone",
}
_REJECTED_DESCRIPTIONS = {
    "key_version": "the key type the key starts with; null when the key is too short to hold one",
    "reason": "why the record was not decoded",
    "skipped_by_kafka": "true for a record type Kafka 4.3 does not define, which Kafka's loader skips too (with a "
                        "warning); false for malformed bytes or an unknown value version, on which Kafka's loader "
                        "fails the partition",
    "key": "the record's key, raw",
    "value": "the record's value, raw; null for a tombstone",
}

# settled_unconsumed_messages: the columns of unconsumed_messages (its table, but is_withdrawn), and when
# the prune settled each loss.
_SETTLED_LOSS_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition_id", pa.int32(), nullable=False),
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("watched_by", pa.string()),
        pa.field("observed_at", UTC_MICROS, nullable=False),
        pa.field("previous_snapshot_at", UTC_MICROS),
        pa.field("previous_log_start_offset", pa.int64()),
        pa.field("log_start_offset", pa.int64()),
        pa.field("committed_offset_at_start", pa.int64()),
        pa.field("committed_offset", pa.int64()),
        pa.field("count_log_records_between", pa.int32()),
        pa.field("lost_from_offset", pa.int64()),
        pa.field("lost_to_offset", pa.int64()),
        pa.field("count_lost", pa.int64()),
        pa.field("count_lost_at_least", pa.int64()),
        pa.field("is_held_throughout", pa.bool_()),
        pa.field("is_abandoned", pa.bool_()),
        pa.field("interval_start_at", UTC_MICROS),
        pa.field("interval_end_at", UTC_MICROS),
        pa.field("retention_ms", pa.int64()),
        pa.field("retention_bytes", pa.int64()),
        pa.field("cleanup_policy", pa.string()),
        pa.field("is_commit_chain_complete", pa.bool_()),
        pa.field("settled_at", UTC_MICROS, nullable=False),
    ]
)

_SPECS = [
    _described(TableSpec(
        name="offset_commit_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.OFFSET_COMMIT_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per offset commit record (or its tombstone) in __consumer_offsets.",
    ), SOURCE_DESCRIPTIONS, _OFFSET_COMMIT_DESCRIPTIONS),
    _described(TableSpec(
        name="group_metadata_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.GROUP_METADATA_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per classic group metadata record (or its tombstone).",
    ), SOURCE_DESCRIPTIONS, _GROUP_METADATA_DESCRIPTIONS),
    _described(TableSpec(
        name="group_metadata_members",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.GROUP_MEMBER_SCHEMA),
        keys=_RECORD_KEY + ("member_index",),
        description="One row per member listed in a classic group metadata record.",
    ), SOURCE_DESCRIPTIONS, _GROUP_MEMBER_DESCRIPTIONS),
    # Every group record type Kafka 4.3 defines besides offset commits and classic groups: key
    # fields typed (member_id, regular_expression), the topics a group subscribes to typed
    # (resolved_topics of a regular expression, source_topics and source_topic_regexes of a streams
    # topology), every value field in value_json. (The UI shows descriptions on one line.)
    _described(TableSpec(
        name="consumer_group_records",
        layer="bronze",
        schema=_bronze_schema(codec_schemas.CONSUMER_GROUP_RECORD_SCHEMA),
        keys=_RECORD_KEY,
        description="One row per KIP-848, share or streams group record (types 3-8, 10-17, 19-23) "
        "or its tombstone.",
    ), SOURCE_DESCRIPTIONS, _CONSUMER_GROUP_RECORD_DESCRIPTIONS),
    _described(TableSpec(
        name="rejected_records",
        layer="bronze",
        schema=_bronze_schema(
            codec_schemas.REJECTED_SCHEMA,
            [pa.field("key", pa.binary()), pa.field("value", pa.binary())],
        ),
        keys=_RECORD_KEY,
        description="One row per record that could not be decoded or whose type Kafka does not "
        "define, kept raw with the reason.",
    ), SOURCE_DESCRIPTIONS, _REJECTED_DESCRIPTIONS),
    _described(TableSpec(
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
                pa.field("skipped_records", pa.int64()),
            ]
        ),
        keys=("ingest_run_id", "source_partition", "next_offset"),
        description="One row per ingest batch and partition: every record of source_topic below "
        "next_offset is in bronze, except the skipped_records an ingest was told to skip.",
    ), {
        "ingest_run_id": "the ingest run that wrote the batch",
        "source_topic": "the log read: __consumer_offsets, or a topic of the same layout (a mirror)",
        "source_partition": "the partition of that log",
        "next_offset": "every record of the partition below this offset is in bronze or was skipped; the next "
                       "ingest resumes here",
        "record_count": "records of the partition in the batch (0 on the row of a skip)",
        "checkpointed_at": "when the row was written (UTC)",
        "skipped_records": "set on the row of an ingest told to accept that the log start had moved past its "
                           "position: how many records were deleted before ingest read them; null otherwise",
    }),
    _described(TableSpec(
        name="pruned_offset_commit_counts",
        layer="bronze",
        schema=pa.schema(
            [
                pa.field("source_partition", pa.int32(), nullable=False),
                pa.field("first_source_offset", pa.int64(), nullable=False),
                pa.field("minute_start_at", UTC_MICROS, nullable=False),
                pa.field("count_offset_commits", pa.int64(), nullable=False),
                pa.field("counted_below_offset", pa.int64(), nullable=False),
                pa.field("pruned_at", UTC_MICROS, nullable=False),
            ]
        ),
        keys=("source_partition", "first_source_offset"),
        description="Offset commit records counted per minute before pruning removed them from "
        "offset_commit_records: a full refresh of offset_commit_counts adds these rows to what it "
        "counts from the records kept at and above counted_below_offset.",
    ), {
        "source_partition": "the partition of __consumer_offsets that held the records",
        "first_source_offset": "the offset there of the first record counted in the row: with the partition, its key",
        "minute_start_at": "start of the minute (UTC) of the records' commit time",
        "count_offset_commits": "offset commit records (tombstones not counted) of that minute, from "
                                "first_source_offset up to counted_below_offset",
        "counted_below_offset": "every offset commit record of the partition below this offset is counted in "
                                "this table (the prune that wrote the row removed those no model needs)",
        "pruned_at": "when the prune that counted them ran (UTC)",
    }),
    _described(TableSpec(
        name="settled_unconsumed_messages",
        layer="bronze",
        schema=_SETTLED_LOSS_SCHEMA,
        keys=("topic", "partition_id", "group_id", "observed_at"),
        description="Losses of unconsumed_messages whose move of the log start a prune settled: the "
        "model keeps them as judged then, though the snapshots that judged them may leave.",
    ), {
        "settled_at": "when the prune that settled them ran (UTC)",
    }, {name: f"as in unconsumed_messages.{name}" for name in _SETTLED_LOSS_SCHEMA.names if name != "settled_at"}),
    _described(TableSpec(
        name="settled_log_start_moves",
        layer="bronze",
        schema=pa.schema(
            [
                pa.field("settled_through_at", UTC_MICROS, nullable=False),
                pa.field("settled_at", UTC_MICROS, nullable=False),
            ]
        ),
        keys=("settled_through_at",),
        description="How far each prune settled the moves of log starts: unconsumed_messages takes the "
        "losses of a move seen at or before settled_through_at as settled and never judges it again.",
    ), {
        "settled_through_at": "the latest complete snapshot before the prune's cutoff: every move of a log "
                              "start a snapshot at or before it saw is settled",
        "settled_at": "when the prune that settled them ran (UTC)",
    }),
    _described(TableSpec(
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
    ), {
        "source_topic": "the log the bronze records come from: __consumer_offsets, or a topic of the same layout",
        "cluster_id": "the Kafka cluster's id",
        "topic_id": "the topic's id; a topic deleted and created again has a new one",
        "ingest_run_id": "the ingest run that recorded them, the lake's first",
        "recorded_at": "when they were recorded (UTC)",
    }),
]

# Offset commits written inside a transaction that was still open when ingest reached the end
# of the committed log (read_committed stops at the last stable offset). Kafka never expires an
# offset while such a commit is pending; ingest replaces this table on every run.
_SPECS.append(_described(TableSpec(
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
), {
    "group": "the consumer group (group.id) of the pending commit",
    "topic": "the topic of the pending commit",
    "partition": "the partition of the pending commit",
    "source_partition": "the partition of __consumer_offsets (or its mirror) that holds the commit record",
    "source_offset": "the commit record's offset in that partition, past the last stable offset",
    "observed_at": "when the ingest that saw the transaction still open ran (UTC)",
}))

# Admin-API snapshots: every row carries the snapshot it belongs to. A call that failed for one
# group or topic is a row in `snapshot_errors`, and the other groups and topics are still there.
SNAPSHOT_FIELDS = [
    pa.field("snapshot_id", pa.string(), nullable=False),
    pa.field("snapshot_at", UTC_MICROS, nullable=False),
]
SNAPSHOT_DESCRIPTIONS = {
    "snapshot_id": "the admin-API snapshot the row belongs to",
    "snapshot_at": "when the snapshot was taken (UTC)",
}
TOPIC_PARTITIONS = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))


def _snapshot_spec(name: str, fields: list[pa.Field], keys: tuple[str, ...], description: str,
                   column_descriptions: Mapping[str, str]) -> TableSpec:
    return _described(TableSpec(name=name, layer="bronze", schema=pa.schema(SNAPSHOT_FIELDS + fields),
                                keys=("snapshot_id",) + keys, description=description),
                      SNAPSHOT_DESCRIPTIONS, column_descriptions)


_SPECS += [
    _snapshot_spec("group_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        pa.field("group_type", pa.string()),
        pa.field("state", pa.string()),
        pa.field("protocol_type", pa.string()),
        pa.field("protocol", pa.string()),
        pa.field("member_count", pa.int32()),
        pa.field("coordinator_id", pa.int32()),
    # ListGroups (type, state), then the describe API of the group's type: DescribeGroups,
    # ConsumerGroupDescribe, StreamsGroupDescribe or ShareGroupDescribe.
    ], ("group",), "One row per group per snapshot, described by the API of its type.", {
        "group": "the group (group.id)",
        "group_type": "ListGroups v5's group type: classic, consumer (KIP-848), streams (KIP-1071) or share "
                      "(KIP-932); each type is described by its own API",
        "state": "as the API of the group's type reports it: Stable, Empty, PreparingRebalance (classic), "
                 "Reconciling, Assigning (consumer, streams), NotReady (streams), ...",
        "protocol_type": "consumer, connect, ... for a classic group; share, streams",
        "protocol": "classic: the chosen protocol; consumer, share: the assignor",
        "member_count": "the group's members; null when the group could not be described",
        "coordinator_id": "the broker id of the group's coordinator",
    }),
    _snapshot_spec("group_member_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        pa.field("member_id", pa.string(), nullable=False),
        pa.field("group_instance_id", pa.string()),
        pa.field("client_id", pa.string()),
        pa.field("client_host", pa.string()),
        pa.field("subscribed_topics", pa.list_(pa.string())),
        pa.field("subscribed_topic_regex", pa.string()),
        pa.field("assigned_partitions", TOPIC_PARTITIONS),
        pa.field("subscription_bytes", pa.binary()),
        pa.field("assignment_bytes", pa.binary()),
    ], ("group", "member_id"), "One row per group member per snapshot, of every group type: subscription "
                               "(topic names, regex) and assignment.", {
        "group": "the group (group.id)",
        "member_id": "the member id the coordinator gave the member",
        "group_instance_id": "the static member's group.instance.id; null for a dynamic member",
        "client_id": "the client.id of the member's client",
        "client_host": "the host the member's client connected from",
        "subscribed_topics": "classic: decoded from the consumer-protocol bytes (null for other protocols); "
                             "consumer, share: the broker's subscribed topic names ([] for a member subscribed "
                             "by regex only); streams: the topology's source topics",
        "subscribed_topic_regex": "consumer (KIP-848) members only, as the client sent it",
        "assigned_partitions": "the member's assignment as [{topic, partitions}]; streams: the partitions of the "
                               "source topics of the member's active tasks; null when not known",
        "subscription_bytes": "classic members only: the subscription the coordinator holds, raw",
        "assignment_bytes": "classic members only: the assignment the coordinator holds, raw",
    }),
    _snapshot_spec("committed_offset_snapshots", [
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("committed_offset", pa.int64()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("metadata", pa.string()),
        pa.field("fetched_at", UTC_MICROS),
    ], ("group", "topic", "partition"),
        "One row per group and partition with a committed offset per snapshot (OffsetFetch of all partitions, KIP-88).", {
        "group": "the consumer group (group.id)",
        "topic": "the topic",
        "partition": "the partition",
        "committed_offset": "the committed offset OffsetFetch returned: the offset of the next message the group "
                            "will read",
        "leader_epoch": "the leader epoch OffsetFetch returned with the offset; null when none was committed",
        "metadata": "the metadata string committed with the offset",
        "fetched_at": "when the group's OffsetFetch was sent (UTC), some time after snapshot_at: the offsets are "
                      "those the coordinator held then or within the request's round trip; null in snapshots "
                      "taken before it was recorded",
    }),
    _snapshot_spec("log_offset_snapshots", [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("log_start_offset", pa.int64()),
        pa.field("log_end_offset", pa.int64()),
        pa.field("listed_at", UTC_MICROS),
        pa.field("max_timestamp_ms", pa.int64()),
    ], ("topic", "partition"), "One row per topic partition per snapshot (ListOffsets earliest, latest and "
                               "max timestamp).", {
        "topic": "the topic",
        "partition": "the partition",
        "log_start_offset": "ListOffsets earliest: the first offset still in the log",
        "log_end_offset": "ListOffsets latest: the offset the next message will get",
        "listed_at": "when the answers of ListOffsets earliest and latest had come (UTC), after the snapshot's "
                     "OffsetFetch calls: the log offsets are those of that moment or up to the requests' round "
                     "trip before; null in snapshots taken before it was recorded",
        "max_timestamp_ms": "ListOffsets max timestamp (KIP-734): the largest record timestamp in the partition "
                            "(epoch ms as Kafka stores it; the broker's append time on a LogAppendTime topic, the "
                            "producer's on a CreateTime one), which time-based retention reads; null for an empty "
                            "partition, a broker without ListOffsets v7, or a snapshot taken before it was "
                            "recorded",
    }),
    _snapshot_spec("topic_configs", [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("retention_ms", pa.int64()),
        pa.field("retention_bytes", pa.int64()),
        pa.field("cleanup_policy", pa.string()),
        pa.field("message_timestamp_type", pa.string()),
    ], ("topic",), "One row per topic per snapshot: retention.ms, retention.bytes, cleanup.policy, "
                   "message.timestamp.type.", {
        "topic": "the topic",
        "retention_ms": "the topic's retention.ms (DescribeConfigs; ms, -1 means unlimited)",
        "retention_bytes": "the topic's retention.bytes per partition (DescribeConfigs; bytes, -1 means unlimited)",
        "cleanup_policy": "the topic's cleanup.policy (DescribeConfigs) as the broker returns it: a comma-separated "
                          "list of delete and compact, possibly with spaces (compact, delete), or empty",
        "message_timestamp_type": "the topic's message.timestamp.type (DescribeConfigs): CreateTime (records keep "
                                  "the producer's timestamps) or LogAppendTime (the broker's append time); null in "
                                  "snapshots taken before it was recorded",
    }),
    _snapshot_spec("broker_configs", [
        pa.field("offsets_retention_minutes", pa.int64(), nullable=False),
        pa.field("offsets_retention_source", pa.string(), nullable=False),
    ], (), "One row per snapshot: the broker's offsets.retention.minutes, or the configured fallback.", {
        "offsets_retention_minutes": "the broker's offsets.retention.minutes (DescribeConfigs of the broker; "
                                     "minutes), or the configured fallback",
        "offsets_retention_source": "broker or fallback: where offsets_retention_minutes comes from",
    }),
    _snapshot_spec("snapshot_errors", [
        pa.field("scope", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("operation", pa.string(), nullable=False),
        pa.field("error", pa.string(), nullable=False),
        pa.field("message", pa.string()),
    ], ("scope", "name", "operation"), "One row per admin call that failed for one group or topic in a snapshot.", {
        "scope": "what the failed call was about: group, topic or broker",
        "name": "the group or topic; null for the broker",
        "operation": "the admin call that failed, e.g. DescribeGroups, OffsetFetch",
        "error": "Kafka's error name, e.g. GROUP_AUTHORIZATION_FAILED",
        "message": "the error message, when there was one",
    }),
]

# The dbt-like runner's memory: which version of each source a model last read, so an
# incremental run reads only the files appended since.
_SPECS.append(_described(TableSpec(
    name="model_runs",
    layer="meta",
    schema=pa.schema([
        pa.field("model", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("source_version", pa.int64(), nullable=False),
        pa.field("code_version", pa.string(), nullable=False),
        pa.field("rows_written", pa.int64(), nullable=False),
        pa.field("finished_at", UTC_MICROS, nullable=False),
    ]),
    keys=("model", "run_id", "source"),
    description="One row per model run and source: the source's Delta version the run read.",
), {
    "model": "the model that ran",
    "run_id": "the run",
    "mode": "full or incremental (an unchanged model is not recorded)",
    "source": "a table the run read; ref:<model> for a ref it will read as of this run next time; - when it read "
              "none; inputs: everything the result depends on; variables and as_of: the values an incremental "
              "model's rows were computed with",
    "source_version": "that table's Delta version the run read (-1 for -); for inputs and variables a fingerprint, "
                      "for as_of its epoch microseconds",
    "code_version": "the model's code version: a hash of its SQL and declared columns",
    "rows_written": "rows the run wrote",
    "finished_at": "when the run finished (UTC)",
}))

# Cleanup: plans (immutable, one row per proposed action), approvals by people, and the audit
# of everything sent to a broker (by an approved plan or by the direct CLI commands).
_SPECS += [
    _described(TableSpec(name="cleanup_plans", layer="cleanup", schema=pa.schema([
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("action_id", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("facts", pa.string(), nullable=False),
        pa.field("created_at", UTC_MICROS, nullable=False),
        pa.field("expires_at", UTC_MICROS, nullable=False),
        pa.field("created_by", pa.string(), nullable=False),
    ]), keys=("plan_id", "action_id"),
        description="One row per action of a cleanup plan; a plan never changes once written."), {
        "plan_id": "the plan: a hash of its whole content",
        "action_id": "the action; the same removal has the same id in every plan",
        "action": "OffsetDelete or DeleteGroups",
        "group": "the consumer group (group.id) to clean up",
        "topic": "the topic of an OffsetDelete; null for DeleteGroups",
        "partition": "the partition of an OffsetDelete; null for DeleteGroups",
        "reason": "why the action is proposed",
        "facts": "JSON: the facts the action rests on (state, subscriptions, commit time, lag, ...)",
        "created_at": "when the plan was built (UTC)",
        "expires_at": "when the plan expires (UTC): from then on it can be neither approved nor applied",
        "created_by": "who built the plan",
    }),
    _described(TableSpec(name="cleanup_approvals", layer="cleanup", schema=pa.schema([
        pa.field("approval_id", pa.string(), nullable=False),
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("action_id", pa.string(), nullable=False),
        pa.field("approved_by", pa.string(), nullable=False),
        pa.field("approved_at", UTC_MICROS, nullable=False),
        pa.field("comment", pa.string()),
    ]), keys=("approval_id", "action_id"),
        description="One row per action a person approved, with who, when and why."), {
        "approval_id": "the approval; one approval covers one or more actions of a plan",
        "plan_id": "the plan approved",
        "action_id": "the action approved",
        "approved_by": "the person who approved",
        "approved_at": "when they approved (UTC)",
        "comment": "why, in the approver's words; null without a comment",
    }),
    _described(TableSpec(name="cleanup_audit", layer="cleanup", schema=pa.schema([
        pa.field("audit_id", pa.string(), nullable=False),
        pa.field("plan_id", pa.string()),
        pa.field("action_id", pa.string()),
        pa.field("origin", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("detail", pa.string()),
        pa.field("bootstrap_servers", pa.string(), nullable=False),
        pa.field("requested_by", pa.string(), nullable=False),
        pa.field("at", UTC_MICROS, nullable=False),
        pa.field("intent_id", pa.string()),
    ]), keys=("audit_id",),
        description="One row per partition or group of every OffsetDelete and DeleteGroups: an apply's intent "
                    "before it sends, then the outcome."), {
        "audit_id": "the audit row",
        "plan_id": "the plan applied; null for the direct CLI commands",
        "action_id": "the plan's action; null for the direct CLI commands",
        "origin": "plan (an approved plan's apply) or cli (a direct command)",
        "action": "OffsetDelete or DeleteGroups",
        "group": "the consumer group (group.id)",
        "topic": "the topic of an OffsetDelete; null for DeleteGroups",
        "partition": "the partition of an OffsetDelete; null for DeleteGroups",
        "outcome": "sending (an apply's intent, written before the request goes out), then deleted or failed "
                   "(Kafka's answer), or interrupted (the apply stopped before the answer was recorded and the "
                   "broker still holds the offset or group); skipped or dry_run (not sent)",
        "error": "Kafka's error name, e.g. GROUP_SUBSCRIBED_TO_TOPIC; null without an error",
        "detail": "why skipped, the error message, or how an outcome was reconciled",
        "bootstrap_servers": "the cluster the request was for",
        "requested_by": "who ran the apply or the command",
        "at": "when the row was written (UTC)",
        "intent_id": "on the outcome of an apply's request: the audit_id of its sending row; null otherwise",
    }),
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
