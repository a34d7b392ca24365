"""Small client helpers for the live workload: configs, and the admin reads it needs.

confluent-kafka (librdkafka) produces and consumes, as most production services do; the
project's admin client (`SnapshotAdminClient`: kafka-python with a deadline on every call) does
the admin calls (ListOffsets, OffsetFetch, DescribeGroups, DescribeConfigs, DeleteRecords).
It keeps DescribeGroups members' bytes untouched: kafka-python 3.0.12's own `describe_groups`
decodes every member's metadata as a consumer-protocol subscription whatever the protocol type,
and fails on a Connect group's worker metadata.
"""

from __future__ import annotations

from kafka import TopicPartition

from offsets_platform.kafka.admin_calls import SnapshotAdminClient
from offsets_platform.kafka.admin_snapshot import log_start_and_end

SESSION_TIMEOUT_MS = 10_000
"""noida-db needs session.timeout.ms >= 6000 (DESIGN.md)."""
HEARTBEAT_INTERVAL_MS = 1_000


def producer_config(bootstrap_servers: str) -> dict:
    return {
        "bootstrap.servers": bootstrap_servers,
        "client.id": "live-workload-producer",
        "enable.idempotence": True,  # keeps per-partition order, so offsets are reproducible
        "partitioner": "murmur2_random",  # the Java client's partitioner
        "linger.ms": 5,
        "compression.type": "lz4",
        "log_level": 3,
    }


def consumer_config(bootstrap_servers: str, group: str, client_id: str) -> dict:
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group,
        "client.id": client_id,
        "enable.auto.commit": False,  # the scenarios decide what is committed, and when
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "log_level": 3,
    }


def admin_client(bootstrap_servers: str, client_id: str = "live-workload-admin") -> SnapshotAdminClient:
    """An admin client; close() it (it owns an IO thread)."""
    return SnapshotAdminClient(bootstrap_servers=bootstrap_servers, client_id=client_id,
                               request_timeout_ms=15_000, call_deadline_s=45.0)


def log_offsets(admin: SnapshotAdminClient, topic: str, partitions: int) -> tuple[dict[int, int], dict[int, int]]:
    """(log start offsets, log end offsets) by partition, from ListOffsets earliest / latest."""
    start, end = log_start_and_end(admin, [TopicPartition(topic, p) for p in range(partitions)])
    return ({tp.partition: offset for tp, offset in start.items()},
            {tp.partition: offset for tp, offset in end.items()})


def committed_offsets(admin: SnapshotAdminClient, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of a group (OffsetFetch for all partitions, KIP-88)."""
    fetched = admin.list_group_offsets({group: None}).get(group, {})
    return {(tp.topic, tp.partition): meta.offset for tp, meta in fetched.items() if meta.offset >= 0}


def describe_groups_raw(admin: SnapshotAdminClient, group_ids: list[str]) -> dict[str, dict]:
    """DescribeGroups with member metadata and assignment left as bytes, for any protocol type.

    Returns {group: {"state", "protocol_type", "protocol", "error_code", "members": [{"member_id",
    "client_id", "client_host", "metadata": bytes, "assignment": bytes}]}}.
    """
    return {
        group_id: {
            "state": group.group_state, "protocol_type": group.protocol_type, "protocol": group.protocol_data,
            "error_code": group.error_code,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                         "metadata": bytes(m.member_metadata or b""), "assignment": bytes(m.member_assignment or b"")}
                        for m in group.members],
        }
        for group_id, group in admin.describe_groups(list(group_ids)).items()
    }
