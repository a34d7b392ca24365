"""A Kafka Connect worker's group membership: JoinGroup with protocol_type "connect".

kafka-python's `BaseCoordinator` runs the classic group protocol (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup) for any protocol type; `ConsumerCoordinator` is only its "consumer"
subclass. This subclass speaks Connect's eager protocol ("default", ConnectProtocol.java V0):
member metadata = int16 version 0, url string, config_offset int64; the leader's assignment =
int16 version, int16 error, leader string, leader_url string, config_offset int64,
[connector string, tasks []int32] (task -1 is the connector instance itself). The broker
treats both as opaque bytes. The worker also commits offsets with its generation and member
id (OffsetCommit), as the group's sink task would.
"""

from __future__ import annotations

import struct

from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer import OffsetCommitRequest
import kafka.errors as Errors

from .clients import HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS

CONNECTOR_TASK = -1


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def worker_metadata(url: str, config_offset: int = -1) -> bytes:
    return struct.pack(">h", 0) + _string(url) + struct.pack(">q", config_offset)


def connect_assignment(leader: str, leader_url: str, connector: str, tasks: list[int]) -> bytes:
    body = struct.pack(">hh", 0, 0) + _string(leader) + _string(leader_url) + struct.pack(">q", -1)
    body += struct.pack(">i", 1) + _string(connector) + struct.pack(">i", len(tasks))
    return body + b"".join(struct.pack(">i", task) for task in tasks)


class _ConnectCoordinator(BaseCoordinator):
    def __init__(self, client, url: str, connector: str, task_count: int, **configs):
        super().__init__(client, **configs)
        self.url, self.connector, self.task_count = url, connector, task_count
        self.assignment: bytes | None = None

    def protocol_type(self):
        return "connect"

    def group_protocols(self):
        return [("default", worker_metadata(self.url))]

    def _perform_assignment(self, leader_id, protocol, members):
        ordered = sorted(m.member_id for m in members)
        assignments = {}
        for index, member_id in enumerate(ordered):
            tasks = ([CONNECTOR_TASK] if index == 0 else []) + [
                task for task in range(self.task_count) if task % len(ordered) == index]
            assignments[member_id] = connect_assignment(leader_id, self.url, self.connector, tasks)
        return assignments

    async def _on_join_complete_async(self, generation, member_id, protocol, member_assignment_bytes):
        self.assignment = bytes(member_assignment_bytes)

    async def commit_async(self, offsets: dict[tuple[str, int], int]):
        generation = self._generation
        topic_type = OffsetCommitRequest.OffsetCommitRequestTopic
        partition_type = topic_type.OffsetCommitRequestPartition
        request = OffsetCommitRequest(
            max_version=8, group_id=self.group_id, generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id, group_instance_id=None,
            topics=[topic_type(name=topic, partitions=[
                partition_type(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                for (t, p), o in sorted(offsets.items()) if t == topic]) for topic in sorted({t for t, _ in offsets})])
        return await self._manager.send(request, node_id=self.coordinator_id)


class ConnectWorker:
    """One Connect worker in group `group`; owns a kafka-python network client and its IO thread."""

    def __init__(self, bootstrap_servers: str, group: str, worker_id: str, connector: str, task_count: int):
        self.group, self.worker_id = group, worker_id
        self.client = KafkaNetClient(bootstrap_servers=bootstrap_servers, client_id=worker_id)
        self.closed = False
        try:
            self.client._net.start()
            self.client._manager.bootstrap(10_000)
            self.coordinator = _ConnectCoordinator(
                self.client, f"http://{worker_id}:8083/", connector, task_count, group_id=group,
                session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                api_version=self.client._manager.broker_version)
        except BaseException:
            self.client.close()
            raise

    def join(self, timeout_ms: int) -> bool:
        """Drive JoinGroup/SyncGroup; False if not done in time (the next call resumes it)."""
        return self.coordinator.ensure_active_group(timeout_ms=timeout_ms)

    def tick(self) -> None:
        """What a worker's poll loop does: show liveness, and join, or rejoin when the group
        rebalances (briefly: the next tick resumes a join that has not completed)."""
        if self.coordinator.need_rejoin():
            self.join(timeout_ms=50)
        else:
            self.coordinator.poll_heartbeat()

    @property
    def generation(self) -> int:
        return self.coordinator.group_metadata().generation_id

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        if not offsets:
            return
        response = self.client._net.run(self.coordinator.commit_async, offsets)
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code:
                    raise Errors.for_code(partition.error_code)(f"{topic.name}-{partition.partition_index}")

    def close(self) -> None:
        """LeaveGroup, then stop the network client and its IO thread."""
        if self.closed:
            return
        self.closed = True
        try:
            self.coordinator.close(timeout_ms=5_000)
        finally:
            self.client.close()
