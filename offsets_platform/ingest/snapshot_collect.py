"""One admin-API snapshot of any Kafka-compatible cluster, as Arrow tables.

What it asks: ListGroups (type, state) and the describe API of each group's type (members,
subscriptions, assignments; see admin_describe), one OffsetFetch of
all partitions per group (KIP-88), Metadata and ListOffsets earliest, latest and max timestamp
(KIP-734) per partition, DescribeConfigs of every topic (retention.ms, retention.bytes,
cleanup.policy, message.timestamp.type) and of one broker (offsets.retention.minutes). The
groups' offsets are read before the log offsets, and each read carries its own time
(`fetched_at`, `listed_at`): a commit made while the snapshot runs is placed by those, not by
`snapshot_at`, which precedes them all. Everything is gathered before anything is returned, so a
caller writes either a whole snapshot or nothing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

import pyarrow as pa
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

from offsets_platform.kafka.admin_calls import (
    CALL_ERRORS, CONNECTION_ERRORS, SnapshotAdminClient, open_admin,
)
from offsets_platform.ingest.snapshot_rows import SnapshotRows, sendable
from offsets_platform.ingest.snapshot_groups import collect_groups
from offsets_platform.kafka.errors import BrokerUnreachable, sasl_principal, wait_until_reachable
from offsets_platform.settings import KafkaConnection

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
TOPIC_CONFIGS = ("retention.ms", "retention.bytes", "cleanup.policy", "message.timestamp.type")
OFFSETS_RETENTION = "offsets.retention.minutes"
DEFAULT_OFFSETS_RETENTION_MINUTES = 10080
# Metadata flags a partition with an offline follower, but its leader still answers ListOffsets.
_REPLICA_NOT_AVAILABLE = 9


@dataclass(frozen=True)
class ClusterSnapshot:
    """One snapshot: its id, when it was taken, and one Arrow table per snapshot table."""

    snapshot_id: str
    snapshot_at: datetime
    bootstrap_servers: str
    tables: dict[str, pa.Table]

    def rows(self, name: str) -> list[dict]:
        """The rows of one table as dicts (small tables, tests, printing)."""
        return self.tables[name].to_pylist()

    @property
    def errors(self) -> list[dict]:
        return self.rows("snapshot_errors")


def new_snapshot_id(snapshot_at: datetime) -> str:
    """"<UTC time>-<8 hex>", sortable by time and unique across concurrent runs."""
    return f"{snapshot_at:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def take_snapshot(
    connection: KafkaConnection,
    *,
    groups: list[str] | None = None,
    known_groups: Iterable[str] = (),
    topics: list[str] | None = None,
    offsets_retention_fallback_minutes: int = DEFAULT_OFFSETS_RETENTION_MINUTES,
    timeout_s: float = 15.0,
    request_timeout_s: float = 10.0,
) -> ClusterSnapshot:
    """Take one snapshot of the cluster's groups, committed offsets, log offsets and configs.

    Args:
        connection: the cluster; its bootstrap address must be set.
        groups: only these group ids (None: every group ListGroups returns).
        known_groups: with `groups` None, groups known elsewhere (the lake's models) to ask about
            by name when ListGroups does not list them: one that no describe API knows is gone.
        topics: only these topics (None: every topic but `__consumer_offsets` and
            `__transaction_state`).
        offsets_retention_fallback_minutes: used, with source 'fallback', when the broker does
            not expose offsets.retention.minutes: some managed services hide broker configs, and
            DescribeConfigs of a broker needs the DescribeConfigs permission on the cluster.
            Apache Kafka answers it otherwise (default 10080).
        timeout_s: bound on reaching the cluster (TCP, then the first Kafka answer).
        request_timeout_s: bound on each request; each admin call (a few requests) is cut
            after three times this, which ends the snapshot as unreachable.

    Returns:
        The snapshot; a call that failed for one group or topic is a row of its
        `snapshot_errors` table, and the other groups and topics are complete.

    Raises:
        BrokerUnreachable: the cluster did not answer, or the connection was lost midway.
        ValueError: the connection has no bootstrap address.
    """
    address = connection.bootstrap_servers
    if not address.strip():
        raise ValueError("no bootstrap address: start the embedded broker or set OFFSETS_PLATFORM_BOOTSTRAP_SERVERS")
    wait_until_reachable(address, timeout_s)
    snapshot_at = datetime.now(timezone.utc)
    rows = SnapshotRows(principal=sasl_principal(connection.security_protocol, connection.sasl_username))
    with open_admin(connection, timeout_s, request_timeout_s) as admin:
        try:
            collect_groups(admin, rows, groups, known_groups)
            partitions = _collect_topics(admin, rows, topics)
            _collect_log_offsets(admin, rows, partitions)
            _collect_topic_configs(admin, rows, sorted(partitions))
            _collect_broker_config(admin, rows, offsets_retention_fallback_minutes)
        except CONNECTION_ERRORS as error:
            detail = (f"an admin call got no answer within {admin.call_deadline_s:.0f} s" if admin.timed_out
                      else f"the connection failed during the snapshot ({error})")
            raise BrokerUnreachable(address, detail) from error
    snapshot_id = new_snapshot_id(snapshot_at)
    return ClusterSnapshot(snapshot_id, snapshot_at, address, rows.to_arrow(snapshot_id, snapshot_at))


def _collect_topics(admin: SnapshotAdminClient, rows: SnapshotRows, topics: list[str] | None) -> dict[str, list[int]]:
    """topic -> partitions whose leader answers, from Metadata; per-topic errors into `rows`."""
    if topics is not None:
        topics = [topic for topic in topics if sendable(rows, "topic", topic, "Metadata")]
    metadata = rows.guarded("broker", None, "Metadata", admin.describe_topics, topics) or []
    partitions = {}
    for topic in metadata:
        name = topic["name"]
        if topic.get("is_internal") or name in INTERNAL_TOPICS:
            continue
        if topic["error_code"]:
            rows.error("topic", name, "Metadata", topic["error_code"])
            continue
        failed = [p for p in topic["partitions"] if p["error_code"] not in (0, _REPLICA_NOT_AVAILABLE)]
        if failed:
            rows.error("topic", name, "Metadata", failed[0]["error_code"],
                       f"partitions {sorted(p['partition_index'] for p in failed)} left out")
        partitions[name] = sorted(p["partition_index"] for p in topic["partitions"] if p not in failed)
    return partitions


def _collect_log_offsets(admin: SnapshotAdminClient, rows: SnapshotRows, partitions: dict[str, list[int]]) -> None:
    wanted = {topic: [TopicPartition(topic, p) for p in indexes] for topic, indexes in partitions.items() if indexes}
    if not wanted:
        return
    # listed_at is taken once the answers are in: each log start was read at or before it.
    try:
        start, end = log_start_and_end(admin, [tp for tps in wanted.values() for tp in tps])
        listed_at = dict.fromkeys(start, datetime.now(timezone.utc))
    except CONNECTION_ERRORS:
        raise
    except CALL_ERRORS:
        # One topic's error fails the whole request: ask topic by topic so only it is missing.
        start, end, listed_at = {}, {}, {}
        for topic, tps in wanted.items():
            found = rows.guarded("topic", topic, "ListOffsets", log_start_and_end, admin, tps)
            if found:
                start.update(found[0])
                end.update(found[1])
                listed_at.update(dict.fromkeys(found[0], datetime.now(timezone.utc)))
    newest = _max_timestamps(admin, rows, [tp for tp in start if tp in end])
    for topic in sorted(wanted):
        for tp in wanted[topic]:
            if tp in start and tp in end:
                rows.add("log_offset_snapshots", topic=topic, partition=tp.partition,
                         log_start_offset=start[tp], log_end_offset=end[tp], listed_at=listed_at[tp],
                         max_timestamp_ms=newest.get(tp))


def log_start_and_end(admin: SnapshotAdminClient, tps: list[TopicPartition]) -> tuple[dict, dict]:
    """(log start offsets, log end offsets) by TopicPartition: ListOffsets earliest and latest."""
    earliest = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    return ({tp: found.offset for tp, found in earliest.items()},
            {tp: found.offset for tp, found in latest.items()})


def _max_timestamps(admin: SnapshotAdminClient, rows: SnapshotRows, tps: list[TopicPartition]) -> dict:
    """TopicPartition -> the largest record timestamp in it (ms): ListOffsets max timestamp (KIP-734),
    what time-based retention compares with retention.ms (UnifiedLog.deleteRetentionMsBreachedSegments
    reads each segment's largest record timestamp). An empty partition has none (-1). A broker
    without ListOffsets v7 (before Kafka 3.0) leaves them all out, with one error row: the log
    offsets stand without them."""
    if not tps:
        return {}
    try:
        found = admin.list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP for tp in tps})
    except CONNECTION_ERRORS:
        raise
    except CALL_ERRORS as error:
        rows.error("broker", None, "ListOffsets", error, f"max timestamps (KIP-734) left out: {error}")
        return {}
    return {tp: answer.timestamp for tp, answer in found.items() if answer.timestamp >= 0}


def _collect_topic_configs(admin: SnapshotAdminClient, rows: SnapshotRows, topics: list[str]) -> None:
    if not topics:
        return
    resources = [ConfigResource(ConfigResourceType.TOPIC, topic, list(TOPIC_CONFIGS)) for topic in topics]
    results = rows.guarded("broker", None, "DescribeConfigs", admin.describe_configs, resources) or {}
    for topic in topics:
        result = results.get((ConfigResourceType.TOPIC.value, topic))
        if result is None:
            continue
        if result.error_code:
            rows.error("topic", topic, "DescribeConfigs", result.error_code, result.error_message)
            continue
        values = result.values
        rows.add("topic_configs", topic=topic, retention_ms=_as_int(values.get("retention.ms")),
                 retention_bytes=_as_int(values.get("retention.bytes")),
                 cleanup_policy=values.get("cleanup.policy"),
                 message_timestamp_type=values.get("message.timestamp.type"))


def _collect_broker_config(admin: SnapshotAdminClient, rows: SnapshotRows, fallback_minutes: int) -> None:
    """offsets.retention.minutes of the lowest-numbered broker, or the fallback."""
    minutes = None
    broker_ids = admin.broker_ids()
    if broker_ids:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker_ids[0]), [OFFSETS_RETENTION])
        results = rows.guarded("broker", None, "DescribeConfigs", admin.describe_configs, [resource]) or {}
        result = results.get((ConfigResourceType.BROKER.value, str(broker_ids[0])))
        if result is not None and result.error_code:
            rows.error("broker", None, "DescribeConfigs", result.error_code, result.error_message)
        elif result is not None:
            minutes = _as_int(result.values.get(OFFSETS_RETENTION))
    rows.add("broker_configs", offsets_retention_minutes=minutes if minutes is not None else fallback_minutes,
             offsets_retention_source="broker" if minutes is not None else "fallback")


def _as_int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
