"""Approvals that mean something: who approves comes from the environment, never from a typed
name, and a plan's author cannot approve it (four-eyes) unless self-approval is configured."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve, approved_actions
from offsets_platform.cleanup.plans import DELETE_GROUPS, CleanupPlan, PlannedAction, PlanError, save_plan
from offsets_platform.cli import main
from offsets_platform.lake import Lake
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV, KafkaConnection, acting_user, os_user
from tests.cleanup.apply_helpers import QUIET, delete_group_action, listed_groups, plan_audit, record_sends
from tests.cleanup.direct_helpers import ORDERS, empty_group

UNREACHABLE = KafkaConnection(bootstrap_servers="127.0.0.1:9")


@pytest.fixture(autouse=True)
def four_eyes_by_default(monkeypatch):
    # whoever runs the tests may have either set; each test states what it needs
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    monkeypatch.delenv(USER_ENV, raising=False)


def _plan(lake: Lake, author: str, actions: list[PlannedAction] | None = None) -> CleanupPlan:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    actions = actions or [PlannedAction(DELETE_GROUPS, f"old-{n}", None, None, "idle", {"member_count": 0})
                          for n in range(2)]
    plan = CleanupPlan(uuid.uuid4().hex[:16], now, now + timedelta(hours=1), author, tuple(actions))
    save_plan(lake, plan)
    return plan


def _approvers(lake: Lake, plan: CleanupPlan) -> list[str]:
    if not lake.exists("cleanup_approvals"):
        return []
    return [row["approved_by"] for row in lake.read_arrow("cleanup_approvals").to_pylist()
            if row["plan_id"] == plan.plan_id]


def test_the_author_cannot_approve_their_own_plan_and_another_person_can(tmp_path):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "ops")
    with pytest.raises(PlanError, match=f"four-eyes: ops wrote plan {plan.plan_id} and cannot approve it"):
        approve(lake, plan.plan_id, "ops")
    with pytest.raises(PlanError, match=ALLOW_SELF_APPROVAL_ENV):
        approve(lake, plan.plan_id, " OPS ")  # the same person, however typed
    assert _approvers(lake, plan) == []
    assert approve(lake, plan.plan_id, "alice").approved_by == "alice"
    assert _approvers(lake, plan) == ["alice", "alice"]  # one row per action


def test_the_author_approves_their_own_plan_where_configuration_allows_it(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "ops")
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "true")
    assert approve(lake, plan.plan_id, "ops").approved_by == "ops"
    # the caller's explicit word wins over the environment, both ways
    with pytest.raises(PlanError, match="four-eyes"):
        approve(lake, plan.plan_id, "ops", allow_self_approval=False)
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "false")
    with pytest.raises(PlanError, match="four-eyes"):
        approve(lake, plan.plan_id, "ops")
    assert approve(lake, plan.plan_id, "ops", allow_self_approval=True).approved_by == "ops"


def test_an_allow_value_that_is_neither_true_nor_false_is_refused(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "ops")
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "maybe")
    with pytest.raises(PlanError, match="use true or false"):
        approve(lake, plan.plan_id, "ops")
    assert _approvers(lake, plan) == []


def test_the_identity_is_the_environment_s_user_else_the_os_user(monkeypatch):
    assert acting_user() == os_user()
    monkeypatch.setenv(USER_ENV, " svc-alice ")
    assert acting_user() == "svc-alice"
    monkeypatch.setenv(USER_ENV, "")
    assert acting_user() == os_user()


def test_apply_refuses_a_plan_only_its_author_approved_and_leaves_it_open_to_another_approval(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "ops")
    # as an older version, or a configuration that allowed it then, wrote it
    approve(lake, plan.plan_id, "ops", allow_self_approval=True)
    for dry_run in (True, False):
        with pytest.raises(PlanError, match="approved only by its author ops; four-eyes"):
            apply_plan(lake, UNREACHABLE, plan.plan_id, dry_run=dry_run, **QUIET)
    assert plan_audit(lake, plan.plan_id) == [], "nothing audited: the plan is not applied"
    approve(lake, plan.plan_id, "alice")
    by_action = approved_actions(lake, plan, by_author=False)
    assert {row["approved_by"] for row in by_action.values()} == {"alice"}
    assert {row["approved_by"] for row in approved_actions(lake, plan).values()} == {"ops"}, "the first approval"


@pytest.mark.integration
def test_apply_skips_actions_only_their_author_approved_and_sends_the_others(bootstrap, connection, tmp_path,
                                                                             monkeypatch):
    mine, theirs = "four-eyes-self-approved", "four-eyes-approved"
    for group in (mine, theirs):
        empty_group(bootstrap, group, [ORDERS], {(ORDERS, 0): 5})
    lake = Lake(tmp_path / "lake")
    self_approved, approved = (delete_group_action(connection, group) for group in (mine, theirs))
    plan = _plan(lake, "ops", [self_approved, approved])
    approve(lake, plan.plan_id, "ops", action_ids=[self_approved.action_id], allow_self_approval=True)
    approve(lake, plan.plan_id, "alice", action_ids=[approved.action_id])
    sent = record_sends(monkeypatch)

    dry = apply_plan(lake, connection, plan.plan_id, dry_run=True, **QUIET)
    assert [(row["group"], row["outcome"]) for row in dry.outcomes] == [(theirs, "dry_run")]

    lines: list[str] = []
    result = apply_plan(lake, connection, plan.plan_id, requested_by="bob", emit=lines.append)
    assert sent == [("DeleteGroups", (theirs,))]
    (skipped,) = [row for row in result.outcomes if row["outcome"] == "skipped"]
    assert skipped["group"] == mine and skipped["requested_by"] == "bob"
    assert "approved only by ops, who wrote the plan; four-eyes" in skipped["detail"]
    assert any(f"DeleteGroups {mine}: skipped: approved only by ops" in line for line in lines)
    assert mine in listed_groups(connection) and theirs not in listed_groups(connection)

    # once configuration allows self-approval, the next apply sends it
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "true")
    apply_plan(lake, connection, plan.plan_id, **QUIET)
    assert sent[1:] == [("DeleteGroups", (mine,))]
    assert mine not in listed_groups(connection)


def _cli(argv, capsys) -> tuple[int, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_the_command_line_approves_as_the_os_user_or_the_environment_s_user_never_as_a_typed_name(
        tmp_path, capsys, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, os_user())
    home = ["--home", str(tmp_path)]

    status, output = _cli(["approve", plan.plan_id, *home], capsys)
    assert status == 1 and f"four-eyes: {os_user()} wrote plan {plan.plan_id}" in output
    status, output = _cli(["approve", plan.plan_id, "--by", "someone-else", *home], capsys)
    assert status == 1 and f"--by someone-else is not who runs this command ({os_user()})" in output
    assert _approvers(lake, plan) == []

    monkeypatch.setenv(USER_ENV, "alice")
    status, output = _cli(["approve", plan.plan_id, "--by", "bob", *home], capsys)
    assert status == 1 and "--by bob is not who runs this command (alice)" in output
    assert _approvers(lake, plan) == []
    status, output = _cli(["approve", plan.plan_id, "--by", "alice", "--action", plan.actions[0].action_id, *home],
                          capsys)
    assert status == 0 and "alice approved 1 actions" in output
    status, output = _cli(["approve", plan.plan_id, *home], capsys)
    assert status == 0 and "alice approved 2 actions" in output
    assert _approvers(lake, plan) == ["alice"] * 3


def test_the_command_line_lets_the_author_approve_where_configuration_allows_it(tmp_path, capsys, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "ops")
    home = ["--home", str(tmp_path)]
    monkeypatch.setenv(USER_ENV, "ops")
    status, output = _cli(["approve", plan.plan_id, *home], capsys)
    assert status == 1 and "four-eyes" in output
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "true")
    status, output = _cli(["approve", plan.plan_id, *home], capsys)
    assert status == 0 and "ops approved 2 actions" in output
    status, output = _cli(["show", plan.plan_id, *home], capsys)
    assert output.count("[approved by ops] [by the plan's author]") == 2
    # once another person approved too, `show` names them: their approval is the one four-eyes counts
    monkeypatch.setenv(USER_ENV, "alice")
    assert _cli(["approve", plan.plan_id, "--action", plan.actions[0].action_id, *home], capsys)[0] == 0
    status, output = _cli(["show", plan.plan_id, *home], capsys)
    assert output.count("[approved by alice]") == 1 and output.count("[by the plan's author]") == 1
