"""`offsets-platform plan-reset`, approve and apply beside Kafka's `kafka-consumer-groups --reset-offsets`.

On one broker: a topic `ledger` whose records carry known timestamps, one minute apart, the last
one a minute ago; retention (DeleteRecords) took the first four records of partition 0. The
groups commit on partitions 0 and 1 only. Kafka's tool and `plan-reset` are run on the same group with the same
specifier; the new offset of every partition must be the same (Kafka's tool prints its rows in the
order of a Java HashMap: both sides are compared as sets of rows). Then the plan is approved by
another person and applied, and the group's committed offsets must equal what Kafka's tool's
--execute committed on a twin group.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition

from offsets_platform.broker.jvm import run_tool
from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cli import main
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV
from tests.cleanup.direct_helpers import commit, create_topics, join_group, standalone_commit
from tests.cleanup.test_group_types import kip848_member, wait_assigned

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
LEDGER = "ledger"
RECORDS = [10, 6, 3]  # per partition
DELETED_BELOW = 4  # partition 0's log start after DeleteRecords
COMMITTED = {(LEDGER, 0): 6, (LEDGER, 1): 2}  # partition 2: no committed offset
MINUTE_MS = 60_000


@pytest.fixture(scope="module")
def ledger(broker):
    """The topic, its records' timestamps (ms) by partition, and the time the last one was written."""
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, {LEDGER: (len(RECORDS), {})})
    last_ms = int(time.time() * 1000) - MINUTE_MS
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in enumerate(RECORDS):
        for index in range(count):
            producer.produce(LEDGER, value=b"x", partition=partition, timestamp=last_ms - (count - 1 - index) * MINUTE_MS)
    assert producer.flush(30) == 0
    with KafkaAdminClient(bootstrap_servers=[bootstrap]) as admin:
        admin.delete_records({KafkaTopicPartition(LEDGER, 0): DELETED_BELOW})
    return bootstrap, last_ms


def kafka_dry_run(bootstrap: str, group: str, *specifier: str,
                  command: str = CONSUMER_GROUP_COMMAND) -> tuple[int, set[tuple[str, ...]], str]:
    """Kafka's tool (`command`: of the group's kind) with --dry-run: (exit status, its rows as
    (group, topic, partition, new offset), what it printed)."""
    result = run_tool(command, ["--bootstrap-server", bootstrap, "--reset-offsets", "--group", group,
                                *specifier, "--dry-run"], timeout_s=120)
    return result.returncode, _rows(result.stdout.splitlines()), result.stdout + result.stderr


def plan_reset(bootstrap: str, home, capsys, group: str, *specifier: str) -> tuple[int, set[tuple[str, ...]], str]:
    """`offsets-platform plan-reset`: (exit status, its rows as Kafka's tool prints them, its output)."""
    capsys.readouterr()
    status = main(["plan-reset", "--bootstrap-server", bootstrap, "--home", str(home), "--group", group, *specifier])
    captured = capsys.readouterr()
    return status, _rows(captured.out.splitlines()), captured.out + captured.err


def _rows(lines: list[str]) -> set[tuple[str, ...]]:
    """The rows under the GROUP TOPIC PARTITION NEW-OFFSET header: their first four columns."""
    start = next((i for i, line in enumerate(lines) if line.split()[:4] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]),
                 None)
    if start is None:
        return set()
    return {tuple(line.split()[:4]) for line in lines[start + 1:] if line.strip() and len(line.split()) >= 4
            and line.split()[2].isdigit()}


def iso(ms: int, zone: str = "Z") -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + zone


@pytest.fixture(scope="module")
def standalone(ledger):
    bootstrap, _ = ledger
    standalone_commit(bootstrap, "reset-standalone", COMMITTED)
    return "reset-standalone"


