"""An apply interrupted between recording its intent and recording Kafka's answer, on a real broker.

The audit keeps the 'sending' row written before each request; the next apply of the plan
settles it from the broker's state, without sending again a deletion that happened (Kafka would
answer GROUP_ID_NOT_FOUND to DeleteGroups of a deleted group), and sends again one that did not.
"""

from __future__ import annotations

import signal
from datetime import timedelta

import kafka.errors as Errors
import pytest

from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.plans import PlanError
from offsets_platform.kafka.admin_calls import SnapshotAdminClient
from offsets_platform.lake import Lake
from tests.cleanup.apply_helpers import (
    QUIET, approved_plan, committed, delete_group_action, listed_groups, offset_delete_actions, plan_audit, record_sends,
)
from proving_ground.cli_process import run_cli_processes
from tests.cleanup.direct_helpers import ORDERS, empty_group

pytestmark = pytest.mark.integration


class SimulatedCrash(BaseException):
    """The process dies here (a BaseException, so that no `except Exception` records anything)."""


def _crash_when_the_answer_is_recorded(monkeypatch) -> None:
    real_append = Lake.append

    def append(self, name, data):
        if name == "cleanup_audit" and {"deleted", "failed"} & set(data.column("outcome").to_pylist()):
            raise SimulatedCrash("the apply died after sending, before recording Kafka's answer")
        return real_append(self, name, data)

    monkeypatch.setattr(Lake, "append", append)


def test_an_apply_killed_after_sending_delete_groups_is_settled_by_the_next_apply(
        bootstrap, connection, tmp_path, monkeypatch):
    group = "killed-after-send"
    empty_group(bootstrap, group, [ORDERS], {(ORDERS, 0): 5})
    home = tmp_path / "home"
    lake = Lake(home / "lake")
    plan = approved_plan(lake, [delete_group_action(connection, group)])

    (killed,) = run_cli_processes([["--die-before-answer", "--", "apply", plan.plan_id,
                                    "--bootstrap-server", bootstrap, "--home", str(home)]])
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert f"SENT DeleteGroups {group}" in killed.stdout
    assert group not in listed_groups(connection), "Kafka deleted the group before the process died"
    (intent,) = plan_audit(lake, plan.plan_id)
    assert (intent["outcome"], intent["group"], intent["intent_id"]) == ("sending", group, None)

    sent = record_sends(monkeypatch)
    # lease_wait_s=0: the killed apply's lease went with its process
    result = apply_plan(lake, connection, plan.plan_id, lease_wait_s=0, **QUIET)
    assert sent == [], "a deletion that happened is not sent again"
    first, answer = plan_audit(lake, plan.plan_id)
    assert first == intent
    assert (answer["outcome"], answer["error"], answer["intent_id"]) == ("deleted", None, intent["audit_id"])
    assert answer["detail"].startswith("reconciled on ") and "no describe API knows the group" in answer["detail"]
    assert result.count("deleted") == 1 and not result.failed

    again = apply_plan(lake, connection, plan.plan_id, lease_wait_s=0, **QUIET)
    assert again.outcomes == [] and sent == []


