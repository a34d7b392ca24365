"""`offsets-platform delete-offsets` / `delete-groups` beside Kafka's own `kafka-consumer-groups`.

Each case makes the same kind of group twice on the module's broker, `<name>-kafka` for Kafka's
tool (ConsumerGroupCommand of the installed Kafka) and `<name>-project` for the project's
command, so that both act on equal state; then it compares what each printed, line by line, and
the exit statuses. Nothing is normalised but the differences named here:

- `side`: the group names differ by their suffix, which is replaced by `<side>` on both.
- ERROR NAMES: where a row or a --delete failure names an error, Kafka's tool prints the Java
  exception (`org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.`)
  and the project Kafka's error name (`NON_EMPTY_GROUP: The group is not empty.`); the message
  after it is the same. `as_kafka_prints` rewrites the project's lines into Kafka's names.
- EXIT STATUS: Kafka's tool exits 0 even when everything failed; the project exits 1 when
  anything failed or was refused.
- REFUSAL: without --force the project sends nothing for a request naming a topic that live
  members subscribe to (Kafka's tool sends it, Kafka refuses those partitions with
  GROUP_SUBSCRIBED_TO_TOPIC and deletes the others); with --force it prints what Kafka's tool does.
- VERDICT OF AN UNLISTED TOPIC: a topic named without partitions that the cluster does not know
  is a "-" row on both, but Kafka's tool still says "Request succeeded" when the partitions it
  sent succeeded; the project says there was a partition-level error.
- ORDER OF --delete FAILURES: Kafka's tool lists the failed groups (and the deleted ones) in the
  order of a Java HashMap, the project in the order asked; these lines are compared as sets.

The column padding is not normalised: the project pads as Kafka's tool does.
"""

from __future__ import annotations

import re

import pytest

from offsets_platform.cli import main
from offsets_platform.broker.jvm import run_tool
from proving_ground.workload.live.clients import committed_offsets
from tests.cleanup.direct_helpers import (
    ORDERS, PAYMENTS, commit, empty_group, join_group, standalone_commit,
)

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SIDES = ("kafka", "project")
JAVA_EXCEPTIONS = {  # Kafka's error name -> the exception Kafka's tool prints for it
    "GROUP_SUBSCRIBED_TO_TOPIC": "org.apache.kafka.common.errors.GroupSubscribedToTopicException",
    "UNKNOWN_TOPIC_OR_PARTITION": "org.apache.kafka.common.errors.UnknownTopicOrPartitionException",
    "GROUP_ID_NOT_FOUND": "org.apache.kafka.common.errors.GroupIdNotFoundException",
    "INVALID_GROUP_ID": "org.apache.kafka.common.errors.InvalidGroupIdException",
    "NON_EMPTY_GROUP": "org.apache.kafka.common.errors.GroupNotEmptyException",
}
_ERROR_NAME = re.compile(r"(Error: |due to: )(" + "|".join(JAVA_EXCEPTIONS) + r"): ")


def kafka_tool(bootstrap: str, *args: str) -> tuple[int, list[str]]:
    """Run kafka-consumer-groups (one JVM, a second or two); (exit status, stdout lines)."""
    result = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, *args], timeout_s=120)
    return result.returncode, _side_neutral(result.stdout.splitlines(), "kafka")


def project(bootstrap: str, home, capsys, *args: str) -> tuple[int, list[str]]:
    """Run the same command through the project's command line, in this process."""
    capsys.readouterr()
    status = main([args[0], "--bootstrap-server", bootstrap, "--home", str(home), *args[1:]])
    return status, _side_neutral(capsys.readouterr().out.splitlines(), "project")


def as_kafka_prints(lines: list[str]) -> list[str]:
    """The project's lines with each error name replaced by the Java exception Kafka's tool names."""
    return [_ERROR_NAME.sub(lambda m: f"{m.group(1)}{JAVA_EXCEPTIONS[m.group(2)]}: ", line) for line in lines]


def _side_neutral(lines: list[str], side: str) -> list[str]:
    return [line.replace(f"-{side}", "-<side>") for line in lines]


def both(name: str) -> dict[str, str]:
    return {side: f"{name}-{side}" for side in SIDES}


