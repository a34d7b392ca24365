"""The stored cleanup plans, newest first, each with how far it got: approved, applied, expired.

`offsets-platform plans` prints them, so that an operator finds the plan to approve or apply
without knowing its id. The counts use the rules `apply` uses: an action counts as approved when
apply would act on it (another person's approval, or the author's where self-approval is
allowed), and as deleted, skipped or failed by its latest outcome in the audit (dry runs not
counted).
"""

from __future__ import annotations

from datetime import datetime, timezone

from offsets_platform.cleanup.approvals import AUDIT, approved_actions, self_approval_permitted
from offsets_platform.cleanup.audit import DELETED, DRY_RUN, FAILED, SKIPPED
from offsets_platform.cleanup.plans import PLANS, load_plan
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string, lake_timestamp

APPLIED, EXPIRED, APPROVED, AWAITING_APPROVAL = "applied", "expired", "approved", "awaiting approval"


def plan_summaries(lake: Lake, limit: int | None = None, now: datetime | None = None) -> list[dict]:
    """One row per stored plan, newest first (at most `limit`): plan_id, created_at, created_by,
    age_s, expires_at, actions, approved, deleted, skipped, failed, state (APPLIED once every
    action was deleted, EXPIRED when it ran out first, else APPROVED or AWAITING_APPROVAL)."""
    now = now or datetime.now(timezone.utc)
    plans = lake.query(f"""
        select plan_id, min(created_at) as created_at, count(*) as actions
        from {PLANS} group by plan_id order by created_at desc, plan_id
        {f"limit {int(limit)}" if limit else ""}""", PLANS).to_pylist()
    four_eyes = not self_approval_permitted()
    latest = _latest_outcomes(lake)
    summaries = []
    for row in plans:
        plan = load_plan(lake, row["plan_id"])
        outcomes = latest.get(plan.plan_id, {})
        counts = {outcome: sum(value == outcome for value in outcomes.values()) for outcome in (DELETED, SKIPPED, FAILED)}
        approved = len(approved_actions(lake, plan, by_author=not four_eyes))
        if counts[DELETED] == len(plan.actions):
            state = APPLIED
        elif plan.expired(now):
            state = EXPIRED
        else:
            state = APPROVED if approved else AWAITING_APPROVAL
        summaries.append({"plan_id": plan.plan_id, "created_at": plan.created_at, "created_by": plan.created_by,
                          "age_s": (now - plan.created_at).total_seconds(), "expires_at": plan.expires_at,
                          "actions": len(plan.actions), "approved": approved, **counts, "state": state})
    return summaries


def open_plan_ids(lake: Lake, now: datetime | None = None) -> list[str]:
    """The plans a person may still approve or apply: not expired, and some action not deleted
    yet; newest first. The Dagster launchpad offers these (assets/cleanup.py)."""
    now = now or datetime.now(timezone.utc)
    plans = lake.query(f"""
        select plan_id, min(created_at) as created_at, count(*) as actions
        from {PLANS} where expires_at > {lake_timestamp(now)}
        group by plan_id order by created_at desc, plan_id""", PLANS).to_pylist()
    latest = _latest_outcomes(lake)
    return [row["plan_id"] for row in plans
            if sum(outcome == DELETED for outcome in latest.get(row["plan_id"], {}).values()) < row["actions"]]


def _latest_outcomes(lake: Lake) -> dict[str, dict[str, str]]:
    """plan id -> action id -> the action's latest outcome in the audit, dry runs left out (one
    query for every plan: the sensor asks every minute)."""
    rows = lake.query(f"select plan_id, action_id, outcome from {AUDIT} where plan_id is not null "
                      f"and outcome <> {lake_string(DRY_RUN)} order by at", AUDIT).to_pylist()
    latest: dict[str, dict[str, str]] = {}
    for row in rows:
        latest.setdefault(row["plan_id"], {})[row["action_id"]] = row["outcome"]
    return latest
