"""`offsets-platform plans`: the stored plans, newest first, with their progress, counted by the
rules apply uses (four-eyes approvals, the latest outcome in the audit); and a plan's facts as
`show` prints them. Hand-made plans, approvals and audit rows in a real Delta lake; no broker, no
Spark."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.cleanup.approvals import approve, approved_actions, self_approval_permitted
from offsets_platform.cleanup.audit import COMMITTED, DELETED, DRY_RUN, FAILED, SENDING, SKIPPED, PlanAudit
from offsets_platform.cleanup.plan_list import (APPLIED, APPROVED, AWAITING_APPROVAL, EXPIRED, _latest_outcomes,
                                               open_plan_ids, plan_summaries)
from offsets_platform.cleanup.plans import PLANS, CleanupPlan, PlannedAction, load_plan, save_plan
from offsets_platform.cli import main

pytestmark = pytest.mark.fast

NOW = datetime.now(timezone.utc).replace(microsecond=0)


def a_plan(lake, plan_id: str, hours_ago: float, groups: list[str], valid_hours: float = 24) -> CleanupPlan:
    created = NOW - timedelta(hours=hours_ago)
    plan = CleanupPlan(plan_id, created, created + timedelta(hours=valid_hours), "alice",
                       tuple(PlannedAction("DeleteGroups", group, None, None, "idle", {}) for group in groups))
    save_plan(lake, plan)
    return plan


def test_each_plan_says_how_far_it_got(lake, monkeypatch):
    monkeypatch.delenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL", raising=False)
    a_plan(lake, "proposed", 1, ["a"])
    self_approved = a_plan(lake, "self-approved", 2, ["b"])
    monkeypatch.setenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL", "true")
    approve(lake, self_approved.plan_id, "alice")  # allowed then; not counted under four-eyes
    monkeypatch.delenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL")
    half_done = a_plan(lake, "half-done", 3, ["c", "d", "e"])
    approve(lake, half_done.plan_id, "bob")
    audit = PlanAudit(lake, half_done.plan_id, "127.0.0.1:9092", "bob")
    c, d, e = half_done.actions
    audit.record([c, d], DRY_RUN, None, None)  # a dry run is not an outcome
    audit.record([c], SENDING, None, None)
    audit.record([c], DELETED, None, None)
    audit.record([d], FAILED, "GROUP_ID_NOT_FOUND", None)
    done = a_plan(lake, "done", 30, ["f"], valid_hours=1)  # applied before it expired (approval not needed here)
    PlanAudit(lake, done.plan_id, "127.0.0.1:9092", "bob").record(list(done.actions), DELETED, None, None)
    a_plan(lake, "expired", 40, ["g"], valid_hours=1)

    rows = {row["plan_id"]: row for row in plan_summaries(lake, now=NOW)}
    assert [row["plan_id"] for row in plan_summaries(lake, now=NOW)] == \
        ["proposed", "self-approved", "half-done", "done", "expired"]
    assert {plan: row["state"] for plan, row in rows.items()} == {
        "proposed": AWAITING_APPROVAL, "self-approved": AWAITING_APPROVAL, "half-done": APPROVED,
        "done": APPLIED, "expired": EXPIRED}
    assert {k: rows["half-done"][k] for k in ("actions", "approved", "deleted", "skipped", "failed")} == \
        {"actions": 3, "approved": 3, "deleted": 1, "skipped": 0, "failed": 1}
    assert rows["half-done"]["age_s"] == 3 * 3600
    assert [row["plan_id"] for row in plan_summaries(lake, limit=2, now=NOW)] == ["proposed", "self-approved"]
    # where one person may do both, the author's approval counts
    monkeypatch.setenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL", "true")
    assert {row["plan_id"]: row["state"] for row in plan_summaries(lake, now=NOW)}["self-approved"] == APPROVED


def many_plans(lake, count: int, first: int = 0) -> None:
    """`count` plans of one to four actions, by alice or by Carol: some approved by their author
    (written "Alice " or "carol" at times: the same person), some by bob, in full or in part;
    some deleted, skipped, failed or dry-run in part or in full, some expired; several made at the
    same moment (listed by plan id then)."""
    for n in range(first, first + count):
        created = NOW - timedelta(hours=n // 3)
        author = "alice" if n % 2 else "Carol"
        plan = CleanupPlan(f"plan-{n:02d}", created, created + timedelta(hours=24 if n % 5 else 2), author,
                           tuple(PlannedAction("DeleteGroups", f"g{n}-{k}", None, None, "idle", {})
                                 for k in range(1 + n % 4)))
        save_plan(lake, plan)
        ids = [action.action_id for action in plan.actions]
        if n % 3 == 0:
            approve(lake, plan.plan_id, " Alice" if author == "alice" else "carol", ids[:1], now=created,
                    allow_self_approval=True)
        if n % 4 == 1:
            approve(lake, plan.plan_id, "bob", ids[-2:], now=created)
            approve(lake, plan.plan_id, "bob", ids[-1:], now=created)  # twice the same action: counted once
        audit = PlanAudit(lake, plan.plan_id, "127.0.0.1:9092", "bob")
        outcome = [None, DELETED, FAILED, SKIPPED, DRY_RUN][n % 5]
        if outcome:
            audit.record(list(plan.actions[: 1 + n % 2]), outcome, None, None)


def summaries_plan_by_plan(lake) -> list[dict]:
    """The summaries as the plan list made them before it read every plan in one query: each
    plan with load_plan, its approvals with approved_actions."""
    latest, by_author = _latest_outcomes(lake), self_approval_permitted()
    plans = sorted((load_plan(lake, plan_id) for plan_id in set(lake.read_arrow(PLANS).column("plan_id").to_pylist())),
                   key=lambda plan: plan.plan_id)
    summaries = []
    for plan in sorted(plans, key=lambda plan: plan.created_at, reverse=True):
        outcomes = list(latest.get(plan.plan_id, {}).values())
        counts = {outcome: outcomes.count(outcome) for outcome in (DELETED, COMMITTED, SKIPPED, FAILED)}
        approved = len(approved_actions(lake, plan, by_author=by_author))
        state = APPLIED if counts[DELETED] + counts[COMMITTED] == len(plan.actions) else EXPIRED if plan.expired(NOW) \
            else APPROVED if approved else AWAITING_APPROVAL
        summaries.append({"plan_id": plan.plan_id, "created_at": plan.created_at, "created_by": plan.created_by,
                          "age_s": (NOW - plan.created_at).total_seconds(), "expires_at": plan.expires_at,
                          "actions": len(plan.actions), "approved": approved, **counts, "state": state})
    return summaries


def test_many_plans_are_summed_up_as_one_by_one(lake, monkeypatch):
    monkeypatch.delenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL", raising=False)
    many_plans(lake, 30)
    expected = summaries_plan_by_plan(lake)
    assert len(expected) == 30 and {row["state"] for row in expected} == {APPLIED, EXPIRED, APPROVED, AWAITING_APPROVAL}
    assert plan_summaries(lake, now=NOW) == expected
    assert plan_summaries(lake, limit=7, now=NOW) == expected[:7]
    monkeypatch.setenv("OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL", "true")  # the authors' approvals count too
    by_author = summaries_plan_by_plan(lake)
    assert by_author != expected
    assert plan_summaries(lake, now=NOW) == by_author


def test_the_number_of_queries_does_not_grow_with_the_plans(lake, monkeypatch):
    """`offsets-platform plans --limit 0` on thousands of plans: a query per plan made it slow."""
    queries = []
    query = lake.query
    monkeypatch.setattr(lake, "query", lambda sql, *names: queries.append(sql) or query(sql, *names))

    def queries_to_list() -> int:
        queries.clear()
        plan_summaries(lake, now=NOW)
        return len(queries)

    many_plans(lake, 2)
    few = queries_to_list()
    many_plans(lake, 20, first=2)
    assert queries_to_list() == few == 3  # plans, approvals, audit


def test_the_open_plans_are_those_left_to_approve_or_apply(lake):
    """What the Dagster launchpad offers to approve and apply: not expired, some action not deleted."""
    assert open_plan_ids(lake, now=NOW) == []  # no plan stored yet
    a_plan(lake, "proposed", 1, ["a"])
    done = a_plan(lake, "done", 2, ["b"])
    PlanAudit(lake, done.plan_id, "127.0.0.1:9092", "bob").record(list(done.actions), DELETED, None, None)
    half_done = a_plan(lake, "half-done", 3, ["c", "d"])
    PlanAudit(lake, half_done.plan_id, "127.0.0.1:9092", "bob").record([half_done.actions[0]], DELETED, None, None)
    dry_run = a_plan(lake, "dry-run-only", 4, ["e"])
    PlanAudit(lake, dry_run.plan_id, "127.0.0.1:9092", "bob").record(list(dry_run.actions), DRY_RUN, None, None)
    a_plan(lake, "expired", 40, ["f"], valid_hours=1)
    assert open_plan_ids(lake, now=NOW) == ["proposed", "half-done", "dry-run-only"]
    # a plan is open until it expires (dry-run-only, created 4 h ago for 24 h, at 20 h from now)
    assert open_plan_ids(lake, now=NOW + timedelta(hours=20, minutes=30)) == ["proposed", "half-done"]


def test_the_command_prints_a_table_or_json(lake, capsys):
    home = str(lake.root.parent)
    lake.root.mkdir(parents=True)
    assert main(["plans", "--home", home]) == 0
    assert capsys.readouterr().out.startswith("no plans yet")
    a_plan(lake, "p1", 26.5, ["a"], valid_hours=48)
    assert main(["plans", "--home", home]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["PLAN", "CREATED", "(UTC)", "AGE"]
    assert line.split()[0] == "p1" and "1d 2h" in line and line.endswith("awaiting approval")
    assert main(["plans", "--home", home, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == AWAITING_APPROVAL


def test_facts_are_printed_as_text_not_python():
    from offsets_platform.cleanup.plans import facts_text

    assert facts_text({"group_state": "Empty", "subscribed_topics": ["orders", "payments"], "member_count": 0,
                       "offsets": {"orders:0": 5, "orders:1": 7}, "expires_at": None, "is_known": True}) \
        == "group_state=Empty, subscribed_topics=[orders payments], member_count=0, offsets=2 partitions, is_known=yes"
    assert facts_text({"share_partitions": []}) == "share_partitions=[]"
    assert facts_text({}) == "none recorded"