@pytest.fixture(scope="module")
def live_groups(bootstrap):
    """`live-<side>`: one member subscribed to orders, offsets committed on orders and payments."""
    consumers = {}
    try:
        for side, group in both("live").items():
            consumers[side] = join_group(bootstrap, group, [ORDERS], 3)
            commit(consumers[side], {(ORDERS, 0): (1, ""), (ORDERS, 1): (2, ""), (PAYMENTS, 0): (3, ""),
                                     (PAYMENTS, 1): (4, "")})
        yield both("live")
    finally:
        for consumer in consumers.values():
            consumer.close()


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def test_delete_offsets_of_an_empty_group_prints_the_same_table(bootstrap, admin, home, capsys):
    groups = both("stale")
    for group in groups.values():
        empty_group(bootstrap, group, [ORDERS, PAYMENTS], {(ORDERS, 0): 5, (ORDERS, 1): 7, (PAYMENTS, 1): 6})
    args = ("--topic", ORDERS, "--topic", f"{PAYMENTS}:1")
    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", groups["kafka"], *args)
    ours = project(bootstrap, home, capsys, "delete-offsets", "--group", groups["project"], *args)
    assert ours == kafka == (0, [
        "Request succeeded for deleting offsets from group stale-<side>.",
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Successful     ",
        "orders          1          Successful     ",
        "orders          2          Successful     ",  # a topic alone is all its partitions, on both
        "payments        1          Successful     ",
    ])
    assert committed_offsets(admin, groups["kafka"]) == committed_offsets(admin, groups["project"]) == {}


def test_delete_offsets_of_a_subscribed_topic_refused_first_then_forced_like_kafka(
        bootstrap, admin, home, capsys, live_groups):
    args = ("--topic", f"{ORDERS}:0", "--topic", PAYMENTS)
    # REFUSAL: the project sends nothing; Kafka's tool sends it all and Kafka deletes payments.
    status, refused = project(bootstrap, home, capsys, "delete-offsets", "--group", live_groups["project"], *args)
    assert status == 1 and refused[0] == "" and len(refused) == 2
    assert refused[1].startswith("Error: Refusing to delete offsets of group 'live-<side>': its 1 live member(s) "
                                 "subscribe to 'orders'.")
    assert committed_offsets(admin, live_groups["project"]) == {
        (ORDERS, 0): 1, (ORDERS, 1): 2, (PAYMENTS, 0): 3, (PAYMENTS, 1): 4}

    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", live_groups["kafka"], *args)
    status, forced = project(bootstrap, home, capsys, "delete-offsets", "--group", live_groups["project"], *args,
                             "--force")
    assert kafka == (0, [
        "",
        "Error: Encountered some partition-level error, see the follow-up details.",
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: "
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
        "payments        0          Successful     ",
        "payments        1          Successful     ",
    ])
    assert (status, as_kafka_prints(forced)) == (1, kafka[1])  # EXIT STATUS, ERROR NAMES
    assert committed_offsets(admin, live_groups["kafka"]) == committed_offsets(admin, live_groups["project"]) == {
        (ORDERS, 0): 1, (ORDERS, 1): 2}


def test_delete_offsets_of_an_unknown_group_is_the_same_group_level_error(bootstrap, home, capsys):
    groups = both("never-existed")
    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", groups["kafka"], "--topic", f"{ORDERS}:0,2")
    status, ours = project(bootstrap, home, capsys, "delete-offsets", "--group", groups["project"],
                           "--topic", f"{ORDERS}:0,2")
    assert kafka == (0, [
        "",
        "Error: The group id does not exist.",
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Error: org.apache.kafka.common.errors.GroupIdNotFoundException: "
        "The group id does not exist.",
        "orders          2          Error: org.apache.kafka.common.errors.GroupIdNotFoundException: "
        "The group id does not exist.",
    ])
    assert (status, as_kafka_prints(ours)) == (1, kafka[1])


def test_delete_offsets_of_unknown_topics_and_partitions_is_the_same_table(bootstrap, admin, home, capsys):
    groups = both("typo")
    for group in groups.values():
        standalone_commit(bootstrap, group, {(ORDERS, 0): 1, (ORDERS, 1): 1})
    args = ("--topic", "ordres", "--topic", f"{ORDERS}:7,0", "--topic", "ordres2:0")
    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", groups["kafka"], *args)
    status, ours = project(bootstrap, home, capsys, "delete-offsets", "--group", groups["project"], *args)
    unknown = ("Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
               "This server does not host this topic-partition.")
    assert kafka == (0, [
        "",
        "Error: Encountered some partition-level error, see the follow-up details.",
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Successful     ",
        f"orders          7          {unknown}",
        f"ordres          -          {unknown}",  # named without partitions: not listed, not sent
        f"ordres2         0          {unknown}",
    ])
    assert (status, as_kafka_prints(ours)) == (1, kafka[1])
    assert committed_offsets(admin, groups["kafka"]) == committed_offsets(admin, groups["project"]) == \
        {(ORDERS, 1): 1}


