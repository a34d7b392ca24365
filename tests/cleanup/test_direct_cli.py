"""`offsets-platform delete-offsets` / `delete-groups` against the embedded Apache Kafka broker.

Each test makes its own groups with real confluent-kafka consumers, runs the command as the CLI
does, and checks three things: the broker's state afterwards, the printed output (exactly), and
the cleanup_audit rows. The output is Kafka's tool's layout (see test_side_by_side_kafka_tool.py
for the two run side by side).
"""

from __future__ import annotations

import signal
from datetime import datetime, timezone

import pytest

from offsets_platform.cleanup.direct import TopicRequest, parse_topic_argument
from offsets_platform.broker.embedded import free_loopback_port
from offsets_platform.kafka.errors import BrokerUnreachable
from offsets_platform.settings import USER_ENV
from proving_ground.workload.live.clients import committed_offsets
from tests.cleanup.apply_helpers import listed_groups
from proving_ground.cli_process import run_cli_processes
from tests.cleanup.direct_helpers import (
    ORDERS, PAYMENTS, audit_rows, commit, empty_group, join_group, run_cli, standalone_commit,
)

HEADER = "TOPIC           PARTITION  STATUS         "
UNKNOWN = "Error: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition."
SUBSCRIBED = ("Error: GROUP_SUBSCRIBED_TO_TOPIC: "
              "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.")
PARTITION_LEVEL = ["", "Error: Encountered some partition-level error, see the follow-up details.", ""]


def row(topic: str, partition, status: str) -> str:
    """One table row as Kafka's tool prints it when no topic is longer than 15: `%-15s %-10s %-15s`."""
    return "%-15s %-10s %-15s" % (topic, partition, status)


def succeeded(group: str) -> list[str]:
    return [f"Request succeeded for deleting offsets from group {group}.", ""]


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture(autouse=True)
def alice(monkeypatch):
    """The person the commands run for, as a login wrapper names them (a typed --by is no identity)."""
    monkeypatch.setenv(USER_ENV, "alice")


def command(name: str, bootstrap: str, home, *args: str) -> list[str]:
    return [name, "--bootstrap-server", bootstrap, "--home", str(home), *args]


def test_delete_offsets_deletes_prints_kafkas_table_and_audits(bootstrap, admin, home, capsys):
    empty_group(bootstrap, "stale-app", [ORDERS, PAYMENTS],
                {(ORDERS, 0): 5, (ORDERS, 1): 7, (ORDERS, 2): 9, (PAYMENTS, 0): 4, (PAYMENTS, 1): 6})
    before = datetime.now(timezone.utc)

    status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "stale-app",
                                  "--topic", ORDERS, "--topic", f"{PAYMENTS}:1"), capsys)

    assert status == 0
    assert out == [
        "Request succeeded for deleting offsets from group stale-app.",
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Successful     ",
        "orders          1          Successful     ",
        "orders          2          Successful     ",
        "payments        1          Successful     ",
    ]
    assert committed_offsets(admin, "stale-app") == {(PAYMENTS, 0): 4}
    audit = audit_rows(home, "stale-app")
    assert [(r["topic"], r["partition"], r["outcome"], r["error"]) for r in audit] == [
        (ORDERS, 0, "deleted", None), (ORDERS, 1, "deleted", None), (ORDERS, 2, "deleted", None),
        (PAYMENTS, 1, "deleted", None)]
    for audited in audit:
        assert (audited["origin"], audited["action"], audited["plan_id"], audited["action_id"]) == \
            ("cli", "OffsetDelete", None, None)
        assert (audited["bootstrap_servers"], audited["requested_by"]) == (bootstrap, "alice")
        assert before <= audited["at"] <= datetime.now(timezone.utc)
    assert len({audited["audit_id"] for audited in audit}) == 4


