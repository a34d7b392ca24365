"""The stored cleanup plans, newest first, each with how far it got: approved, applied, expired.

`offsets-platform plans` prints them, so that an operator finds the plan to approve or apply
without knowing its id. The counts use the rules `apply` uses: an action counts as approved when
apply would act on it (another person's approval, or the author's where self-approval is
allowed), and as deleted, skipped or failed by its latest outcome in the audit (dry runs not
counted).
"""

from __future__ import annotations

from datetime import datetime, timezone

from offsets_platform.cleanup.approvals import APPROVALS, AUDIT, approval_counts, self_approval_permitted
from offsets_platform.cleanup.audit import COMMITTED, DELETED, DONE, DRY_RUN, FAILED, SKIPPED
from offsets_platform.cleanup.plans import PLANS
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string, lake_timestamp

APPLIED, EXPIRED, APPROVED, AWAITING_APPROVAL = "applied", "expired", "approved", "awaiting approval"


def plan_summaries(lake: Lake, limit: int | None = None, now: datetime | None = None) -> list[dict]:
    """One row per stored plan, newest first (at most `limit`): plan_id, created_at, created_by,
    age_s, expires_at, actions, approved, deleted, committed (offset resets), skipped, failed, state
    (APPLIED once every action was done: deleted, or its reset committed; EXPIRED when it ran out first, else APPROVED or AWAITING_APPROVAL).

    Three queries whatever the number of plans (plans, approvals, audit): a lake may hold
    thousands of plans, and a query per plan made listing them all slow."""
    now = now or datetime.now(timezone.utc)
    # one save_plan writes every row of a plan with the same created_at, expires_at and
    # created_by, so min() of each is the plan's own (as load_plan reads them)
    plans = lake.query(f"""
        select plan_id, min(created_at) as created_at, min(expires_at) as expires_at,
               min(created_by) as created_by, count(*) as actions
        from {PLANS} group by plan_id order by created_at desc, plan_id
        {f"limit {int(limit)}" if limit else ""}""", PLANS).to_pylist()
    approved = _approved_counts(lake, {row["plan_id"]: row["created_by"] for row in plans},
                                by_author=self_approval_permitted())
    latest = _latest_outcomes(lake)
    summaries = []
    for row in plans:
        outcomes = latest.get(row["plan_id"], {})
        counts = {outcome: sum(value == outcome for value in outcomes.values())
                  for outcome in (DELETED, COMMITTED, SKIPPED, FAILED)}
        if counts[DELETED] + counts[COMMITTED] == row["actions"]:
            state = APPLIED
        elif now >= row["expires_at"]:  # CleanupPlan.expired
            state = EXPIRED
        else:
            state = APPROVED if approved.get(row["plan_id"]) else AWAITING_APPROVAL
        summaries.append({"plan_id": row["plan_id"], "created_at": row["created_at"], "created_by": row["created_by"],
                          "age_s": (now - row["created_at"]).total_seconds(), "expires_at": row["expires_at"],
                          "actions": row["actions"], "approved": approved.get(row["plan_id"], 0), **counts,
                          "state": state})
    return summaries


def open_plan_ids(lake: Lake, now: datetime | None = None) -> list[str]:
    """The plans a person may still approve or apply: not expired, and some action not done yet
    (deleted, or its reset committed); newest first. The Dagster launchpad offers these (assets/cleanup.py)."""
    now = now or datetime.now(timezone.utc)
    plans = lake.query(f"""
        select plan_id, min(created_at) as created_at, count(*) as actions
        from {PLANS} where expires_at > {lake_timestamp(now)}
        group by plan_id order by created_at desc, plan_id""", PLANS).to_pylist()
    latest = _latest_outcomes(lake)
    return [row["plan_id"] for row in plans
            if sum(outcome in DONE for outcome in latest.get(row["plan_id"], {}).values()) < row["actions"]]


def _latest_outcomes(lake: Lake) -> dict[str, dict[str, str]]:
    """plan id -> action id -> the action's latest outcome in the audit, dry runs left out (one
    query for every plan: the sensor asks every minute)."""
    rows = lake.query(f"select plan_id, action_id, outcome from {AUDIT} where plan_id is not null "
                      f"and outcome <> {lake_string(DRY_RUN)} order by at", AUDIT).to_pylist()
    latest: dict[str, dict[str, str]] = {}
    for row in rows:
        latest.setdefault(row["plan_id"], {})[row["action_id"]] = row["outcome"]
    return latest


def _approved_counts(lake: Lake, authors: dict[str, str], *, by_author: bool) -> dict[str, int]:
    """plan id -> how many of its actions apply would act on, counted as `approved_actions`
    counts them (`approval_counts`), for the plans in `authors` (plan id -> created_by). One
    query for every plan: grouping leaves one row per action and approver, however often they
    approved it; who counts is decided here, by the same Python rule apply uses."""
    rows = lake.query(f"select plan_id, action_id, approved_by from {APPROVALS} "
                      "group by plan_id, action_id, approved_by", APPROVALS).to_pylist()
    approved: dict[str, set[str]] = {}
    for row in rows:
        created_by = authors.get(row["plan_id"])
        if created_by is not None and approval_counts(row["approved_by"], created_by, by_author=by_author):
            approved.setdefault(row["plan_id"], set()).add(row["action_id"])
    return {plan_id: len(actions) for plan_id, actions in approved.items()}
