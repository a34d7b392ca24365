"""The groups part of a snapshot: ListGroups, DescribeGroups and OffsetFetch of all partitions.

Members' subscription and assignment bytes are decoded with the project's codec when the group
uses the consumer protocol, reading only the v0 prefix of a subscription as the broker does.
Kafka sends empty member bytes for a group that is not Stable, which means "not known now",
not an error; bytes that are there but do not decode leave the decoded columns null and add one
`snapshot_errors` row per group and payload kind.
"""

from __future__ import annotations

from offsets_platform.codec.consumer_protocol import decode_assignment, decode_subscription
from offsets_platform.codec.reader import DecodeError
from offsets_platform.kafka.admin_calls import (
    CALL_ERRORS, CONNECTION_ERRORS, SnapshotAdminClient, SnapshotRows, sendable,
)

CONSUMER_PROTOCOL = "consumer"


def collect_groups(admin: SnapshotAdminClient, rows: SnapshotRows, group_ids: list[str] | None = None) -> None:
    """Add every group's state, members and committed offsets to `rows`.

    Args:
        admin: a connected client.
        rows: where rows and per-group errors go.
        group_ids: the groups to snapshot; None lists every group of the cluster (ListGroups). An
            id no request can carry is an INVALID_GROUP_ID error row and is not asked about.
    """
    if group_ids is None:
        listed = rows.guarded("broker", None, "ListGroups", admin.list_groups) or []
        group_ids = sorted({group["group_id"] for group in listed})
    else:
        group_ids = [group_id for group_id in group_ids if sendable(rows, "group", group_id, "DescribeGroups")]
    described = _describe(admin, rows, list(group_ids))
    for group_id in group_ids:
        if group_id in described:
            _add_group(admin, rows, described[group_id])
        _add_committed_offsets(admin, rows, group_id)


def _describe(admin: SnapshotAdminClient, rows: SnapshotRows, group_ids: list[str]) -> dict:
    if not group_ids:
        return {}
    try:
        return admin.describe_groups(group_ids)
    except CONNECTION_ERRORS:
        raise
    except CALL_ERRORS:
        pass  # one group's coordinator lookup failed the batch: ask group by group
    described = {}
    for group_id in group_ids:
        described.update(rows.guarded("group", group_id, "DescribeGroups", admin.describe_groups, [group_id]) or {})
    return described


def _add_group(admin: SnapshotAdminClient, rows: SnapshotRows, group) -> None:
    if group.error_code:
        rows.error("group", group.group_id, "DescribeGroups", group.error_code, getattr(group, "error_message", None))
        return
    rows.add("group_snapshots", group=group.group_id, state=group.group_state, protocol_type=group.protocol_type,
             protocol=group.protocol_data, member_count=len(group.members),
             coordinator_id=admin.coordinator_of(group.group_id))
    failures: dict[str, list[str]] = {"DecodeSubscription": [], "DecodeAssignment": []}
    for member in group.members:
        topics, assigned = None, None
        if group.protocol_type == CONSUMER_PROTOCOL:
            context = f"group {group.group_id!r} member {member.member_id!r}"
            topics = _decoded(failures["DecodeSubscription"], _subscribed_topics, member.member_metadata, context)
            assigned = _decoded(failures["DecodeAssignment"], _assigned_partitions, member.member_assignment, context)
        rows.add("group_member_snapshots", group=group.group_id, member_id=member.member_id,
                 group_instance_id=member.group_instance_id, client_id=member.client_id,
                 client_host=member.client_host, subscribed_topics=topics, assigned_partitions=assigned,
                 subscription_bytes=member.member_metadata, assignment_bytes=member.member_assignment)
    for operation, messages in failures.items():
        if messages:
            rows.error("group", group.group_id, operation, "DecodeError", "; ".join(messages))


def _decoded(failures: list[str], decode, data: bytes | None, context: str):
    if not data:
        return None
    try:
        return decode(data, context)
    except DecodeError as error:
        failures.append(str(error))
        return None


def _subscribed_topics(data: bytes, context: str) -> list[str]:
    return decode_subscription(data, context)["topics"]


def _assigned_partitions(data: bytes, context: str) -> list[dict] | None:
    assignment = decode_assignment(data, context)
    if assignment is None:
        return None
    return [{"topic": topic, "partitions": sorted(partitions)}
            for topic, partitions in sorted(assignment["partitions"].items())]


def _add_committed_offsets(admin: SnapshotAdminClient, rows: SnapshotRows, group_id: str) -> None:
    # {group: None} asks for every partition the group committed (KIP-88), in one OffsetFetch.
    fetched = rows.guarded("group", group_id, "OffsetFetch", admin.list_group_offsets, {group_id: None})
    if fetched is None:
        return
    for tp, committed in sorted(fetched.get(group_id, {}).items()):
        if committed.offset < 0:  # the broker's "no committed offset"
            continue
        epoch = committed.leader_epoch
        rows.add("committed_offset_snapshots", group=group_id, topic=tp.topic, partition=tp.partition,
                 committed_offset=committed.offset, leader_epoch=epoch if epoch is not None and epoch >= 0 else None,
                 metadata=committed.metadata)
