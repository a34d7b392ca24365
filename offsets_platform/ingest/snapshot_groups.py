"""The groups part of a snapshot: ListGroups, the describe API of each group's type, OffsetFetch.

ListGroups (v5) gives every group's type and state; each group is then described by the API of
its type (see `admin_describe`): DescribeGroups answers "not found" for a KIP-848, streams or
share group, which must not make it look Dead or standalone. A group that could not be
described still gets its row from ListGroups (type and state, member_count null), besides the
error row: a group ListGroups lists as Stable has members, even when nobody could say which.

Classic members' subscription and assignment bytes are decoded with the project's codec when the
group uses the consumer protocol, reading only the v0 prefix of a subscription as the broker
does. Kafka sends empty member bytes for a group that is not Stable, which means "not known now",
not an error; bytes that are there but do not decode leave the decoded columns null and add one
`snapshot_errors` row per group and payload kind.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable

from offsets_platform.kafka.admin_calls import (
    CALL_ERRORS, CONNECTION_ERRORS, SnapshotAdminClient,
)
from offsets_platform.ingest.snapshot_rows import SnapshotRows, sendable
from offsets_platform.kafka.admin_describe import OPERATIONS, GroupDescription, describe_groups

NOT_FOUND = "GROUP_ID_NOT_FOUND"
MISSING_FROM_RESPONSE = "MISSING_FROM_RESPONSE"


def collect_groups(admin: SnapshotAdminClient, rows: SnapshotRows, group_ids: list[str] | None = None,
                   known_groups: Iterable[str] = ()) -> None:
    """Add every group's type, state, members and committed offsets to `rows`.

    Args:
        admin: a connected client.
        rows: where rows and per-group errors go.
        group_ids: the groups to snapshot; None lists every group of the cluster (ListGroups). An
            id no request can carry is an INVALID_GROUP_ID error row and is not asked about.
        known_groups: with `group_ids` None, groups known elsewhere (the lake) that are asked
            about by name when ListGroups does not list them. ListGroups alone cannot tell a
            deleted group from one it missed (a partition moving between coordinators is listed
            by neither, GroupCoordinatorService.listGroups; an ACL hides a group), so only a
            group no describe API knows is recorded as gone (GROUP_ID_NOT_FOUND).
    """
    listed: dict[str, dict] = {}
    if group_ids is None:
        answer = rows.guarded("broker", None, "ListGroups", admin.list_groups)
        listed = {group["group_id"]: group for group in answer or []}
        unlisted = set(known_groups) - set(listed) if answer is not None else set()
        group_ids = sorted(listed) + sorted(g for g in unlisted if sendable(rows, "group", g, "DescribeGroups"))
    else:
        group_ids = [group_id for group_id in group_ids if sendable(rows, "group", group_id, "DescribeGroups")]
    types = {group_id: group.get("group_type") for group_id, group in listed.items()}
    described = _describe(admin, rows, list(group_ids), types)
    for group_id in group_ids:
        description = described.get(group_id)
        if description is not None and description.exists and not description.error_code:
            _add_group(admin, rows, description)
        else:
            if description is not None:
                _error(rows, description)
            if group_id in listed:
                _add_listed(admin, rows, listed[group_id])
        _add_committed_offsets(admin, rows, group_id)


def _describe(admin: SnapshotAdminClient, rows: SnapshotRows, group_ids: list[str],
              types: dict[str, str | None]) -> dict[str, GroupDescription]:
    if not group_ids:
        return {}
    try:
        return describe_groups(admin, group_ids, types)
    except CONNECTION_ERRORS:
        raise
    except CALL_ERRORS:
        pass  # one group's coordinator lookup failed the batch: ask group by group
    described = {}
    for group_id in group_ids:
        operation = OPERATIONS.get(types.get(group_id), "DescribeGroups")
        described.update(rows.guarded("group", group_id, operation, describe_groups, admin, [group_id], types) or {})
    return described


def _error(rows: SnapshotRows, description: GroupDescription) -> None:
    if description.error_code:
        rows.error("group", description.group, description.operation, description.error_code,
                   description.error_message)
    else:  # no describe API knows the group (deleted since ListGroups, or never there)
        rows.error("group", description.group, "DescribeGroups", NOT_FOUND,
                   "no describe API (classic, consumer, streams, share) knows the group")


def _add_listed(admin: SnapshotAdminClient, rows: SnapshotRows, listed: dict) -> None:
    rows.add("group_snapshots", group=listed["group_id"], group_type=listed.get("group_type") or None,
             state=listed.get("group_state") or None, protocol_type=listed.get("protocol_type"), protocol=None,
             member_count=None, coordinator_id=admin.coordinator_of(listed["group_id"]))


def _add_group(admin: SnapshotAdminClient, rows: SnapshotRows, group: GroupDescription) -> None:
    rows.add("group_snapshots", group=group.group, group_type=group.group_type, state=group.state,
             protocol_type=group.protocol_type, protocol=group.protocol, member_count=len(group.members),
             coordinator_id=admin.coordinator_of(group.group))
    failures: dict[str, list[str]] = {"DecodeSubscription": [], "DecodeAssignment": []}
    for member in group.members:
        for operation, message in member.decode_errors:
            failures[operation].append(message)
        rows.add("group_member_snapshots", group=group.group, member_id=member.member_id,
                 group_instance_id=member.group_instance_id, client_id=member.client_id,
                 client_host=member.client_host,
                 subscribed_topics=list(member.subscribed_topics) if member.subscribed_topics is not None else None,
                 subscribed_topic_regex=member.subscribed_topic_regex, assigned_partitions=member.assigned_partitions,
                 subscription_bytes=member.subscription_bytes, assignment_bytes=member.assignment_bytes)
    for operation, messages in failures.items():
        if messages:
            rows.error("group", group.group, operation, "DecodeError", "; ".join(messages))


def _add_committed_offsets(admin: SnapshotAdminClient, rows: SnapshotRows, group_id: str) -> None:
    # {group: None} asks for every partition the group committed (KIP-88), in one OffsetFetch.
    # fetched_at is taken before it is sent: a commit earlier than that is in the answer.
    fetched_at = datetime.now(timezone.utc)
    fetched = rows.guarded("group", group_id, "OffsetFetch", admin.list_group_offsets, {group_id: None})
    if fetched is None:
        return
    if group_id not in fetched:
        # An answer must name every group it was asked about. Without an error row this group
        # would look fetched with no offsets, and the models would read its offsets as removed.
        rows.error("group", group_id, "OffsetFetch", MISSING_FROM_RESPONSE, "the broker's answer did not mention this group")
        return
    for tp, committed in sorted(fetched[group_id].items()):
        if committed.offset < 0:  # the broker's "no committed offset"
            continue
        epoch = committed.leader_epoch
        rows.add("committed_offset_snapshots", group=group_id, topic=tp.topic, partition=tp.partition,
                 committed_offset=committed.offset, leader_epoch=epoch if epoch is not None and epoch >= 0 else None,
                 metadata=committed.metadata, fetched_at=fetched_at)
