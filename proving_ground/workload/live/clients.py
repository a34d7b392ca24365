"""Small client helpers for the live workload: configs, and the admin reads it needs.

confluent-kafka (librdkafka) produces and consumes, as most production services do, and speaks
the KIP-848 consumer protocol. The project's admin client (`SnapshotAdminClient`: kafka-python
with a deadline on every call) does most admin calls (ListOffsets, OffsetFetch, ListGroups with
group types, DescribeGroups, DescribeConfigs, DeleteRecords, DescribeTransactions).
`describe_groups_raw` keeps DescribeGroups members' bytes untouched: kafka-python 3.0.12's own
`describe_groups` decodes every member's metadata as a consumer-protocol subscription whatever
the protocol type, and fails on a Connect group's worker metadata.

What describes which group on Kafka 4.3 (checked against the embedded broker):
- ListGroups v5 (kafka-python `list_groups`) lists every group with its type ("classic",
  "consumer", "share", "streams") and state. confluent-kafka 2.16.1's `list_consumer_groups`
  knows only the classic and consumer types (ConsumerGroupType has no share or streams).
- DescribeGroups describes classic groups only; a KIP-848, share or streams group reads as Dead.
- confluent-kafka's `describe_consumer_groups` sends ConsumerGroupDescribe for KIP-848 groups
  (members, assignments) and answers Dead for share and streams groups. Neither Python client has
  ShareGroupDescribe or StreamsGroupDescribe; the product's own admin client sends them
  (`offsets_platform.kafka.admin_describe`), and the live workload checks share and streams groups
  with ListGroups only.
"""

from __future__ import annotations

from confluent_kafka import ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kafka import TopicPartition

from offsets_platform.kafka.admin_calls import SnapshotAdminClient
from offsets_platform.ingest.snapshot_collect import log_start_and_end

SESSION_TIMEOUT_MS = 10_000
"""Classic members: within Kafka's group.min.session.timeout.ms (6 s), and short enough that a
member which vanishes without LeaveGroup is expired within 10 s instead of 45 s. KIP-848, share
and streams groups take their session timeout from the broker (group configs), not the client."""
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


def kip848_consumer_config(bootstrap_servers: str, group: str, client_id: str) -> dict:
    """group.protocol=consumer: the broker assigns partitions and times sessions out, so
    session.timeout.ms and heartbeat.interval.ms are not client settings here."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "log_level": 3,
    }


def transactional_producer_config(bootstrap_servers: str, transactional_id: str) -> dict:
    return {
        "bootstrap.servers": bootstrap_servers,
        "client.id": transactional_id,
        "transactional.id": transactional_id,
        "partitioner": "murmur2_random",
        "linger.ms": 5,
        "log_level": 3,
    }


def confluent_admin(bootstrap_servers: str) -> AdminClient:
    """confluent-kafka's admin client, for ConsumerGroupDescribe and group configs."""
    return AdminClient({"bootstrap.servers": bootstrap_servers, "client.id": "live-workload-admin", "log_level": 3})


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


def list_groups_typed(admin: SnapshotAdminClient) -> dict[str, dict]:
    """ListGroups (v5) of every group: {group: {"group_type", "group_state", "protocol_type"}}."""
    return {g["group_id"]: {"group_type": g.get("group_type"), "group_state": g.get("group_state"),
                            "protocol_type": g.get("protocol_type")} for g in admin.list_groups()}


def describe_kip848_groups(admin: AdminClient, group_ids: list[str], timeout_s: float = 15.0) -> dict[str, dict]:
    """ConsumerGroupDescribe of KIP-848 groups: {group: {"type", "state", "assignor",
    "members": [{"member_id", "client_id", "assignment": {(topic, partition)}}]}}."""
    described = {}
    for group_id, future in admin.describe_consumer_groups(list(group_ids), request_timeout=timeout_s).items():
        group = future.result()
        described[group_id] = {
            "type": group.type.name.lower() if group.type != ConsumerGroupType.UNKNOWN else None,
            "state": group.state.name.title(), "assignor": group.partition_assignor,
            "members": [{"member_id": m.member_id, "client_id": m.client_id,
                         "assignment": {(tp.topic, tp.partition) for tp in (m.assignment.topic_partitions
                                                                               if m.assignment else [])}}
                        for m in group.members]}
    return described


def set_group_config(admin: AdminClient, group: str, configs: dict[str, str], timeout_s: float = 15.0) -> None:
    """IncrementalAlterConfigs on a GROUP resource (KIP-848 group configs, e.g. share.auto.offset.reset)."""
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()])
    for future in admin.incremental_alter_configs([resource], request_timeout=timeout_s).values():
        try:
            future.result()
        except KafkaException as error:
            raise RuntimeError(f"setting {configs} on group {group} failed: {error}") from error