def test_delete_offsets_of_a_subscribed_topic_is_refused_unless_forced(bootstrap, admin, home, capsys):
    consumer = join_group(bootstrap, "busy-app", [ORDERS], 3)
    commit(consumer, {(ORDERS, 0): (1, ""), (ORDERS, 1): (2, ""), (PAYMENTS, 0): (3, "")})
    try:
        committed = committed_offsets(admin, "busy-app")
        # One subscribed topic is enough to refuse the whole request: nothing reaches the broker.
        status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "busy-app",
                                      "--topic", ORDERS, "--topic", PAYMENTS), capsys)
        assert status == 1
        assert out == ["", (
            "Error: Refusing to delete offsets of group 'busy-app': its 1 live member(s) subscribe to 'orders'. "
            "Deleting the offsets of a group that is consuming would make it restart from auto.offset.reset, "
            "and Kafka answers GROUP_SUBSCRIBED_TO_TOPIC (KIP-496) for a topic it knows is subscribed. "
            "Nothing was sent. Leave these topics out, or add --force to send the request anyway.")]
        assert committed_offsets(admin, "busy-app") == committed
        refused = sorted(audit_rows(home, "busy-app"), key=lambda r: (r["topic"], r["partition"]))
        assert [(r["topic"], r["partition"], r["outcome"], r["error"]) for r in refused] == [
            (ORDERS, 0, "skipped", "GROUP_SUBSCRIBED_TO_TOPIC"), (ORDERS, 1, "skipped", "GROUP_SUBSCRIBED_TO_TOPIC"),
            (ORDERS, 2, "skipped", "GROUP_SUBSCRIBED_TO_TOPIC"), (PAYMENTS, 0, "skipped", None),
            (PAYMENTS, 1, "skipped", None)]
        assert refused[0]["detail"].startswith("not sent: Refusing to delete offsets of group 'busy-app'")
        assert refused[3]["detail"] == "not sent: the request named subscribed topics"

        # With --force the request goes out, and Kafka itself refuses the subscribed partition.
        status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "busy-app",
                                      "--topic", f"{ORDERS}:0", "--force"), capsys)
        assert (status, out) == (1, PARTITION_LEVEL + [HEADER, row(ORDERS, 0, SUBSCRIBED)])
        assert committed_offsets(admin, "busy-app") == committed
        forced = audit_rows(home, "busy-app")[5:]
        assert [(r["topic"], r["partition"], r["outcome"], r["error"]) for r in forced] == \
            [(ORDERS, 0, "failed", "GROUP_SUBSCRIBED_TO_TOPIC")]
        assert forced[0]["detail"].startswith("Deleting offsets of a topic is forbidden")
        assert "--force: sent although the group has 1 live member(s)" in forced[0]["detail"]
    finally:
        consumer.close()


def test_delete_offsets_of_an_unknown_group_is_a_group_level_error(bootstrap, home, capsys):
    status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "never-existed",
                                  "--topic", f"{ORDERS}:0,2"), capsys)
    assert status == 1
    assert out == ["", "Error: The group id does not exist.", "", HEADER,
                   row(ORDERS, 0, "Error: GROUP_ID_NOT_FOUND: The group id does not exist."),
                   row(ORDERS, 2, "Error: GROUP_ID_NOT_FOUND: The group id does not exist.")]
    assert [(r["topic"], r["partition"], r["outcome"], r["error"], r["detail"]) for r in audit_rows(home)] == [
        (ORDERS, 0, "failed", "GROUP_ID_NOT_FOUND", "The group id does not exist."),
        (ORDERS, 2, "failed", "GROUP_ID_NOT_FOUND", "The group id does not exist.")]


def test_delete_offsets_reports_unknown_topics_and_partitions_per_row(bootstrap, admin, home, capsys):
    standalone_commit(bootstrap, "typo-app", {(ORDERS, 0): 1, (ORDERS, 1): 1})
    # A topic named without partitions needs the metadata to list them (as in Kafka's tool, an
    # unknown one is a "-" row, not sent); named partitions go to the broker, which answers
    # UNKNOWN_TOPIC_OR_PARTITION for those that do not exist.
    status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "typo-app", "--topic", "ordres",
                                  "--topic", "ordres2:0", "--topic", f"{ORDERS}:7,0"), capsys)
    assert status == 1
    assert out == PARTITION_LEVEL + [HEADER, row(ORDERS, 0, "Successful"), row(ORDERS, 7, UNKNOWN),
                                     row("ordres", "-", UNKNOWN), row("ordres2", 0, UNKNOWN)]
    assert committed_offsets(admin, "typo-app") == {(ORDERS, 1): 1}
    audit = sorted(audit_rows(home, "typo-app"), key=lambda r: (r["topic"], r["partition"] or -1))
    assert [(r["topic"], r["partition"], r["outcome"], r["error"]) for r in audit] == [
        (ORDERS, 0, "deleted", None), (ORDERS, 7, "failed", "UNKNOWN_TOPIC_OR_PARTITION"),
        ("ordres", None, "skipped", "UNKNOWN_TOPIC_OR_PARTITION"),
        ("ordres2", 0, "failed", "UNKNOWN_TOPIC_OR_PARTITION")]
    assert audit[2]["detail"].endswith("not sent: the cluster metadata does not list this topic")


def test_delete_offsets_of_a_topic_without_committed_offsets_sends_all_its_partitions(bootstrap, home, capsys):
    # As Kafka's tool does: a topic alone means all its partitions, and Kafka answers without
    # error for a partition the group never committed (so a rerun succeeds again).
    standalone_commit(bootstrap, "rerun-app", {(ORDERS, 0): 1, (PAYMENTS, 1): 4})
    status, out, _ = run_cli(command("delete-offsets", bootstrap, home, "--group", "rerun-app",
                                  "--topic", PAYMENTS), capsys)
    assert (status, out) == (0, succeeded("rerun-app") + [
        HEADER, row(PAYMENTS, 0, "Successful"), row(PAYMENTS, 1, "Successful")])
    assert {(r["partition"], r["outcome"], r["detail"]) for r in audit_rows(home, "rerun-app")} == {
        (0, "deleted", "the group had no committed offset here"), (1, "deleted", None)}


