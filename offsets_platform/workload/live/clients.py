"""Small client helpers for the live workload: configs, and the admin reads it needs.

confluent-kafka (librdkafka) produces and consumes, as most production services do;
kafka-python's `KafkaAdminClient` does the admin calls (ListOffsets, OffsetFetch,
DescribeGroups, DescribeConfigs, DeleteRecords).

`describe_groups_raw` exists because kafka-python 3.0.12's `describe_groups` decodes every
member's metadata as a consumer-protocol subscription whatever the group's protocol type, and
raises ValueError ("Buffer underrun decoding string") on a Connect group's worker metadata. It
sends the same DescribeGroups request and returns the bytes untouched; it uses the admin
client's internal coroutine runner, which is the only way to send a raw request with it.
"""

from __future__ import annotations

from collections import defaultdict

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.protocol.admin import DescribeGroupsRequest

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


def admin_client(bootstrap_servers: str, client_id: str = "live-workload-admin") -> KafkaAdminClient:
    """A kafka-python admin client; close() it (it owns an IO thread)."""
    return KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id=client_id,
                            request_timeout_ms=15_000)


def log_offsets(admin: KafkaAdminClient, topic: str, partitions: int) -> tuple[dict[int, int], dict[int, int]]:
    """(log start offsets, log end offsets) by partition, from ListOffsets earliest / latest."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    earliest = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    return ({tp.partition: earliest[tp].offset for tp in tps}, {tp.partition: latest[tp].offset for tp in tps})


def committed_offsets(admin: KafkaAdminClient, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of a group (OffsetFetch for all partitions, KIP-88)."""
    fetched = admin.list_group_offsets({group: None}).get(group, {})
    return {(tp.topic, tp.partition): meta.offset for tp, meta in fetched.items() if meta.offset >= 0}


def describe_groups_raw(admin: KafkaAdminClient, group_ids: list[str]) -> dict[str, dict]:
    """DescribeGroups with member metadata and assignment left as bytes, for any protocol type.

    Returns {group: {"state", "protocol_type", "protocol", "error_code", "members": [{"member_id",
    "client_id", "client_host", "metadata": bytes, "assignment": bytes}]}}.
    """
    async def describe():
        by_coordinator = defaultdict(list)
        for group, coordinator in (await admin._find_coordinator_ids(list(group_ids))).items():
            by_coordinator[coordinator].append(group)
        groups = {}
        for coordinator, ids in by_coordinator.items():
            request = DescribeGroupsRequest(groups=ids, include_authorized_operations=False)
            response = await admin._manager.send(request, node_id=coordinator)
            for group in response.groups:
                groups[group.group_id] = {
                    "state": group.group_state, "protocol_type": group.protocol_type,
                    "protocol": group.protocol_data, "error_code": group.error_code,
                    "members": [{"member_id": m.member_id, "client_id": m.client_id,
                                 "client_host": m.client_host, "metadata": bytes(m.member_metadata or b""),
                                 "assignment": bytes(m.member_assignment or b"")} for m in group.members],
                }
        return groups

    return admin._manager.run(describe)
