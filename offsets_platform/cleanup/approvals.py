"""Approval of a cleanup plan by a person: who, when, why, for the whole plan or some actions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa

from offsets_platform.cleanup.plans import CleanupPlan, PlanError, load_plan
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string

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


def approve(lake: Lake, plan_id: str, approved_by: str, action_ids: list[str] | None = None,
            comment: str | None = None, now: datetime | None = None) -> Approval:
    """Record that `approved_by` approves the plan (or only `action_ids` of it).

    Raises:
        PlanError: the plan is unknown, expired or already applied, an action id is not in it,
            or no approver was named.
    """
    now = now or datetime.now(timezone.utc)
    if not approved_by or not approved_by.strip():
        raise PlanError("an approval needs the approver's name")
    plan = load_plan(lake, plan_id)
    if plan.expired(now):
        raise PlanError(f"plan {plan_id} expired at {plan.expires_at:%Y-%m-%d %H:%M} UTC; build a new plan")
    if applied(lake, plan_id):
        raise PlanError(f"plan {plan_id} has already been applied; build a new plan")
    chosen = tuple(action_ids) if action_ids else tuple(a.action_id for a in plan.actions)
    for action_id in chosen:
        plan.action(action_id)  # raises for an id that is not in the plan
    approval = Approval(uuid.uuid4().hex[:12], plan_id, chosen, approved_by.strip(), now, comment)
    lake.append(APPROVALS, pa.Table.from_pylist([
        {"approval_id": approval.approval_id, "plan_id": plan_id, "action_id": action_id,
         "approved_by": approval.approved_by, "approved_at": now, "comment": comment} for action_id in chosen]))
    return approval


def approved_actions(lake: Lake, plan: CleanupPlan) -> dict[str, dict]:
    """action id -> its first approval (approved_by, approved_at, comment)."""
    rows = lake.query(f"select * from {APPROVALS} where plan_id = {lake_string(plan.plan_id)} order by approved_at",
                      APPROVALS).to_pylist()
    approved: dict[str, dict] = {}
    for row in rows:
        approved.setdefault(row["action_id"], row)
    return approved


def applied(lake: Lake, plan_id: str) -> bool:
    """Whether an apply (not a dry run) of the plan has sent or skipped anything."""
    return lake.query(f"select count(*) as n from {AUDIT} where plan_id = {lake_string(plan_id)} "
                      "and outcome <> 'dry_run'", AUDIT).column("n")[0].as_py() > 0