def test_offset_deletes_whose_answer_was_lost_are_settled_as_deleted_even_after_the_plan_expired(
        bootstrap, connection, tmp_path, monkeypatch):
    group = "answer-lost"
    empty_group(bootstrap, group, [ORDERS], {(ORDERS, 0): 4, (ORDERS, 1): 6})
    lake = Lake(tmp_path / "lake")
    plan = approved_plan(lake, offset_delete_actions(connection, group, ORDERS))
    assert len(plan.actions) == 2

    with monkeypatch.context() as crashing:
        _crash_when_the_answer_is_recorded(crashing)
        with pytest.raises(SimulatedCrash):
            apply_plan(lake, connection, plan.plan_id, **QUIET)
    assert committed(connection, group) == {}, "Kafka deleted both offsets"
    intents = plan_audit(lake, plan.plan_id)
    assert [row["outcome"] for row in intents] == ["sending", "sending"]

    sent = record_sends(monkeypatch)
    with pytest.raises(PlanError, match="expired"):
        apply_plan(lake, connection, plan.plan_id, now=plan.expires_at + timedelta(seconds=1), **QUIET)
    assert sent == []
    answers = plan_audit(lake, plan.plan_id)[2:]
    assert {(row["outcome"], row["topic"], row["partition"]) for row in answers} == {
        ("deleted", ORDERS, 0), ("deleted", ORDERS, 1)}
    assert {row["intent_id"] for row in answers} == {row["audit_id"] for row in intents}
    assert all("OffsetFetch shows no committed offset" in row["detail"] for row in answers)


def test_an_intent_whose_request_never_left_is_settled_as_interrupted_and_the_action_is_applied_again(
        bootstrap, connection, tmp_path, monkeypatch):
    group = "never-sent"
    empty_group(bootstrap, group, [ORDERS], {(ORDERS, 2): 7})
    lake = Lake(tmp_path / "lake")
    plan = approved_plan(lake, [delete_group_action(connection, group)])

    def die_before_sending(admin, groups):
        raise SimulatedCrash("the apply died before the request left")

    with monkeypatch.context() as crashing:
        crashing.setattr(group_calls, "delete_groups", die_before_sending)
        with pytest.raises(SimulatedCrash):
            apply_plan(lake, connection, plan.plan_id, **QUIET)
    assert group in listed_groups(connection)

    sent = record_sends(monkeypatch)
    result = apply_plan(lake, connection, plan.plan_id, **QUIET)
    assert sent == [("DeleteGroups", (group,))]
    rows = plan_audit(lake, plan.plan_id)
    assert [row["outcome"] for row in rows] == ["sending", "interrupted", "sending", "deleted"]
    first_intent, interrupted, second_intent, deleted = rows
    assert interrupted["intent_id"] == first_intent["audit_id"] and "the group exists now (Empty)" in interrupted["detail"]
    assert deleted["intent_id"] == second_intent["audit_id"] and deleted["error"] is None
    assert result.count("interrupted") == 1 and result.count("deleted") == 1 and not result.failed
    assert group not in listed_groups(connection)


def test_an_answer_lost_with_the_connection_is_settled_by_the_next_apply_not_recorded_failed(
        bootstrap, connection, tmp_path, monkeypatch):
    group = "answer-lost-with-connection"
    empty_group(bootstrap, group, [ORDERS], {(ORDERS, 0): 5})
    lake = Lake(tmp_path / "lake")
    plan = approved_plan(lake, [delete_group_action(connection, group)])
    real_delete_groups = SnapshotAdminClient.delete_groups

    def sent_then_connection_lost(self, groups, *args, **kwargs):
        real_delete_groups(self, groups, *args, **kwargs)  # the broker deletes the group ...
        raise Errors.KafkaConnectionError("connection reset")  # ... and its answer never arrives

    said: list[str] = []
    with monkeypatch.context() as lost:
        lost.setattr(SnapshotAdminClient, "delete_groups", sent_then_connection_lost)
        first = apply_plan(lake, connection, plan.plan_id, lease_wait_s=0, emit=said.append)
    assert first.outcomes == []
    (intent,) = plan_audit(lake, plan.plan_id)
    assert intent["outcome"] == "sending"
    assert any(line.endswith("the next apply of the plan asks the broker what happened") for line in said), said

    sent = record_sends(monkeypatch)
    apply_plan(lake, connection, plan.plan_id, lease_wait_s=0, **QUIET)
    assert sent == [], "the deletion happened: it is not sent again"
    _, answer = plan_audit(lake, plan.plan_id)
    assert (answer["outcome"], answer["intent_id"]) == ("deleted", intent["audit_id"])
