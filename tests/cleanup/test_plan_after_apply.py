"""A plan never proposes again what the audit shows removed since the models last ran: the gold
tables still show those offsets and groups until the next refresh. Hand-made model rows, runs and
audit rows in a real Delta lake; no broker, no Spark."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

from offsets_platform.cleanup.audit import DELETED, FAILED
from offsets_platform.cleanup.plans import DELETE_GROUPS, build_plan, removed_since_the_models_ran
from tests.test_summary import full_rows

pytestmark = pytest.mark.fast

MODELS_RAN = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def lake_with_two_idle_groups(lake):
    """Two groups Empty for 300 h, the models' tables as a refresh at MODELS_RAN left them."""
    for name, rows in {
        "group_state": [{"group_id": group, "state": "Empty", "count_members": 0, "classification": "consumer",
                         "state_entered_at": MODELS_RAN - timedelta(hours=300)} for group in ("old-a", "old-b")],
        "expirable_offsets": [{"group_id": "busy", "topic": "t", "partition_id": 0, "rule": "none",
                               "evaluated_at": MODELS_RAN}],
        "committed_offsets": [], "consumer_lag": [], "group_subscriptions": [],
    }.items():
        lake.append(name, full_rows(lake, name, rows))
    lake.append("model_runs", pa.Table.from_pylist([
        {"model": "group_state", "run_id": "r1", "mode": "full", "source": "x", "source_version": 0,
         "code_version": "c", "rows_written": 2, "finished_at": MODELS_RAN}], schema=lake.spec("model_runs").schema))


def deleted(lake, group: str, at: datetime, outcome: str = DELETED) -> None:
    lake.append("cleanup_audit", full_rows(lake, "cleanup_audit", [
        {"audit_id": f"{group}-{at:%H%M}", "origin": "cli", "action": DELETE_GROUPS, "group": group, "topic": None,
         "partition": None, "outcome": outcome, "bootstrap_servers": "127.0.0.1:9092", "requested_by": "bob",
         "at": at}]))


def test_a_group_deleted_since_the_models_ran_is_not_proposed_again(lake):
    lake_with_two_idle_groups(lake)
    assert {a.group for a in build_plan(lake, "alice", idle_hours=168).actions} == {"old-a", "old-b"}
    deleted(lake, "old-a", MODELS_RAN + timedelta(minutes=5))  # by delete-groups, after the refresh
    deleted(lake, "old-b", MODELS_RAN + timedelta(minutes=6), outcome=FAILED)  # not removed: still proposed
    said: list[str] = []
    plan = build_plan(lake, "alice", idle_hours=168, emit=said.append)
    assert [a.group for a in plan.actions] == ["old-b"]
    assert said == ["left out 1 removals the audit shows done since the models last ran (DeleteGroups old-a): "
                    "the tables still show what they removed until the next refresh"]


def test_a_removal_before_the_models_ran_is_in_the_tables_already(lake):
    lake_with_two_idle_groups(lake)
    # deleted before the refresh: the tables that still show the group Empty saw it come back
    deleted(lake, "old-a", MODELS_RAN - timedelta(minutes=5))
    assert removed_since_the_models_ran(lake) == set()
    assert {a.group for a in build_plan(lake, "alice", idle_hours=168).actions} == {"old-a", "old-b"}


def test_plan_says_how_old_its_facts_are(lake, capsys, monkeypatch):
    from offsets_platform.cli import main

    lake_with_two_idle_groups(lake)
    monkeypatch.setenv("OFFSETS_PLATFORM_USER", "alice")
    assert main(["plan", "--home", str(lake.root.parent)]) == 0
    facts = [line for line in capsys.readouterr().out.splitlines() if line.startswith("the facts: ")]
    assert len(facts) == 1 and facts[0].startswith("the facts: the models' tables as of 2026-11-27 12:00:00 UTC, ")


def test_a_plan_made_before_removals_done_since_is_approved_with_a_warning_or_refused(lake, capsys, monkeypatch):
    from offsets_platform.cleanup.approvals import approve, removals_since_made
    from offsets_platform.cleanup.plans import PlanError, save_plan
    from offsets_platform.cli import main

    lake_with_two_idle_groups(lake)
    plan = build_plan(lake, "alice", idle_hours=168)
    save_plan(lake, plan)
    deleted(lake, "old-b", plan.created_at - timedelta(minutes=1))  # before the plan: its facts knew
    assert removals_since_made(lake, plan) is None
    deleted(lake, "old-a", plan.created_at + timedelta(minutes=1), outcome=FAILED)  # nothing removed
    assert removals_since_made(lake, plan) is None
    deleted(lake, "old-a", plan.created_at + timedelta(minutes=2))  # by delete-groups, after the plan
    warning = removals_since_made(lake, plan)
    assert warning.startswith(f"plan {plan.plan_id} was made at {plan.created_at:%Y-%m-%d %H:%M} UTC, before 1 "
                              "removals the audit shows done since (the latest at ")
    with pytest.raises(PlanError, match=f"refused: plan {plan.plan_id} was made at"):
        approve(lake, plan.plan_id, "bob", refuse_older_facts=True)
    assert not lake.exists("cleanup_approvals")

    home = str(lake.root.parent)
    monkeypatch.setenv("OFFSETS_PLATFORM_USER", "bob")
    assert main(["approve", plan.plan_id, "--refuse-older-facts", "--home", home]) == 1
    assert "refused: plan" in capsys.readouterr().err
    assert main(["approve", plan.plan_id, "--home", home]) == 0
    out, err = capsys.readouterr()
    assert f"bob approved 2 actions of plan {plan.plan_id}" in out and err == f"warning: {warning}\n"
    assert main(["show", plan.plan_id, "--home", home]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[-2].startswith("the facts: the models' tables when the plan was made, ") and shown[-1] == \
        f"warning: {warning}"
