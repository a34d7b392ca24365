"""A commit with a client-chosen retention time, as an OffsetCommit v2-v4 client sends it.

Kafka 4.3 still accepts these versions, and its coordinator stores commit time + retention (in a
Java long, so it may wrap) as the offset's legacy expire timestamp (OffsetMetadataManager). No
client the project uses sends a retention any more, so the request is built here with
kafka-python's message classes.
"""

from __future__ import annotations

from kafka.admin import KafkaAdminClient
from kafka.protocol.consumer.group import OffsetCommitRequest


def commit_with_retention(bootstrap: str, group: str, topic: str, partition: int, offset: int,
                          retention_ms: int) -> None:
    """Commit `offset` for `group` as a standalone committer (no generation, no member), asking
    Kafka to keep it `retention_ms` (any int64; -1 means the broker's offsets.retention.minutes)."""
    topic_type = OffsetCommitRequest.OffsetCommitRequestTopic
    partition_type = topic_type.OffsetCommitRequestPartition
    request = OffsetCommitRequest(
        max_version=4,  # the last version with a retention time
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        retention_time_ms=retention_ms,
        topics=[topic_type(name=topic, partitions=[partition_type(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")])])
    client = KafkaAdminClient(bootstrap_servers=[bootstrap], client_id="legacy-committer")
    try:
        manager = client._manager  # kafka-python has no public way to send an arbitrary request

        async def send():
            return await manager.send(request, node_id=await client._find_coordinator_id(group))

        response = manager.run(send)
    finally:
        client.close()
    [answer] = [p for t in response.topics for p in t.partitions]
    assert answer.error_code == 0, f"OffsetCommit v{response.version} of {group}: error {answer.error_code}"
