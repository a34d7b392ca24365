"""Approval of a cleanup plan by a person: who, when, why, for the whole plan or some actions.

Four-eyes by default: the plan's author (`created_by`) cannot approve it, unless self-approval is
allowed ($OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL=true, or `allow_self_approval=True` from code).
Who approves is the caller's business: the command line passes $OFFSETS_PLATFORM_USER or the OS
user, Dagster the run's identity tag (assets/cleanup.py); neither takes a typed name.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa

from offsets_platform.cleanup.plans import CleanupPlan, PlanError, load_plan
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string, lake_timestamp
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, same_person, self_approval_allowed

APPROVALS = "cleanup_approvals"
AUDIT = "cleanup_audit"


@dataclass(frozen=True)
class Approval:
    approval_id: str
    plan_id: str
    action_ids: tuple[str, ...]
    approved_by: str
    approved_at: datetime
    comment: str | None
    older_facts: str | None = None  # what `removals_since_made` says of the plan, when not refused


def approve(lake: Lake, plan_id: str, approved_by: str, action_ids: list[str] | None = None,
            comment: str | None = None, now: datetime | None = None,
            allow_self_approval: bool | None = None, refuse_older_facts: bool = False) -> Approval:
    """Record that `approved_by` approves the plan (or only `action_ids` of it).

    `allow_self_approval` None means "as $OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL says" (default no).
    `refuse_older_facts`: refuse a plan made before removals the audit shows done since
    (`removals_since_made`); otherwise the approval carries that warning (`older_facts`) for the
    caller to show.

    Raises:
        PlanError: the plan is unknown, expired or already applied, an action id is not in it,
            no approver was named, the approver wrote the plan and self-approval is not allowed,
            or `refuse_older_facts` and removals were done since the plan was made.
    """
    now = now or datetime.now(timezone.utc)
    if not approved_by or not approved_by.strip():
        raise PlanError("an approval needs the approver's name")
    plan = load_plan(lake, plan_id)
    if same_person(approved_by, plan.created_by) and not self_approval_permitted(allow_self_approval):
        raise PlanError(f"four-eyes: {approved_by.strip()} wrote plan {plan_id} and cannot approve it as well; "
                        f"another person approves it (where one person may do both, set {ALLOW_SELF_APPROVAL_ENV}=true)")
    if plan.expired(now):
        raise PlanError(f"plan {plan_id} expired at {plan.expires_at:%Y-%m-%d %H:%M} UTC; build a new plan")
    if applied(lake, plan_id):
        raise PlanError(f"plan {plan_id} has already been applied; build a new plan")
    older = removals_since_made(lake, plan)
    if refuse_older_facts and older:
        raise PlanError(f"refused: {older}")
    chosen = tuple(action_ids) if action_ids else tuple(a.action_id for a in plan.actions)
    for action_id in chosen:
        plan.action(action_id)  # raises for an id that is not in the plan
    approval = Approval(uuid.uuid4().hex[:12], plan_id, chosen, approved_by.strip(), now, comment, older)
    lake.append(APPROVALS, pa.Table.from_pylist([
        {"approval_id": approval.approval_id, "plan_id": plan_id, "action_id": action_id,
         "approved_by": approval.approved_by, "approved_at": now, "comment": comment} for action_id in chosen]))
    return approval


def removals_since_made(lake: Lake, plan: CleanupPlan) -> str | None:
    """What a person approving `plan` should know when removals were done after it was made (by
    any plan's apply, or by delete-offsets and delete-groups): its facts predate them. None when
    there were none."""
    row = lake.query(f"""select count(*) as removals, max(at) as latest from {AUDIT}
                         where outcome = 'deleted' and at > {lake_timestamp(plan.created_at)}""", AUDIT).to_pylist()[0]
    if not row["removals"]:
        return None
    return (f"plan {plan.plan_id} was made at {plan.created_at:%Y-%m-%d %H:%M} UTC, before {row['removals']} removals "
            f"the audit shows done since (the latest at {row['latest']:%Y-%m-%d %H:%M} UTC): its facts predate them. "
            "Apply re-checks each group live; a plan made after the next refresh rests on the tables as they are now")


def self_approval_permitted(allow_self_approval: bool | None = None) -> bool:
    """`allow_self_approval`, or when None what $OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL says.

    Raises:
        PlanError: the variable holds neither true nor false.
    """
    if allow_self_approval is not None:
        return allow_self_approval
    try:
        return self_approval_allowed()
    except ValueError as error:
        raise PlanError(str(error)) from None


def approved_actions(lake: Lake, plan: CleanupPlan, *, by_author: bool = True) -> dict[str, dict]:
    """action id -> its first approval (approved_by, approved_at, comment). Without `by_author`,
    approvals by the plan's own author do not count (four-eyes)."""
    rows = lake.query(f"select * from {APPROVALS} where plan_id = {lake_string(plan.plan_id)} order by approved_at",
                      APPROVALS).to_pylist()
    approved: dict[str, dict] = {}
    for row in rows:
        if approval_counts(row["approved_by"], plan.created_by, by_author=by_author):
            approved.setdefault(row["action_id"], row)
    return approved


def approval_counts(approved_by: str, created_by: str, *, by_author: bool) -> bool:
    """Whether an approval by `approved_by` of a plan `created_by` wrote lets apply act: always
    with `by_author`, else only when another person approved (four-eyes). `approved_actions` and
    the plan list (plan_list.py) both count approvals by this rule."""
    return by_author or not same_person(approved_by, created_by)


def applied(lake: Lake, plan_id: str) -> bool:
    """Whether an apply (not a dry run) of the plan has sent or skipped anything."""
    return lake.query(f"select count(*) as n from {AUDIT} where plan_id = {lake_string(plan_id)} "
                      "and outcome <> 'dry_run'", AUDIT).column("n")[0].as_py() > 0
