"""Two cleanup runs on one lake at the same moment: each request is sent once, each plan stored once.

The applies are two `offsets-platform apply` processes on the real broker, made to start
together (a barrier) and to be slow to send (a delay), so that without the lake's lease both
would read the audit before either wrote to it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, PLANS, CleanupPlan, PlannedAction, PlanError, save_plan
from offsets_platform.lake import Lake
from tests.at_once import Meeting, run_at_once
from tests.cleanup.apply_helpers import approved_plan, delete_group_action, listed_groups, plan_audit
from proving_ground.cli_process import run_cli_processes
from tests.cleanup.direct_helpers import PAYMENTS, empty_group


@pytest.mark.integration
def test_two_applies_of_one_plan_at_once_send_each_request_once(bootstrap, connection, tmp_path):
    groups = ["concurrent-a", "concurrent-b"]
    for group in groups:
        empty_group(bootstrap, group, [PAYMENTS], {(PAYMENTS, 0): 3})
    home = tmp_path / "home"
    lake = Lake(home / "lake")
    plan = approved_plan(lake, [delete_group_action(connection, group) for group in groups])

    apply = ["--barrier", f"{tmp_path / 'barrier'}:2", "--send-delay", "2", "--",
             "apply", plan.plan_id, "--bootstrap-server", bootstrap, "--home", str(home)]
    runs = run_cli_processes([apply, apply])

    assert [run.returncode for run in runs] == [0, 0], [run.stderr[-2000:] for run in runs]
    sends = [line for run in runs for line in run.stdout.splitlines() if line.startswith("SENT")]
    assert sends == [f"SENT DeleteGroups {','.join(groups)}"], [run.stdout for run in runs]
    (waited,) = [run for run in runs if "SENT" not in run.stdout]
    assert f"waiting up to 30 s for the lake's 'cleanup-apply' lease, held by apply of plan {plan.plan_id} (pid " \
        in waited.stdout
    assert "0 approved actions to apply (2 already done" in waited.stdout and "0 deleted" in waited.stdout
    assert sorted(row["outcome"] for row in plan_audit(lake, plan.plan_id)) == ["deleted", "deleted",
                                                                                "sending", "sending"]
    assert not set(groups) & listed_groups(connection)


def test_two_runs_saving_the_same_plan_at_once_store_it_once(tmp_path, monkeypatch):
    root = tmp_path / "lake"
    now = datetime.now(timezone.utc).replace(microsecond=0)
    earlier = CleanupPlan("earlier", now, now + timedelta(hours=1), "ops",
                          (PlannedAction(DELETE_GROUPS, "old", None, None, "idle", {"member_count": 0}),))
    save_plan(Lake(root), earlier)  # the table exists: the runs race on the plan, not on creating the table
    plan = CleanupPlan("same-plan", now, now + timedelta(hours=1), "ops", (
        PlannedAction(DELETE_GROUPS, "idle", None, None, "idle", {"member_count": 0}),
        PlannedAction(OFFSET_DELETE, "busy", "gone", 0, "stale", {"member_count": 1, "committed_offset": 4})))

    # Each run appends only once the other has checked too, as two runs started together would;
    # a run that waits for the lease never gets there (tests/at_once.py).
    meet = Meeting()
    real_append = Lake.append

    def append_once_both_checked(self, name, data):
        if name == PLANS:
            meet.wait()
        return real_append(self, name, data)

    monkeypatch.setattr(Lake, "append", append_once_both_checked)

    def run() -> str:
        try:
            save_plan(Lake(root), plan)
            return "stored"
        except PlanError as error:
            return str(error)

    results = run_at_once(run, timeout_s=30)
    assert sorted(results) == ["plan same-plan is already stored; plans never change", "stored"]
    rows = Lake(root).read_arrow(PLANS).to_pylist()
    assert sorted(row["action_id"] for row in rows if row["plan_id"] == "same-plan") == sorted(
        action.action_id for action in plan.actions)
