"""Applying the approved actions of a cleanup plan, with a live re-check before each group.

Only approved actions of an unexpired plan are applied. Under four-eyes (the default, see
approvals.py) an approval by the plan's own author does not count: checked again here, as the
configuration may have changed since the approval, or an older version recorded it without the
check. Actions the audit already shows as done are not repeated, so applying again is safe.
An offset reset (reset_plans.py) commits the offsets the plan resolved, in one OffsetCommit per
group (AlterShareGroupOffsets for a share group), and is skipped when the group is no longer
inactive or has moved from the offset the plan saw.
Right before a group's actions the live state is read again (the describe API of the group's
type: DescribeGroups, ConsumerGroupDescribe, StreamsGroupDescribe or ShareGroupDescribe; then
OffsetFetch, and DescribeShareGroupOffsets for a share group), and an action whose facts changed is
skipped with the reason: the group gained members (of any kind: a KIP-848 group is never read as
Dead because DescribeGroups does not know it), a member subscribes to the topic again, the group
committed again, or a share group has state on share partitions its DeleteGroups did not name
when planned (DeleteGroups deletes that state too). A group Kafka does not let this principal
read is skipped with Kafka's error and the ACL to add. OffsetDelete goes per group, DeleteGroups
in batches per coordinator.

Each request is audited before it is sent (an intent) and after (Kafka's answer, per partition or
group, with Kafka's error name); an apply first settles the intents an interrupted apply of the
plan left without an answer (audit.py, reconcile.py). One apply at a time runs on a lake: it holds
the lake's "cleanup-apply" lease (offsets_platform.lake.lease) from reading the audit to its last
row, so two applies never both see an action as not done and send it twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.approvals import AUDIT, approved_actions, self_approval_permitted
from offsets_platform.cleanup.audit import COMMITTED, DELETED, DONE, DRY_RUN, FAILED, SENDING, SKIPPED, PlanAudit
from offsets_platform.cleanup.plans import (
    DELETE_GROUPS, OFFSET_DELETE, RESET_ACTIONS, RESET_OFFSET, RESET_SHARE_OFFSET, PlannedAction, PlanError, load_plan,
    offset_key,
)
from offsets_platform.cleanup.reconcile import reconcile_intents
from offsets_platform.cleanup.reset_plans import INACTIVE_STATES
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.lake import Lake
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, KafkaConnection, os_user

APPLY_LEASE = "cleanup-apply"
# how long an apply waits for another one on the same lake before giving up with the holder's name
DEFAULT_LEASE_WAIT_S = 30.0


@dataclass
class ApplyResult:
    plan_id: str
    dry_run: bool
    outcomes: list[dict] = field(default_factory=list)  # the audit rows written, but the intents ('sending')

    def count(self, outcome: str) -> int:
        return sum(1 for row in self.outcomes if row["outcome"] == outcome)

    @property
    def refused(self) -> int:
        """Actions Kafka answered with an error: a deletion it refused ('failed'), or a group whose
        re-check read it refused ('skipped' with Kafka's error, see `_skip_unreadable`)."""
        return sum(1 for row in self.outcomes
                   if row["outcome"] == FAILED or (row["outcome"] == SKIPPED and row["error"]))

    @property
    def failed(self) -> bool:
        return self.refused > 0


def done_actions(lake: Lake, plan_id: str) -> set[str]:
    """Actions of the plan the audit shows as done: deleted, or an offset reset committed (never
    sent again)."""
    rows = lake.query(f"select distinct action_id from {AUDIT} where plan_id = {lake_string(plan_id)} "
                      f"and outcome in ({', '.join(map(lake_string, DONE))})", AUDIT).to_pylist()
    return {row["action_id"] for row in rows}


def apply_plan(lake: Lake, connection: KafkaConnection, plan_id: str, *, dry_run: bool = False,
               requested_by: str | None = None, now: datetime | None = None,
               emit: Callable[[str], None] = print, timeout_s: float = 15.0,
               lease_wait_s: float = DEFAULT_LEASE_WAIT_S, allow_self_approval: bool | None = None) -> ApplyResult:
    """Apply (or with `dry_run`, only show and audit) the plan's approved, not yet done actions,
    after settling the intents an interrupted apply of the plan left without an answer.

    `allow_self_approval` None means "as $OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL says" (default no):
    then an action approved only by the plan's author is skipped, with the reason in the audit.

    Raises:
        PlanError: the plan is unknown, expired, or has no approved action (under four-eyes, none
            approved by someone other than its author).
        LeaseBusy: another apply on this lake ran for longer than `lease_wait_s`.
        BrokerUnreachable: the cluster did not answer.
    """
    plan = load_plan(lake, plan_id)
    audit = PlanAudit(lake, plan_id, connection.bootstrap_servers, requested_by or os_user())
    with hold_lease(lake.leases, APPLY_LEASE, f"apply of plan {plan_id}", wait_s=lease_wait_s, emit=emit):
        # Settled even for an expired plan: the audit must say what its last apply did.
        unresolved = audit.unresolved_intents()
        if unresolved and dry_run:
            emit(f"plan {plan_id}: {len(unresolved)} deletions of an interrupted apply have no recorded outcome; "
                 "an apply (not a dry run) asks the broker what happened first")
        elif unresolved:
            emit(f"plan {plan_id}: {len(unresolved)} deletions of an interrupted apply have no recorded outcome; "
                 "asking the broker what happened")
            with open_admin(connection, timeout_s, timeout_s) as admin:
                reconcile_intents(admin, plan, audit, unresolved, emit)
        if plan.expired(now):
            raise PlanError(f"plan {plan_id} expired at {plan.expires_at:%Y-%m-%d %H:%M} UTC; build a new plan")
        four_eyes = not self_approval_permitted(allow_self_approval)
        any_approval = approved_actions(lake, plan)
        approved = approved_actions(lake, plan, by_author=not four_eyes)
        if not approved and any_approval:
            raise PlanError(f"plan {plan_id} is approved only by its author {plan.created_by}; four-eyes: another "
                            f"person approves it (where one person may do both, set {ALLOW_SELF_APPROVAL_ENV}=true)")
        if not approved:
            raise PlanError(f"plan {plan_id} has no approved action; approve it first")
        done = done_actions(lake, plan_id)
        todo = [a for a in plan.actions if a.action_id in approved and a.action_id not in done]
        self_approved = [a for a in plan.actions
                         if a.action_id in any_approval and a.action_id not in approved and a.action_id not in done]
        emit(f"plan {plan_id}: {len(todo)} approved actions to {'show' if dry_run else 'apply'}"
             f" ({len(done)} already done, {len(plan.actions) - len(any_approval)} not approved"
             + (f", {len(self_approved)} approved only by the plan's author" if self_approved else "") + ")")
        if self_approved:
            _skip_self_approved(audit, plan.created_by, self_approved, dry_run, emit)
        with open_admin(connection, timeout_s, timeout_s) as admin:
            by_group: dict[str, list[PlannedAction]] = {}
            for action in todo:
                by_group.setdefault(action.group, []).append(action)
            groups_to_delete = []
            for group, actions in by_group.items():
                try:
                    live = group_calls.live_group(admin, group)
                except group_calls.GroupCallError as error:
                    _skip_unreadable(audit, actions, error, dry_run, emit)
                    continue
                ready = [a for a in actions if not _skip_if_changed(audit, a, live)]
                offsets = [a for a in ready if a.action == OFFSET_DELETE]
                if offsets:
                    _delete_offsets(admin, group, offsets, audit, dry_run, emit)
                resets = [a for a in ready if a.action == RESET_OFFSET]
                if resets:
                    _reset_offsets(admin, group, resets, audit, dry_run, emit)
                share_resets = [a for a in ready if a.action == RESET_SHARE_OFFSET]
                if share_resets:
                    _reset_share_offsets(admin, group, share_resets, audit, dry_run, emit)
                groups_to_delete += [a for a in ready if a.action == DELETE_GROUPS]
            if groups_to_delete:
                _delete_groups(admin, groups_to_delete, audit, dry_run, emit)
    return ApplyResult(plan_id, dry_run, [row for row in audit.rows if row["outcome"] != SENDING])


def _delete_offsets(admin, group: str, actions: list[PlannedAction], audit: PlanAudit, dry_run: bool, emit) -> None:
    partitions = [(a.topic, a.partition) for a in actions]
    _send_for_partitions("OffsetDelete", DELETED, f"partitions={partitions}", group, actions, audit, dry_run, emit,
                         lambda: group_calls.delete_offsets(admin, group, partitions))


def _reset_offsets(admin, group: str, actions: list[PlannedAction], audit: PlanAudit, dry_run: bool, emit) -> None:
    """Commit the planned offsets, exactly the numbers the plan resolved, in one OffsetCommit."""
    offsets = {(a.topic, a.partition): a.facts["target_offset"] for a in actions}
    _send_for_partitions("OffsetCommit", COMMITTED, f"offsets={offsets}", group, actions, audit, dry_run, emit,
                         lambda: group_calls.commit_offsets(admin, group, offsets))


def _reset_share_offsets(admin, group: str, actions: list[PlannedAction], audit: PlanAudit, dry_run: bool,
                         emit) -> None:
    """Set the planned share-partition start offsets in one AlterShareGroupOffsets."""
    offsets = {(a.topic, a.partition): a.facts["target_offset"] for a in actions}
    _send_for_partitions("AlterShareGroupOffsets", COMMITTED, f"offsets={offsets}", group, actions, audit, dry_run,
                         emit, lambda: group_calls.alter_share_offsets(admin, group, offsets))


def _send_for_partitions(request: str, done: str, what: str, group: str, actions: list[PlannedAction],
                         audit: PlanAudit, dry_run: bool, emit, send) -> None:
    """Audit the intent, send one request about some partitions of `group` (`send()`: one outcome per
    partition), audit Kafka's answers: `done`, or 'failed' with Kafka's error."""
    if dry_run:
        emit(f"  would send {request} group={group} {what}")
        audit.record(actions, DRY_RUN, None, f"{request} not sent (dry run)")
        return
    by_partition = {(a.topic, a.partition): a for a in actions}
    intents = audit.intents(actions, f"{request} of {len(actions)} partitions of {group}")
    # a group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) comes back on every partition
    answered = [(by_partition[(o.topic, o.partition)], FAILED if o.error else done, o.error, o.message)
                for o in send()]
    _record_answers(audit, answered, intents, emit)


def _delete_groups(admin, actions: list[PlannedAction], audit: PlanAudit, dry_run: bool, emit) -> None:
    if dry_run:
        emit(f"  would send DeleteGroups groups={[a.group for a in actions]}")
        audit.record(actions, DRY_RUN, None, "DeleteGroups not sent (dry run)")
        return
    by_group = {a.group: a for a in actions}
    intents = audit.intents(actions, f"DeleteGroups of {len(actions)} groups")
    answered = [(by_group[o.group], FAILED if o.error else DELETED, o.error, o.message)
                for o in group_calls.delete_groups(admin, list(by_group))]
    _record_answers(audit, answered, intents, emit)


def _record_answers(audit: PlanAudit, answered: list, intents: dict[str, str], emit) -> None:
    """Audit Kafka's answers. A request whose connection was lost before the answer may have been
    carried out or not: its intent stays open, and the next apply asks the broker which (an
    outcome 'failed' would have it sent again, or count a deletion that happened as failed)."""
    known = [answer for answer in answered if answer[3] != group_calls.CONNECTION_LOST]
    audit.outcomes(known, intents)
    for action, _, error, message in answered:
        if message == group_calls.CONNECTION_LOST:
            emit(f"  {action.describe()}: {message}; the next apply of the plan asks the broker what happened")
        else:
            emit(f"  {action.describe()}: {error or 'Successful'}")


def _skip_self_approved(audit: PlanAudit, author: str, actions: list[PlannedAction], dry_run: bool, emit) -> None:
    """Skip (and, unless a dry run, audit why) actions whose only approval is by the plan's author.
    A dry run does not audit them: a 'skipped' row counts as applied, and would then keep another
    person from approving the plan."""
    reason = (f"approved only by {author}, who wrote the plan; four-eyes needs another person's approval "
              f"(or {ALLOW_SELF_APPROVAL_ENV}=true)")
    for action in actions:
        emit(f"  {action.describe()}: skipped: {reason}")
    if not dry_run:
        audit.record(actions, SKIPPED, None, reason)


def _skip_unreadable(audit: PlanAudit, actions: list[PlannedAction], error: group_calls.GroupCallError,
                     dry_run: bool, emit) -> None:
    """Skip (and, unless a dry run, audit with Kafka's error) a group's actions when the broker
    answered the live re-check's read of the group with an error: without the re-check nothing is
    sent. For an authorization error the message names the ACL to add; the other groups go on."""
    detail = f"not sent: reading the group failed: {error.message}"
    if error.error == "GROUP_AUTHORIZATION_FAILED":
        # the reads need Describe; the deletions themselves need Delete, which allows Describe too
        detail += f" Deleting needs Delete on Group '{error.group}', which also allows that Describe."
    for action in actions:
        emit(f"  {action.describe()}: skipped: {error.error}: {error.message}")
    if not dry_run:
        audit.record(actions, SKIPPED, error.error, detail)


def _skip_if_changed(audit: PlanAudit, action: PlannedAction, live) -> bool:
    """Skip (and audit why) an action whose facts no longer hold on the live cluster."""
    reason = changed_facts(action, live)
    if reason:
        audit.record([action], SKIPPED, None, reason)
    return reason is not None


def changed_facts(action: PlannedAction, live) -> str | None:
    """Why the action no longer rests on its facts, or None when they still hold."""
    planned_members = action.facts.get("member_count") or 0
    if live.member_count > planned_members and (action.action == DELETE_GROUPS or planned_members == 0):
        return f"the group gained members ({live.member_count} now, {planned_members} when planned)"
    if action.action in RESET_ACTIONS:
        return _changed_reset_facts(action, live)
    if action.action == OFFSET_DELETE:
        if live.subscribed_topics is not None and action.topic in live.subscribed_topics:
            return f"a member of {action.group} subscribes to {action.topic} again"
        if live.member_count and live.subscribed_topics is None:
            return "the live members' subscriptions cannot be read"
        committed = live.committed_offsets.get((action.topic, action.partition))
        if committed is None:
            return "the offset is no longer committed"
        if committed != action.facts.get("committed_offset"):
            return (f"the group committed again (offset {committed} now, "
                    f"{action.facts.get('committed_offset')} when planned)")
    if action.action == DELETE_GROUPS:
        if live.state != "Empty":
            return f"the group is {live.state} now, not Empty"
        planned = action.facts.get("offsets")
        now = {offset_key(topic, partition): offset for (topic, partition), offset in live.committed_offsets.items()}
        if planned is not None and now != planned:
            changed = sorted(key for key in {*planned, *now} if planned.get(key) != now.get(key))
            return ("the group's committed offsets changed since the plan (it committed again): "
                    + ", ".join(f"{key} {planned.get(key, 'none')} then, {now.get(key, 'none')} now"
                                for key in changed[:3])
                    + (f" and {len(changed) - 3} more" if len(changed) > 3 else ""))
        # a share group's state (share-partition start offsets), which DeleteGroups deletes too
        planned_share = action.facts.get("share_partitions")
        new_share = sorted({offset_key(topic, partition) for topic, partition in live.share_start_offsets}
                           - set(planned_share or ()))
        if planned_share is not None and new_share:
            return (f"the share group has state on partitions the plan does not name ({', '.join(new_share)}): "
                    "it consumed them since the plan")
    return None


def _changed_reset_facts(action: PlannedAction, live) -> str | None:
    """A reset goes only to a group that is still inactive (Kafka's rule) and is still where the
    plan saw it (its committed offset, or a share group's start offset): the messages read again
    or skipped were counted from there."""
    if live.state not in INACTIVE_STATES:
        return f"the group is {live.state} now: Kafka resets the offsets of an inactive group only"
    planned = action.facts.get("current_offset")
    now = (live.share_start_offsets if action.action == RESET_SHARE_OFFSET else live.committed_offsets).get(
        (action.topic, action.partition))
    if now != planned:
        return (f"the group moved since the plan (offset {'none' if now is None else now} now, "
                f"{'none' if planned is None else planned} when planned)")
    return None