def test_an_unlisted_topic_beside_partitions_that_succeeded_is_an_error_verdict_here_only(
        bootstrap, home, capsys):
    groups = both("half-typo")
    for group in groups.values():
        standalone_commit(bootstrap, group, {(ORDERS, 0): 1})
    args = ("--topic", "ordres", "--topic", f"{ORDERS}:0")
    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", groups["kafka"], *args)
    status, ours = project(bootstrap, home, capsys, "delete-offsets", "--group", groups["project"], *args)
    table = [
        "",
        "TOPIC           PARTITION  STATUS         ",
        "orders          0          Successful     ",
        "ordres          -          Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "This server does not host this topic-partition.",
    ]
    # VERDICT OF AN UNLISTED TOPIC: the same table under a different first line.
    assert kafka == (0, ["Request succeeded for deleting offsets from group half-typo-<side>."] + table)
    assert (status, as_kafka_prints(ours)) == (
        1, ["", "Error: Encountered some partition-level error, see the follow-up details."] + table)


def test_delete_offsets_with_an_empty_group_id_is_invalid_on_both(bootstrap, home, capsys):
    # The same group "" on both sides: nothing exists to change.
    kafka = kafka_tool(bootstrap, "--delete-offsets", "--group", "", "--topic", ORDERS)
    status, ours = project(bootstrap, home, capsys, "delete-offsets", "--group", "", "--topic", ORDERS)
    invalid = "Error: org.apache.kafka.common.errors.InvalidGroupIdException: The group id is invalid."
    assert kafka == (0, ["", "Error: The group id is invalid.", "",
                         "TOPIC           PARTITION  STATUS         ",
                         f"orders          0          {invalid}",
                         f"orders          1          {invalid}",
                         f"orders          2          {invalid}"])
    assert (status, as_kafka_prints(ours)) == (1, kafka[1])


def test_delete_groups_reports_the_same_failures_and_deletions(bootstrap, admin, home, capsys, live_groups):
    done, gone, ghost = both("done"), both("gone"), both("ghost")
    for side in SIDES:
        empty_group(bootstrap, done[side], [ORDERS], {(ORDERS, 0): 5})
        standalone_commit(bootstrap, gone[side], {(PAYMENTS, 1): 2})
    outputs = {}
    outputs["kafka"] = kafka_tool(bootstrap, "--delete", *[arg for side_groups in (done, live_groups, ghost, gone)
                                                          for arg in ("--group", side_groups["kafka"])])
    outputs["project"] = project(bootstrap, home, capsys, "delete-groups",
                                 *[arg for side_groups in (done, live_groups, ghost, gone)
                                   for arg in ("--group", side_groups["project"])])
    (kafka_status, kafka), (status, ours) = outputs["kafka"], outputs["project"]
    ours = as_kafka_prints(ours)
    assert (kafka_status, status) == (0, 1)  # EXIT STATUS
    # ORDER OF --delete FAILURES: the lines around them are compared as they are.
    assert kafka[:2] == ours[:2] == ["", "Error: Deletion of some consumer groups failed:"]
    assert set(kafka[2:4]) == set(ours[2:4]) == {
        "* Group 'live-<side>' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
        "* Group 'ghost-<side>' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist."}
    assert kafka[4] == ours[4] == ""
    assert len(kafka) == len(ours) == 6
    prefix = "These consumer groups were deleted successfully: "
    assert kafka[5].startswith(prefix) and ours[5].startswith(prefix)
    assert sorted(kafka[5].removeprefix(prefix).split(", ")) == sorted(ours[5].removeprefix(prefix).split(", ")) \
        == ["'done-<side>'", "'gone-<side>'"]
    listed = {group["group_id"] for group in admin.list_groups()}
    for side in SIDES:
        assert {done[side], gone[side]}.isdisjoint(listed) and live_groups[side] in listed


def test_delete_groups_success_line_is_the_same(bootstrap, home, capsys):
    first, second = both("idle-a"), both("idle-b")
    for side in SIDES:
        standalone_commit(bootstrap, first[side], {(ORDERS, 2): 1})
        standalone_commit(bootstrap, second[side], {(ORDERS, 2): 1})
    kafka = kafka_tool(bootstrap, "--delete", "--group", first["kafka"], "--group", second["kafka"])
    ours = project(bootstrap, home, capsys, "delete-groups", "--group", first["project"], "--group", second["project"])
    success = re.compile(r"Deletion of requested consumer groups \('(idle-[ab])-<side>', '(idle-[ab])-<side>'\) "
                         r"was successful\.")
    for status, lines in (kafka, ours):
        assert status == 0 and len(lines) == 1
        # ORDER OF --delete groups: Kafka's tool names them in a HashMap's order.
        assert sorted(success.fullmatch(lines[0]).groups()) == ["idle-a", "idle-b"]
