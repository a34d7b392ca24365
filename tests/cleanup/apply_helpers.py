"""Helpers for the apply tests: approved plans built from a group's live state, the audit of a
plan, and a record of the deletions sent. Not a test module (no `test_` prefix)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, CleanupPlan, PlannedAction, offset_key, save_plan
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.lake import Lake
from offsets_platform.settings import KafkaConnection

QUIET = {"emit": lambda line: None}


def approved_plan(lake: Lake, actions: list[PlannedAction]) -> CleanupPlan:
    """A plan of `actions`, stored and approved as a whole by alice."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    plan = CleanupPlan(uuid.uuid4().hex[:16], now, now + timedelta(hours=1), "test", tuple(actions))
    save_plan(lake, plan)
    approve(lake, plan.plan_id, "alice")
    return plan


def delete_group_action(connection: KafkaConnection, group: str) -> PlannedAction:
    """DeleteGroups of an Empty group, with the facts apply re-checks (no members, its offsets now)."""
    live = _live(connection, group)
    assert live.state == "Empty" and live.member_count == 0, live
    offsets = {offset_key(topic, partition): offset for (topic, partition), offset in live.committed_offsets.items()}
    return PlannedAction(DELETE_GROUPS, group, None, None, "idle", {"member_count": 0, "offsets": offsets})


def offset_delete_actions(connection: KafkaConnection, group: str, topic: str) -> list[PlannedAction]:
    """OffsetDelete of every committed offset of `topic` in `group`, with the facts apply re-checks."""
    live = _live(connection, group)
    return [PlannedAction(OFFSET_DELETE, group, t, p, "stale", {
                "member_count": live.member_count, "committed_offset": offset,
                "subscribed_topics": sorted(live.subscribed_topics or ())})
            for (t, p), offset in sorted(live.committed_offsets.items()) if t == topic]


def plan_audit(lake: Lake, plan_id: str) -> list[dict]:
    """The plan's cleanup_audit rows, oldest first."""
    if not lake.exists("cleanup_audit"):
        return []
    rows = [row for row in lake.read_arrow("cleanup_audit").to_pylist() if row["plan_id"] == plan_id]
    return sorted(rows, key=lambda row: row["at"])


def listed_groups(connection: KafkaConnection) -> set[str]:
    with open_admin(connection, 15, 15) as admin:
        return {group["group_id"] for group in admin.list_groups()}


def committed(connection: KafkaConnection, group: str) -> dict[tuple[str, int], int]:
    return _live(connection, group).committed_offsets


def record_sends(monkeypatch) -> list[tuple]:
    """From now on, every OffsetDelete and DeleteGroups apply sends is appended to the returned list
    (and still sent)."""
    sent: list[tuple] = []
    real_offsets, real_groups = group_calls.delete_offsets, group_calls.delete_groups

    def delete_offsets(admin, group, partitions):
        partitions = list(partitions)
        sent.append(("OffsetDelete", group, tuple(partitions)))
        return real_offsets(admin, group, partitions)

    def delete_groups(admin, groups):
        groups = list(groups)
        sent.append(("DeleteGroups", tuple(groups)))
        return real_groups(admin, groups)

    monkeypatch.setattr(group_calls, "delete_offsets", delete_offsets)
    monkeypatch.setattr(group_calls, "delete_groups", delete_groups)
    return sent


def _live(connection: KafkaConnection, group: str) -> group_calls.LiveGroupState:
    with open_admin(connection, 15, 15) as admin:
        return group_calls.live_group(admin, group)
