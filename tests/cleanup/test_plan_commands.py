"""`offsets-platform plan / show / approve / apply` end to end on the embedded broker."""

from __future__ import annotations

import re

from offsets_platform.cli import main
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.lake import Lake
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV
from tests.cleanup.direct_helpers import ORDERS, empty_group, make_topics, standalone_commit


def _run(argv, capsys) -> tuple[int, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_plan_show_approve_apply_from_the_command_line(spark, broker, connection, tmp_path, capsys, monkeypatch):
    make_topics(broker.bootstrap_servers)
    empty_group(broker.bootstrap_servers, "idle-app", [ORDERS], {(ORDERS, 0): 3})
    empty_group(broker.bootstrap_servers, "idle-billing", [ORDERS], {(ORDERS, 1): 4})
    # a standalone committer is idle since its last commit, so not deletable while its offsets live
    standalone_commit(broker.bootstrap_servers, "idle-standalone", {(ORDERS, 1): 2})
    snapshot_cluster(connection, Lake(tmp_path / "lake"), emit=lambda line: None)
    home = ["--home", str(tmp_path)]
    assert _run(["models", *home], capsys)[0] == 0

    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    monkeypatch.setenv(USER_ENV, "ops")  # the plan's author, as a login wrapper names them
    status, output = _run(["plan", *home, "--idle-hours", "0"], capsys)
    assert status == 0 and ", by ops, " in output
    plan_id = re.search(r"approve it with: offsets-platform approve (\w+)", output).group(1)
    assert "run by someone other than ops" in output
    assert "DeleteGroups idle-app" in output and "DeleteGroups idle-billing" in output
    assert "idle-standalone" not in output

    status, output = _run(["apply", plan_id, "--bootstrap-server", broker.bootstrap_servers, *home], capsys)
    assert status == 1 and "no approved action" in output

    status, output = _run(["approve", plan_id, "--comment", "my own plan", *home], capsys)
    assert status == 1 and "four-eyes: ops wrote plan" in output
    monkeypatch.setenv(USER_ENV, "alice")
    status, output = _run(["approve", plan_id, "--comment", "idle for good", *home], capsys)
    assert status == 0 and "alice approved 2 actions" in output
    status, output = _run(["show", plan_id, *home], capsys)
    assert output.count("[approved by alice]") == 2
    # each action's facts, as the plan recorded them
    assert output.count("      facts: ") == 2 and output.count("group_state=Empty, member_count=0") == 2
    assert output.count("classification=consumer") == 2

    status, output = _run(["apply", plan_id, "--dry-run", "--bootstrap-server", broker.bootstrap_servers, *home], capsys)
    assert status == 0 and "2 shown (dry run: nothing sent)" in output
    status, output = _run(["apply", plan_id, "--bootstrap-server", broker.bootstrap_servers, *home], capsys)
    assert status == 0 and "DeleteGroups idle-app: Successful" in output
    assert output.endswith("2 deleted, 0 skipped, 0 failed\n")
    status, output = _run(["show", plan_id, *home], capsys)
    assert output.count("[deleted]") == 2
    assert output.count("      outcome: deleted at ") == 2

    monkeypatch.setenv(USER_ENV, "bob")
    status, output = _run(["approve", plan_id, *home], capsys)
    assert status == 1 and "already been applied" in output
    status, output = _run(["show", "nope", *home], capsys)
    assert status == 1 and "unknown plan 'nope'" in output


def test_a_plan_before_the_models_ran_says_to_run_them_and_changes_nothing(tmp_path, capsys):
    # an empty plan here would read as "nothing to clean up" while nothing was looked at
    (tmp_path / "lake").mkdir()  # a lake that ingest created, and no model has run on
    status, output = _run(["plan", "--home", str(tmp_path)], capsys)
    assert status == 1
    assert "expirable_offsets" in output and "offsets-platform models" in output
    assert "nothing to clean up" not in output
    assert list((tmp_path / "lake").iterdir()) == []