def test_delete_groups_deletes_empty_groups_and_reports_kafkas_errors(bootstrap, admin, home, capsys):
    empty_group(bootstrap, "done-app", [ORDERS], {(ORDERS, 0): 5})
    consumer = join_group(bootstrap, "running-app", [PAYMENTS], 2)
    try:
        status, out, _ = run_cli(command("delete-groups", bootstrap, home, "--group", "done-app",
                                      "--group", "running-app", "--group", "ghost-app"), capsys)
        assert status == 1
        assert out == [
            "",
            "Error: Deletion of some consumer groups failed:",
            "* Group 'running-app' could not be deleted due to: NON_EMPTY_GROUP: The group is not empty.",
            "* Group 'ghost-app' could not be deleted due to: GROUP_ID_NOT_FOUND: The group id does not exist.",
            "",
            "These consumer groups were deleted successfully: 'done-app'"]
        listed = {group["group_id"] for group in admin.list_groups()}
        assert "done-app" not in listed and "running-app" in listed
        assert committed_offsets(admin, "done-app") == {}
    finally:
        consumer.close()
    audit = {r["group"]: r for r in audit_rows(home)}
    assert {g: (r["action"], r["outcome"], r["error"], r["detail"], r["topic"], r["partition"])
            for g, r in audit.items()} == {
        "done-app": ("DeleteGroups", "deleted", None, None, None, None),
        "running-app": ("DeleteGroups", "failed", "NON_EMPTY_GROUP", "The group is not empty.", None, None),
        "ghost-app": ("DeleteGroups", "failed", "GROUP_ID_NOT_FOUND", "The group id does not exist.", None, None)}
    assert {(r["origin"], r["requested_by"], r["bootstrap_servers"]) for r in audit.values()} == \
        {("cli", "alice", bootstrap)}


def test_delete_groups_success_line_and_os_user_as_requester(bootstrap, home, capsys, monkeypatch):
    standalone_commit(bootstrap, "simple-a", {(ORDERS, 0): 1})
    standalone_commit(bootstrap, "simple-b", {(PAYMENTS, 1): 2})
    monkeypatch.delenv(USER_ENV)
    monkeypatch.setenv("LOGNAME", "operator-bob")  # getpass.getuser() reads it first
    status, out, _ = run_cli(["delete-groups", "--bootstrap-server", bootstrap, "--home", str(home),
                           "--group", "simple-a", "--group", "simple-b"], capsys)
    assert (status, out) == (0, ["Deletion of requested consumer groups ('simple-a', 'simple-b') was successful."])
    assert {(r["group"], r["outcome"], r["requested_by"]) for r in audit_rows(home)} == \
        {("simple-a", "deleted", "operator-bob"), ("simple-b", "deleted", "operator-bob")}


@pytest.mark.parametrize("name", ["delete-offsets", "delete-groups"])
def test_a_broker_that_is_down_is_broker_unreachable_naming_the_address(name, home, capsys):
    address = f"127.0.0.1:{free_loopback_port()}"
    extra = ["--topic", ORDERS] if name == "delete-offsets" else []
    with pytest.raises(BrokerUnreachable, match=address.replace(".", r"\.")):
        run_cli([name, "--bootstrap-server", address, "--home", str(home), "--timeout", "1000",
                 "--group", "any", *extra], capsys)
    assert not (home / "lake").exists()  # nothing was sent, so nothing to audit


def test_without_any_bootstrap_address_the_command_says_so(home, capsys, monkeypatch):
    monkeypatch.delenv("OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", raising=False)
    status, out, err = run_cli(["delete-groups", "--home", str(home), "--group", "any"], capsys)
    assert (status, out) == (2, [])
    assert "give --bootstrap-server or set OFFSETS_PLATFORM_BOOTSTRAP_SERVERS" in err


def test_topic_arguments_follow_kafkas_syntax():
    assert parse_topic_argument("orders") == TopicRequest("orders")
    assert parse_topic_argument("orders:0,2,2") == TopicRequest("orders", (0, 2))
    for bad in ("orders:x", "orders:-1", ":0", "orders:"):
        with pytest.raises(ValueError):
            parse_topic_argument(bad)


@pytest.mark.parametrize("name,args", [("delete-groups", ["--group", "killed-direct"]),
                                       ("delete-offsets", ["--group", "killed-direct", "--topic", f"{ORDERS}:0"])])
def test_a_command_killed_after_sending_leaves_what_it_sent_in_the_audit(name, args, bootstrap, connection, admin,
                                                                         home):
    empty_group(bootstrap, "killed-direct", [ORDERS], {(ORDERS, 0): 5})
    (killed,) = run_cli_processes([["--die-before-answer", "--", *command(name, bootstrap, home, *args)]])
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    if name == "delete-groups":
        assert "killed-direct" not in listed_groups(connection), "Kafka deleted the group before the process died"
    else:
        assert committed_offsets(admin, "killed-direct") == {}
    (intent,) = audit_rows(home, "killed-direct", intents=True)
    assert (intent["action"], intent["origin"], intent["requested_by"]) == (
        "DeleteGroups" if name == "delete-groups" else "OffsetDelete", "cli", "alice")
    assert audit_rows(home, "killed-direct") == []  # the answer never got there; the intent says it was sent
