"""`offsets-platform describe` beside Kafka's own `kafka-consumer-groups --describe`, on the real broker.

The groups hold still (no member polls or commits after joining), so both tools see one state:
- `describe --live` prints the offsets table Kafka's tool prints, line for line: the same rows,
  order, padding and "-" for what is not known;
- `describe` from the lake, after ingest, a snapshot and a refresh, has the same current offset,
  log end offset and lag per partition as Kafka's tool.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from offsets_platform.broker.jvm import run_tool
from offsets_platform.cli import main
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.models import ModelRunner
from offsets_platform.models.project import lake_for_models
from tests.cleanup.direct_helpers import ORDERS, PAYMENTS, commit, empty_group, join_group, standalone_commit
from tests.cleanup.test_side_by_side_kafka_tool import CONSUMER_GROUP_COMMAND

QUIET = {"emit": lambda line: None}
GROUPS = ("live-classic", "live-kip848", "stopped", "standalone")


@pytest.fixture(scope="module")
def groups(bootstrap):
    """Four groups that hold still: two with a member (classic and KIP-848), each assigned
    every partition of orders with offsets on orders and payments; one Empty; one standalone."""
    members = []
    try:
        for group, protocol in (("live-classic", "classic"), ("live-kip848", "consumer")):
            consumer = join(bootstrap, group, protocol)
            commit(consumer, {(ORDERS, 0): (1, ""), (ORDERS, 2): (9, ""), (PAYMENTS, 1): (2, "")})
            members.append(consumer)
        empty_group(bootstrap, "stopped", [ORDERS], {(ORDERS, 1): 3})
        standalone_commit(bootstrap, "standalone", {(PAYMENTS, 0): 4, (PAYMENTS, 1): 6})
        yield GROUPS
    finally:
        for consumer in members:
            consumer.close()


def join(bootstrap: str, group: str, protocol: str) -> Consumer:
    """A member of `group` holding all 3 partitions of orders, by the classic or the KIP-848 protocol."""
    if protocol == "classic":
        return join_group(bootstrap, group, [ORDERS], 3)
    # A KIP-848 member takes its session timeout from the broker; librdkafka refuses to set one.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([ORDERS])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 3:
        assert time.monotonic() < deadline, f"{group} not assigned 3 partitions within 30 s"
        consumer.poll(0.2)
    return consumer


@pytest.fixture(scope="module")
def home(tmp_path_factory, groups, spark, connection):
    """A lake filled from the broker and refreshed, once the groups hold still."""
    home = tmp_path_factory.mktemp("home")
    lake = lake_for_models(home / "lake")
    ingest_offsets_topic(connection, lake, **QUIET)
    snapshot_cluster(connection, lake, **QUIET)
    ModelRunner(spark, lake, **QUIET).run_all()
    return home


def kafka_describe(bootstrap: str, group: str) -> list[str]:
    result = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--describe", "--group", group])
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def project(capsys, *argv: str) -> tuple[int, list[str], str]:
    """`offsets-platform ARGV` in this process: (exit status, stdout lines, stderr)."""
    capsys.readouterr()
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def offsets_table(lines: list[str]) -> list[str]:
    """The offsets table of `describe` output: from the line before its header to the blank line after."""
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP ") and "TOPIC" in line) - 1
    end = lines.index("", start + 1) if "" in lines[start + 1:] else len(lines)
    return lines[start:end]


@pytest.mark.parametrize("group", GROUPS)
def test_describe_live_prints_kafkas_table(bootstrap, groups, group, tmp_path, capsys):
    kafka = kafka_describe(bootstrap, group)
    status, ours, _ = project(capsys, "describe", group, "--live", "--bootstrap-server", bootstrap,
                              "--home", str(tmp_path))
    assert status == 0
    assert offsets_table(ours) == kafka
    # Not an empty comparison: a member's 3 partitions of orders (one without an offset) and the
    # unassigned payments-1; the Empty group's one offset; the standalone group's two.
    assert len(rows_of(kafka)) == {"stopped": 1, "standalone": 2}.get(group, 4)


def rows_of(lines: list[str]) -> dict[tuple[str, int], tuple[str, str, str]]:
    """(topic, partition) -> (current offset, log end offset, lag) of a Kafka-style offsets table."""
    rows = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[0] != "GROUP" and fields[2].isdigit():
            rows[(fields[1], int(fields[2]))] = tuple(fields[3:6])
    return rows


def lake_rows(lines: list[str]) -> dict[tuple[str, int], tuple[str, str, str]]:
    """The same from the lake's `describe`: TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ..."""
    rows = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 5 and fields[0] in (ORDERS, PAYMENTS) and fields[1].isdigit():
            rows[(fields[0], int(fields[1]))] = tuple(fields[2:5])
    return rows


@pytest.mark.parametrize("group", GROUPS)
def test_describe_from_the_lake_has_kafkas_offsets_and_lag(bootstrap, home, group, capsys):
    expected = rows_of(kafka_describe(bootstrap, group))
    committed = {key: value for key, value in expected.items() if value[0] != "-"}
    status, ours, _ = project(capsys, "describe", group, "--home", str(home))
    assert status == 0
    # The lake lists the partitions with a committed offset; Kafka's tool also lists assigned
    # partitions without one ("-"), which have no lag to show.
    assert lake_rows(ours) == committed
    assert committed


def test_a_group_nobody_knows_is_an_error_in_kafkas_words(bootstrap, home, tmp_path, capsys):
    kafka = run_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--describe", "--group", "nobody"])
    assert "Group nobody not found." in kafka.stdout
    status, out, err = project(capsys, "describe", "nobody", "--live", "--bootstrap-server", bootstrap,
                               "--home", str(tmp_path))
    assert (status, out, err.strip()) == (1, [], "Error: Group nobody not found.")
    status, out, err = project(capsys, "describe", "nobody", "--home", str(home))
    assert (status, out) == (1, [])
    assert err.startswith(f"Error: Group nobody not found in the lake in {home / 'lake'}, models last run ")