def specifiers(last_ms: int) -> dict[str, list[str]]:
    """Each specifier and scope a case runs, by name. The times fall half a minute from the nearest
    record: the two tools run seconds apart, and --by-duration counts from each one's now."""
    since_ms = int(time.time() * 1000) - (last_ms - 150_000)
    return {
        "to-earliest": ["--to-earliest", "--topic", LEDGER],
        "to-latest": ["--to-latest", "--all-topics"],
        "to-current": ["--to-current", "--topic", LEDGER],  # partition 2 has none: the log end
        "to-offset clamped": ["--to-offset", "2", "--topic", f"{LEDGER}:0,1"],  # 0: below its log start
        "to-offset past the end": ["--to-offset", "100", "--topic", LEDGER],
        "to-offset 0": ["--to-offset", "0", "--topic", f"{LEDGER}:1"],
        "shift-by back": ["--shift-by", "-3", "--topic", f"{LEDGER}:0,1"],
        "shift-by on": ["--shift-by", "5", "--topic", f"{LEDGER}:0,1"],
        # half a minute after the record 3 minutes before the last one; in a zone of its own
        "to-datetime": ["--to-datetime", iso(last_ms - 150_000 + 3_600_000, "+01:00"), "--topic", LEDGER],
        "to-datetime before the log start": ["--to-datetime", iso(last_ms - 3_600_000), "--topic", LEDGER],
        # no record that late: ListOffsets finds none, and the log end is taken
        "to-datetime after the last record": ["--to-datetime", iso(last_ms + 30_000), "--topic", LEDGER],
        "by-duration": ["--by-duration", f"PT{since_ms // 1000}S", "--all-topics"],
    }


@pytest.mark.parametrize("case", list(specifiers(0)))
def test_every_specifier_gives_kafkas_new_offsets(ledger, standalone, tmp_path, capsys, case):
    bootstrap, last_ms = ledger
    specifier = specifiers(last_ms)[case]
    kafka_status, kafka_rows, kafka_output = kafka_dry_run(bootstrap, standalone, *specifier)
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, standalone, *specifier)
    assert kafka_status == status == 0, (kafka_output, output)
    assert rows == kafka_rows and rows, (kafka_output, output)


def test_the_facts_of_a_clamped_reset_and_what_it_costs(ledger, standalone, tmp_path, capsys):
    bootstrap, _ = ledger
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, standalone, "--shift-by", "-3", "--topic", LEDGER)
    # partition 2 has no committed offset: Kafka's tool refuses to shift it, and so does the plan
    assert status == 1 and f"cannot shift the offset of a partition without a committed offset: {LEDGER}-2" in output
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, standalone, "--to-earliest", "--topic", f"{LEDGER}:0,1")
    header = next(line for line in output.splitlines() if line.startswith("GROUP"))
    assert header.split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET", "LOG-START", "LOG-END",
                              "READ-AGAIN", "SKIPPED", "CLAMPED-TO"]
    by_partition = {line.split()[2]: line.split()[3:] for line in output.splitlines() if line.startswith(standalone)}
    # to the log start: 6 -> 4 reads 2 again; 2 -> 0 reads 2 again
    assert by_partition == {"0": ["4", "6", "4", "10", "2", "0", "-"], "1": ["0", "2", "0", "6", "2", "0", "-"]}
    assert "read 4 messages again and skip 0" in output
    status, _, output = plan_reset(bootstrap, tmp_path, capsys, standalone, "--to-offset", "1", "--topic", f"{LEDGER}:0")
    assert [line.split()[3:] for line in output.splitlines() if line.startswith(standalone)] == \
        [["4", "6", "4", "10", "2", "0", "log", "start"]]


@pytest.mark.parametrize(("scope", "kafka_says", "we_say"), [
    (["--topic", "nosuch"], "UnknownTopicOrPartitionException", "unknown topic nosuch"),
    (["--topic", f"{LEDGER}:7"], f'The partitions "{LEDGER}-7" do not exist', f'The partitions "{LEDGER}-7" do not exist'),
])
def test_unknown_topics_and_partitions_are_refused_as_kafka_refuses_them(ledger, standalone, tmp_path, capsys,
                                                                           scope, kafka_says, we_say):
    bootstrap, _ = ledger
    result = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--reset-offsets", "--group", standalone,
                                               "--to-earliest", *scope, "--dry-run"], timeout_s=120)
    assert kafka_says in result.stdout + result.stderr
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, standalone, "--to-earliest", *scope)
    assert status == 2 and we_say in output and not rows


