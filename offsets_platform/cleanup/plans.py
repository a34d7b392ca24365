"""Cleanup plans: what to remove, why, and the facts it rests on; immutable once written.

A plan is built from the gold and silver tables (see candidates.py for what is proposed; a share
group's state, which its DeleteGroups deletes too, from the log's records in bronze), gets an id
that is a hash of its whole content, and expires after `valid_hours`. Its rows in
`cleanup_plans` are only ever appended, never changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

import pyarrow as pa

from offsets_platform.views.candidates import DEFAULT_IDLE_HOURS, cleanup_candidates
from offsets_platform.lake import Lake
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.sql_literals import lake_string, lake_timestamp

PLANS = "cleanup_plans"
PLANS_LEASE = "cleanup-plans"
PLANS_LEASE_WAIT_S = 30.0  # a holder keeps it for the milliseconds of one check and one append
OFFSET_DELETE = "OffsetDelete"
DELETE_GROUPS = "DeleteGroups"
# an offset reset (reset_plans.py): an OffsetCommit, which Kafka's Admin calls alterConsumerGroupOffsets
# (alterStreamsGroupOffsets for a streams group), and a share group's AlterShareGroupOffsets
RESET_OFFSET = "AlterConsumerGroupOffsets"
RESET_SHARE_OFFSET = "AlterShareGroupOffsets"
RESET_ACTIONS = (RESET_OFFSET, RESET_SHARE_OFFSET)
DEFAULT_VALID_HOURS = 24


class PlanError(ValueError):
    """A plan is unknown, expired, already applied, or would be unsafe; the message says which."""


@dataclass(frozen=True)
class PlannedAction:
    action: str  # OFFSET_DELETE, DELETE_GROUPS or one of RESET_ACTIONS
    group: str
    topic: str | None
    partition: int | None
    reason: str
    facts: dict = field(compare=False)

    @property
    def action_id(self) -> str:
        """Stable across plans: the same removal has the same id."""
        return _digest([self.action, self.group, self.topic, self.partition])[:12]

    def describe(self) -> str:
        target = self.group if self.topic is None else f"{self.group} {self.topic}-{self.partition}"
        if self.action in RESET_ACTIONS:
            return f"{self.action} {target} to {self.facts.get('target_offset')}"
        return f"{self.action} {target}"


@dataclass(frozen=True)
class CleanupPlan:
    plan_id: str
    created_at: datetime
    expires_at: datetime
    created_by: str
    actions: tuple[PlannedAction, ...]

    def action(self, action_id: str) -> PlannedAction:
        for action in self.actions:
            if action.action_id == action_id:
                return action
        raise PlanError(f"plan {self.plan_id} has no action {action_id}")

    def expired(self, now: datetime | None = None) -> bool:
        return (now or datetime.now(timezone.utc)) >= self.expires_at


def build_plan(lake: Lake, created_by: str, *, idle_hours: int = DEFAULT_IDLE_HOURS,
               clean_early: tuple[str, ...] = (), valid_hours: int = DEFAULT_VALID_HOURS,
               now: datetime | None = None, emit: Callable[[str], None] = lambda line: None) -> CleanupPlan:
    """Propose OffsetDelete for stale offsets of unsubscribed topics (and every offset of the
    Empty or standalone groups in `clean_early`) and DeleteGroups for groups Empty longer than
    `idle_hours`, less what the audit shows removed since the models last ran (`emit` says how
    many). Raises PlanError when a requested action would be unsafe."""
    now = now or datetime.now(timezone.utc)
    candidates = cleanup_candidates(lake, idle_hours=idle_hours)
    groups = {row["group_id"]: row for row in lake.read_arrow("group_state").to_pylist()}
    subscriptions = _subscriptions(lake)
    lag = {(r["group_id"], r["topic"], r["partition_id"]): r for r in lake.read_arrow("consumer_lag").to_pylist()}
    actions = [_offset_delete(row, groups, subscriptions, lag, "the group no longer subscribes to the topic")
               for row in candidates.offset_deletes]
    actions += _clean_early(lake, clean_early, groups, subscriptions, lag)
    committed = _committed_offsets(lake)
    share_state = share_state_partitions(lake) if any(
        row["classification"] == "share" for row in candidates.group_deletes) else {}
    actions += [_delete_group(row, idle_hours, committed.get(row["group_id"], {}),
                              _share_facts(groups.get(row["group_id"], {}), share_state))
                for row in candidates.group_deletes]
    actions, done = _unique(actions), removed_since_the_models_ran(lake)
    left_out = [action for action in actions if action.action_id in done]
    actions = [action for action in actions if action.action_id not in done]
    if left_out:
        emit(f"left out {len(left_out)} removals the audit shows done since the models last ran "
             f"({', '.join(action.describe() for action in left_out[:5])}{', ...' if len(left_out) > 5 else ''}): "
             "the tables still show what they removed until the next refresh")
    check_safe(actions, groups, subscriptions)
    return new_plan(actions, created_by, valid_hours, now)


def new_plan(actions: list[PlannedAction], created_by: str, valid_hours: int, now: datetime) -> CleanupPlan:
    """A plan of `actions` made at `now`: its id a hash of its whole content."""
    created_at = now.replace(microsecond=0)
    expires_at = created_at + timedelta(hours=valid_hours)
    plan_id = _digest([created_at.isoformat(), expires_at.isoformat(), created_by,
                       [[a.action_id, a.reason, a.facts] for a in actions]])[:16]
    return CleanupPlan(plan_id, created_at, expires_at, created_by, tuple(actions))


def removed_since_the_models_ran(lake: Lake) -> set[str]:
    """The action ids of the removals the audit shows done (deleted, by a plan's apply or by
    delete-offsets and delete-groups) after the models last ran. The gold tables a plan reads show
    what those removed until the next refresh, so a plan must not propose them again; a removal
    done before that run is in the tables already (gone, or committed again since)."""
    from offsets_platform.cleanup.approvals import AUDIT  # both import this module
    from offsets_platform.cleanup.audit import DELETED
    from offsets_platform.views.from_lake import last_refresh

    facts_at = last_refresh(lake)
    since = f" and at > {lake_timestamp(facts_at)}" if facts_at else ""
    rows = lake.query(f"""select distinct action, "group", topic, "partition" from {AUDIT}
                          where outcome = {lake_string(DELETED)}{since}""", AUDIT).to_pylist()
    return {PlannedAction(row["action"], row["group"], row["topic"], row["partition"], "", {}).action_id
            for row in rows}


def check_safe(actions: list[PlannedAction], groups: dict[str, dict], subscriptions: dict[str, set[str]]) -> None:
    """The rules a plan never breaks. Kafka itself refuses both when applied (GROUP_SUBSCRIBED_TO_TOPIC,
    NON_EMPTY_GROUP); checking them here fails the plan with a clear message instead of storing
    actions that no approval could make applicable."""
    for action in actions:
        if action.action == OFFSET_DELETE and action.topic in subscriptions.get(action.group, set()):
            raise PlanError(f"unsafe: {action.describe()}: a live member of {action.group} subscribes to "
                            f"{action.topic}")
        members = (groups.get(action.group) or {}).get("count_members") or 0
        if action.action == DELETE_GROUPS and members > 0:
            raise PlanError(f"unsafe: {action.describe()}: the group has {members} members")


def save_plan(lake: Lake, plan: CleanupPlan, *, lease_wait_s: float = PLANS_LEASE_WAIT_S) -> None:
    """Append the plan's actions once (a plan with no action is not stored: nothing to approve).

    The check that the plan is not stored yet and the append run under the lake's
    "cleanup-plans" lease (offsets_platform.lake.lease): two runs saving the same plan at once
    would otherwise both find it missing and store it twice.

    Raises:
        PlanError: the plan is already stored.
        LeaseBusy: another run kept the lease for longer than `lease_wait_s`.
    """
    with hold_lease(lake.leases, PLANS_LEASE, f"saving plan {plan.plan_id}", wait_s=lease_wait_s):
        _append_new_plan(lake, plan)


def _append_new_plan(lake: Lake, plan: CleanupPlan) -> None:
    if not plan.actions:
        return
    if lake.query(f"select count(*) as n from {PLANS} where plan_id = {lake_string(plan.plan_id)}",
                  PLANS).column("n")[0].as_py():
        raise PlanError(f"plan {plan.plan_id} is already stored; plans never change")
    rows = [{"plan_id": plan.plan_id, "action_id": a.action_id, "action": a.action, "group": a.group,
             "topic": a.topic, "partition": a.partition, "reason": a.reason,
             "facts": json.dumps(a.facts, sort_keys=True, default=str), "created_at": plan.created_at,
             "expires_at": plan.expires_at, "created_by": plan.created_by} for a in plan.actions]
    lake.append(PLANS, pa.Table.from_pylist(rows))


def load_plan(lake: Lake, plan_id: str) -> CleanupPlan:
    rows = lake.query(
        f"select * from {PLANS} where plan_id = {lake_string(plan_id)} "
        "order by action, \"group\", topic, \"partition\"", PLANS).to_pylist()
    if not rows:
        raise PlanError(f"unknown plan {plan_id!r}")
    actions = tuple(PlannedAction(r["action"], r["group"], r["topic"], r["partition"], r["reason"],
                                  json.loads(r["facts"])) for r in rows)
    first = rows[0]
    return CleanupPlan(plan_id, first["created_at"], first["expires_at"], first["created_by"], actions)


def _subscriptions(lake: Lake) -> dict[str, set[str]]:
    subscribed: dict[str, set[str]] = {}
    for row in lake.read_arrow("group_subscriptions").to_pylist():
        subscribed.setdefault(row["group_id"], set()).add(row["topic"])
    return subscribed


def _offset_delete(row: dict, groups: dict, subscriptions: dict, lag: dict, reason: str) -> PlannedAction:
    """`row`: an offset as the candidates name it (group_id, topic, partition_id, committed_offset, ...);
    `groups`, `lag`: group_state and consumer_lag rows by their keys."""
    group = groups.get(row["group_id"], {})
    lagging = lag.get((row["group_id"], row["topic"], row["partition_id"]), {})
    return PlannedAction(OFFSET_DELETE, row["group_id"], row["topic"], row["partition_id"], reason, facts={
        "group_state": group.get("state"),
        "member_count": group.get("count_members"),  # the facts' name, as plans stored it
        "subscribed_topics": sorted(subscriptions.get(row["group_id"], ())),
        "committed_offset": row["committed_offset"],
        "commit_time": row.get("estimated_committed_at"),
        "lag_messages": lagging.get("lag_messages"),
        # if the group came back with auto.offset.reset=latest, these messages would be skipped
        "messages_lost_on_reset": lagging.get("lag_messages"),
        "expires_at": row.get("expires_at"),
    })


def _clean_early(lake: Lake, chosen: tuple[str, ...], groups: dict, subscriptions: dict,
                 lag: dict) -> list[PlannedAction]:
    if not chosen:
        return []
    actions = []
    # with the names the candidates give them, which _offset_delete reads
    offsets = lake.query('''select group_id, topic, partition_id, committed_offset,
                                   estimated_committed_at, expires_at from expirable_offsets''',
                         "expirable_offsets").to_pylist()
    for name in chosen:
        group = groups.get(name)
        if group is None:
            raise PlanError(f"cannot clean {name!r} early: no such group in group_state")
        if group["state"] != "Empty" or (group["count_members"] or 0) > 0:
            raise PlanError(f"cannot clean {name!r} early: it is {group['state']} with "
                            f"{group['count_members']} members; only Empty or standalone groups can be")
        reason = f"the operator chose to clean this {group['classification']} group early (it is Empty)"
        actions += [_offset_delete(row, groups, subscriptions, lag, reason) for row in offsets
                    if row["group_id"] == name]
    return actions


def _delete_group(row: dict, idle_hours: int, offsets: dict[str, int], share_facts: dict) -> PlannedAction:
    return PlannedAction(DELETE_GROUPS, row["group_id"], None, None,
                         f"the group has been Empty for more than {idle_hours} h", facts={
                             "group_state": row["state"], "state_since": row["state_entered_at"],
                             "classification": row["classification"],
                             "committed_offsets": row["committed_offsets"], "member_count": 0,
                             # a standalone consumer stays Empty while it commits: apply compares these
                             "offsets": offsets, **share_facts})


def _share_facts(group: dict, share_state: dict[str, list[str]]) -> dict:
    """A share group keeps no committed offsets, but DeleteGroups also deletes its state in
    `__share_group_state` (the share-partition start offsets; GroupCoordinatorService.deleteShareGroups):
    the plan names those share partitions, and apply checks that no other has state now. Unknown
    (None) for a group the log has no record of (seen only by snapshots)."""
    if group.get("classification") != "share":
        return {}
    known = group.get("log_kind") == "share"
    return {"share_partitions": share_state.get(group["group_id"], []) if known else None}


def share_state_partitions(lake: Lake) -> dict[str, list[str]]:
    """Share group -> the share partitions (as `offset_key` names them) whose state Kafka keeps
    for it, per the group's latest ShareGroupStatePartitionMetadata record (type 15) in the log:
    the initialized and initializing ones, which DeleteGroups deletes
    (GroupMetadataManager.shareGroupBuildPartitionDeleteRequest). A group without that record, or
    whose record is a tombstone, has none."""
    if not lake.exists("consumer_group_records"):
        return {}
    rows = lake.query("""select "group", tombstone, value_json from consumer_group_records
                         where record_type = 'share_group_state_partition_metadata'
                         order by source_partition, source_offset""", "consumer_group_records").to_pylist()
    latest = {row["group"]: row for row in rows}  # a group's records are in one partition, in order
    state = {}
    for group, row in latest.items():
        value = {} if row["tombstone"] else json.loads(row["value_json"])
        topics = value.get("initialized_topics", []) + value.get("initializing_topics", [])
        state[group] = sorted({offset_key(t["topic_name"], p) for t in topics for p in t["partitions"]})
    return state


def facts_text(facts: dict) -> str:
    """key=value, in the order the plan stored them; a partition map as its number of entries, a
    list as its items in brackets (no quotes), a truth value as yes or no."""
    return ", ".join(f"{key}={_fact_text(value)}" for key, value in facts.items() if value is not None) \
        or "none recorded"


def _fact_text(value: object) -> str:
    if isinstance(value, dict):
        return f"{len(value)} partitions"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(map(str, value)) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def offset_key(topic: str, partition: int) -> str:
    """How a plan's facts name a partition (JSON keys are strings)."""
    return f"{topic}:{partition}"


def _committed_offsets(lake: Lake) -> dict[str, dict[str, int]]:
    offsets: dict[str, dict[str, int]] = {}
    columns = ["group_id", "topic", "partition_id", "committed_offset"]
    for row in lake.read_arrow("committed_offsets", columns=columns).to_pylist():
        offsets.setdefault(row["group_id"], {})[offset_key(row["topic"], row["partition_id"])] = row["committed_offset"]
    return offsets


def _unique(actions: list[PlannedAction]) -> list[PlannedAction]:
    seen, unique = set(), []
    for action in actions:
        if action.action_id not in seen:
            seen.add(action.action_id)
            unique.append(action)
    return unique


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