@pytest.mark.parametrize(("args", "says"), [
    (["--group", "nosuch-group", "--to-earliest", "--all-topics"], "--group nosuch-group: the cluster knows no such group"),
    (["--group", "reset-standalone", "--to-datetime", "2026-12-07 10:00", "--all-topics"], "error parsing timestamp"),
    (["--group", "reset-standalone", "--by-duration", "30M", "--all-topics"], "invalid duration '30M'"),
    (["--group", "reset-standalone", "--from-file", "{bad_csv}"], "line 1 of the reset file has 2 fields"),
    (["--group", "reset-standalone", "--from-file", "{missing}"], "cannot read the reset file"),
    (["--group", "reset-standalone", "--to-earliest"], "one of the reset scopes should be defined"),
    (["--group", "reset-standalone", "--to-earliest", "--topic", "ledger:x"], "partitions must be integers"),
    (["--group", "reset-standalone", "--to-earliest", "--to-latest", "--all-topics"], "not allowed with argument"),
], ids=["unknown group", "datetime", "duration", "csv", "no file", "no scope", "partition", "two specifiers"])
def test_bad_input_is_named_with_exit_code_2_and_nothing_is_stored(ledger, standalone, tmp_path, capsys, args, says):
    bootstrap, _ = ledger
    (tmp_path / "bad.csv").write_text(f"{LEDGER},0\n")
    args = [arg.format(bad_csv=tmp_path / "bad.csv", missing=tmp_path / "missing.csv") for arg in args]
    capsys.readouterr()
    try:
        status = main(["plan-reset", "--bootstrap-server", bootstrap, "--home", str(tmp_path), *args])
    except SystemExit as exit:  # argparse's own refusals
        status = exit.code
    assert status == 2 and says in capsys.readouterr().err
    assert not lake_for_models(tmp_path / "lake").exists("cleanup_plans")


def test_a_new_group_gets_its_first_offsets_only_when_asked_as_kafkas_tool_gives_them(ledger, tmp_path, capsys):
    bootstrap, _ = ledger
    kafka_status, kafka_rows, kafka_output = kafka_dry_run(bootstrap, "reset-new", "--to-earliest", "--topic", LEDGER)
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, "reset-new", "--to-earliest", "--topic", LEDGER,
                                      "--allow-new-group")
    assert status == 0 and rows == kafka_rows and len(rows) == len(RECORDS), (kafka_output, output)


def test_a_group_with_members_is_refused_in_kafkas_words(ledger, tmp_path, capsys):
    bootstrap, _ = ledger
    member = join_group(bootstrap, "reset-busy", [LEDGER], len(RECORDS))
    try:
        _, kafka_rows, kafka_output = kafka_dry_run(bootstrap, "reset-busy", "--to-earliest", "--all-topics")
        status, rows, output = plan_reset(bootstrap, tmp_path, capsys, "reset-busy", "--to-earliest", "--all-topics")
    finally:
        member.close()
    refusal = "Assignments can only be reset if the group 'reset-busy' is inactive, but the current state is Stable."
    assert refusal in kafka_output and not kafka_rows
    assert status == 1 and refusal in output and not rows


def test_from_file_reads_kafkas_export_and_clamps_it(ledger, standalone, tmp_path, capsys):
    bootstrap, _ = ledger
    status, _, output = plan_reset(bootstrap, tmp_path, capsys, standalone, "--to-offset", "5", "--topic", LEDGER)
    plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
    capsys.readouterr()
    assert main(["show", plan_id, "--export", "--home", str(tmp_path)]) == 0
    exported = capsys.readouterr().out
    kafka = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--reset-offsets", "--group", standalone,
                                              "--to-offset", "5", "--topic", LEDGER, "--dry-run", "--export"])
    assert sorted(exported.splitlines()) == sorted(kafka.stdout.split()) == \
        [f"{LEDGER},0,5", f"{LEDGER},1,5", f"{LEDGER},2,3"]
    edited = tmp_path / "reset.csv"
    edited.write_text(f"{LEDGER},0,1\n{LEDGER},1,4\n")
    kafka_status, kafka_rows, _ = kafka_dry_run(bootstrap, standalone, "--from-file", str(edited))
    status, rows, _ = plan_reset(bootstrap, tmp_path, capsys, standalone, "--from-file", str(edited))
    assert rows == kafka_rows == {(standalone, LEDGER, "0", "4"), (standalone, LEDGER, "1", "4")}


@pytest.fixture(scope="module")
def twins(ledger):
    """For each kind of group Kafka resets, two equal Empty groups: `<kind>-kafka` and `<kind>-project`.
    The classic and consumer (KIP-848) groups joined, committed COMMITTED and left."""
    bootstrap, _ = ledger
    for side in ("kafka", "project"):
        classic = join_group(bootstrap, f"classic-{side}", [LEDGER], len(RECORDS))
        commit(classic, {tp: (offset, "") for tp, offset in COMMITTED.items()})
        classic.close()
        member = kip848_member(bootstrap, f"consumer-{side}", [LEDGER])
        wait_assigned([member], [len(RECORDS)])
        commit(member, {tp: (offset, "") for tp, offset in COMMITTED.items()})
        member.close()
        standalone_commit(bootstrap, f"standalone-{side}", COMMITTED)
    return bootstrap


@pytest.mark.parametrize("kind", ["classic", "consumer", "standalone"])
def test_apply_commits_what_kafkas_execute_commits(twins, admin, tmp_path, capsys, monkeypatch, kind):
    bootstrap = twins
    specifier = ["--shift-by", "-3", "--topic", f"{LEDGER}:0,1"]
    result = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--reset-offsets", "--group",
                                               f"{kind}-kafka", *specifier, "--execute"], timeout_s=120)
    assert result.returncode == 0, result.stdout + result.stderr
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    monkeypatch.setenv(USER_ENV, "ops")
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, f"{kind}-project", *specifier)
    assert status == 0, output
    plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
    monkeypatch.setenv(USER_ENV, "alice")
    assert main(["approve", plan_id, "--home", str(tmp_path)]) == 0
    # 6 -> 3, clamped to the log start 4, reads 2 again; 2 -> -1, clamped to 0, reads 2 again
    assert "what was approved: the reset makes the group read 4 messages again and skip 0" in capsys.readouterr().out
    assert main(["apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("0 deleted, 2 committed (offset resets), 0 skipped, 0 failed\n")
    kafka_side = group_calls.live_group(admin, f"{kind}-kafka").committed_offsets
    assert group_calls.live_group(admin, f"{kind}-project").committed_offsets == kafka_side
    assert {tp: kafka_side[tp] for tp in COMMITTED} == {(LEDGER, 0): DELETED_BELOW, (LEDGER, 1): 0}
    # applied once: a second apply sends nothing
    assert main(["apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(tmp_path)]) == 0
    assert "0 approved actions to apply (2 already done" in capsys.readouterr().out


def test_apply_skips_a_partition_whose_offset_changed_and_a_group_that_came_back(ledger, admin, tmp_path, capsys, monkeypatch):
    bootstrap, _ = ledger
    standalone_commit(bootstrap, "reset-moving", COMMITTED)
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    monkeypatch.setenv(USER_ENV, "ops")
    _, _, output = plan_reset(bootstrap, tmp_path, capsys, "reset-moving", "--to-latest", "--topic", f"{LEDGER}:0,1")
    plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
    monkeypatch.setenv(USER_ENV, "alice")
    assert main(["approve", plan_id, "--home", str(tmp_path)]) == 0
    standalone_commit(bootstrap, "reset-moving", {(LEDGER, 1): 3})  # it committed after the plan was made
    capsys.readouterr()
    assert main(["apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    assert output.endswith("0 deleted, 1 committed (offset resets), 1 skipped, 0 failed\n")
    assert group_calls.live_group(admin, "reset-moving").committed_offsets == {(LEDGER, 0): RECORDS[0], (LEDGER, 1): 3}
    capsys.readouterr()
    assert main(["show", plan_id, "--home", str(tmp_path)]) == 0
    assert "the group moved since the plan (offset 3 now, 2 when planned)" in capsys.readouterr().out

    # planned while Empty, applied after a member joined: skipped, nothing committed
    standalone_commit(bootstrap, "reset-rejoined", COMMITTED)
    monkeypatch.setenv(USER_ENV, "ops")
    _, _, output = plan_reset(bootstrap, tmp_path, capsys, "reset-rejoined", "--to-earliest", "--all-topics")
    plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
    monkeypatch.setenv(USER_ENV, "alice")
    assert main(["approve", plan_id, "--home", str(tmp_path)]) == 0
    member = join_group(bootstrap, "reset-rejoined", [LEDGER], len(RECORDS))
    try:
        capsys.readouterr()
        assert main(["apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(tmp_path)]) == 0
        assert capsys.readouterr().out.endswith("0 deleted, 2 skipped, 0 failed\n")
    finally:
        member.close()
    assert group_calls.live_group(admin, "reset-rejoined").committed_offsets == COMMITTED


class SimulatedCrash(BaseException):
    """The apply dies here (a BaseException, so that no `except Exception` records anything)."""


@pytest.mark.parametrize("dies", ["after the commit", "before the commit"])
def test_an_apply_that_died_around_its_commit_is_settled_by_the_next(ledger, admin, connection, tmp_path, capsys,
                                                                     monkeypatch, dies):
    bootstrap, _ = ledger
    group = f"reset-died-{dies.split()[0]}"
    standalone_commit(bootstrap, group, COMMITTED)
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    monkeypatch.setenv(USER_ENV, "ops")
    _, _, output = plan_reset(bootstrap, tmp_path, capsys, group, "--to-latest", "--topic", f"{LEDGER}:0,1")
    plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
    monkeypatch.setenv(USER_ENV, "alice")
    assert main(["approve", plan_id, "--home", str(tmp_path)]) == 0
    lake = lake_for_models(tmp_path / "lake")
    with monkeypatch.context() as crash:
        if dies == "after the commit":
            real_append = Lake.append

            def append(self, name, data):
                if name == "cleanup_audit" and "committed" in data.column("outcome").to_pylist():
                    raise SimulatedCrash(dies)
                return real_append(self, name, data)
            crash.setattr(Lake, "append", append)
        else:
            crash.setattr(group_calls, "commit_offsets", lambda *args: (_ for _ in ()).throw(SimulatedCrash(dies)))
        with pytest.raises(SimulatedCrash):
            apply_plan(lake, connection, plan_id, emit=lambda line: None)
    latest = {(LEDGER, 0): RECORDS[0], (LEDGER, 1): RECORDS[1]}
    assert group_calls.live_group(admin, group).committed_offsets == (latest if dies == "after the commit" else COMMITTED)
    lines: list[str] = []
    result = apply_plan(lake, connection, plan_id, emit=lines.append)
    outcomes = sorted((row["outcome"], row["intent_id"] is not None) for row in result.outcomes)
    if dies == "after the commit":
        # settled from OffsetFetch, not sent again
        assert outcomes == [("committed", True)] * 2 and "2 already done" in "\n".join(lines)
    else:
        # settled as interrupted, then re-checked (the offsets are still the planned ones) and sent
        assert outcomes == [("committed", True)] * 2 + [("interrupted", True)] * 2
    assert group_calls.live_group(admin, group).committed_offsets == latest


def test_the_dagster_job_plans_the_reset_and_the_approval_jobs_apply_it(ledger, admin, tmp_path, monkeypatch):
    from dagster import DagsterInstance

    from offsets_platform_dagster.cleanup import OPEN_PLANS
    from offsets_platform_dagster.definitions import defs

    bootstrap, _ = ledger
    group = "reset-from-dagster"
    standalone_commit(bootstrap, group, COMMITTED)
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    resources = {"lake": {"config": {"root": str(tmp_path / "lake")}}, "kafka": {"config": {"bootstrap_servers": bootstrap}}}

    def run(job: str, tags: dict, partition_key: str | None = None, ops: dict | None = None):
        result = defs.resolve_job_def(job).execute_in_process(
            run_config={"resources": resources, **({"ops": ops} if ops else {})}, instance=instance,
            raise_on_error=False, tags=tags, partition_key=partition_key)
        result.logged = "\n".join(entry.user_message for entry in instance.all_logs(result.run_id))
        return result

    with DagsterInstance.ephemeral() as instance:
        refused = run("plan_offset_reset", {"offsets_platform/user": "ops"}, ops={"plan_reset": {"config": {
            "group": group, "specifier": "SHIFT_BY", "value": "-3", "topics": [LEDGER]}}})
        (failure,) = refused.get_step_failure_events()
        assert "without a committed offset: ledger-2" in failure.event_specific_data.user_failure_data.description
        planned = run("plan_offset_reset", {"offsets_platform/user": "ops"}, ops={"plan_reset": {"config": {
            "group": group, "specifier": "TO_OFFSET", "value": "1", "topics": [f"{LEDGER}:0,1"]}}})
        assert planned.success, planned.logged
        plan_id = re.search(r"plan (\w+): reset --to-offset 1 of reset-from-dagster, 2 partitions", planned.logged).group(1)
        assert instance.get_dynamic_partitions(OPEN_PLANS.name) == [plan_id]
        assert "the group read 3 messages again and skip 0" in planned.logged  # 6 -> 4 (the log start), 2 -> 1
        approved = run("approve_cleanup", {"offsets_platform/user": "alice"}, plan_id)
        assert approved.success and "the reset makes the group read 3 messages again" in approved.logged
        applied = run("apply_cleanup", {"offsets_platform/user": "alice"}, plan_id)
        assert applied.success and "2 committed (offset resets)" in applied.logged
    assert group_calls.live_group(admin, group).committed_offsets == {(LEDGER, 0): DELETED_BELOW, (LEDGER, 1): 1}
