"""A group's coordinator moves to another broker during a snapshot and during an apply.

Two brokers (the embedded cluster) hold every replica of `__consumer_offsets`, which has one
partition here, so every group's coordinator is that partition's leader. A move is Kafka's own:
AlterPartitionReassignments puts the other replica first, and ElectLeaders (preferred) makes it
the leader; the old broker then answers NOT_COORDINATOR. Right before chosen calls of the
project's code (fetching a group's offsets after describing it, a deletion), the coordinator moves
away from the broker the admin client found and holds, unless an earlier move took it away.
"""

from __future__ import annotations

import time

import pytest
from kafka import TopicPartition
from kafka.admin import OffsetSpec
from kafka.errors import OffsetNotAvailableError

from offsets_platform.broker.embedded import EmbeddedCluster
from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.ingest import snapshot_groups
from offsets_platform.ingest.snapshot_collect import take_snapshot
from offsets_platform.ingest.snapshot_rows import SnapshotRows
from offsets_platform.kafka.admin_calls import SnapshotAdminClient, open_admin
from offsets_platform.lake import Lake
from offsets_platform.settings import KafkaConnection
from tests.cleanup.apply_helpers import (
    QUIET, approved_plan, committed, delete_group_action, listed_groups, offset_delete_actions,
)
from tests.cleanup.direct_helpers import ORDERS, PAYMENTS, make_topics, standalone_commit

pytestmark = pytest.mark.integration

OFFSETS_PARTITION = TopicPartition("__consumer_offsets", 0)
NOT_COORDINATOR = 16
COORDINATOR_ERRORS = (14, 15, NOT_COORDINATOR)  # loading, not available, not coordinator
PREFERRED_ELECTION = 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(tmp_path_factory.mktemp("cluster"), overrides={"offsets.topic.num.partitions": "1"}) as running:
        make_topics(running.bootstrap_servers)
        yield running


@pytest.fixture(scope="module")
def connection(cluster) -> KafkaConnection:
    return KafkaConnection(bootstrap_servers=cluster.bootstrap_servers)


def coordinator_leaves(connection: KafkaConnection, broker: int) -> int:
    """Make sure `broker` is no longer the coordinator: if it leads `__consumer_offsets`, make the
    other broker the leader and wait until both know it (the new one answers about groups, here
    GROUP_ID_NOT_FOUND about a group that does not exist; the old one says NOT_COORDINATOR), and
    until the new leader's high watermark is where the old one's was. The new coordinator answers
    reads from its state at its high watermark (CoordinatorRuntime reads at the last committed
    offset), which trails the old one's for a moment after the move, seconds on a loaded machine:
    an OffsetFetch then misses the latest commits, and an apply rightly skips a group whose
    offsets look changed. The tests ask the client to follow a move, not to race its replication.
    Returns the coordinator's broker id."""
    with open_admin(connection, 15, 15) as admin:
        (topic,) = admin.describe_topics([OFFSETS_PARTITION.topic])
        (partition,) = topic["partitions"]
        leader = partition["leader_id"]
        if leader != broker:
            return leader
        committed = high_watermark(admin)
        (other,) = [replica for replica in partition["replica_nodes"] if replica != leader]
        assert admin.alter_partition_reassignments({OFFSETS_PARTITION: [other, leader]}) == {OFFSETS_PARTITION: None}
        admin.elect_leaders(PREFERRED_ELECTION, {OFFSETS_PARTITION.topic: [OFFSETS_PARTITION.partition]})
        probe, deadline = "coordinator-move-probe", time.monotonic() + 30
        while True:
            at_old = admin.describe_groups([probe], group_coordinator_id=leader)[probe].error_code
            at_new = admin.describe_groups([probe], group_coordinator_id=other)[probe].error_code
            if at_old == NOT_COORDINATOR and at_new not in COORDINATOR_ERRORS and high_watermark(admin) >= committed:
                return other
            assert time.monotonic() < deadline, f"the coordinator did not move from {leader} to {other}: {at_old}, {at_new}"
            time.sleep(0.1)


def high_watermark(admin: SnapshotAdminClient) -> int:
    """`__consumer_offsets`' high watermark at its leader; -1 while a new leader does not know it
    yet (OFFSET_NOT_AVAILABLE, KIP-207: until it reaches the start of the leader's epoch)."""
    try:
        return admin.list_partition_offsets({OFFSETS_PARTITION: OffsetSpec.LATEST})[OFFSETS_PARTITION].offset
    except OffsetNotAvailableError:
        return -1


def moving_before(connection: KafkaConnection, function, calls: list, groups_of):
    """`function(admin, *args)`, but right before each call the coordinator moves away from the
    broker the client holds for the call's groups (`groups_of(*args)`), unless it already has.
    Appends (the broker the client held, the coordinator) to `calls`."""
    def moved_then_called(admin, *args):
        (held,) = {admin.coordinator_of(group) for group in groups_of(*args)}
        calls.append((held, coordinator_leaves(connection, held) if held is not None else None))
        return function(admin, *args)
    return moved_then_called


def held_a_moved_coordinator(calls: list) -> bool:
    """Whether before each call the client held a coordinator, and not the current one."""
    return all(held is not None and held != now for held, now in calls)


def test_a_snapshot_keeps_the_offsets_of_a_group_whose_coordinator_moves_during_it(connection, monkeypatch):
    group, offsets = "snapshot-while-moving", {(ORDERS, 0): 3, (ORDERS, 1): 5}
    standalone_commit(connection.bootstrap_servers, group, offsets)
    calls: list = []
    # between describing the group (which found its coordinator) and fetching its offsets
    monkeypatch.setattr(snapshot_groups, "_add_committed_offsets", moving_before(
        connection, snapshot_groups._add_committed_offsets, calls, lambda rows, group_id: [group_id]))

    snapshot = take_snapshot(connection, groups=[group], topics=[ORDERS])

    assert len(calls) == 1 and held_a_moved_coordinator(calls)
    assert [row["group"] for row in snapshot.rows("group_snapshots")] == [group]
    assert {(row["topic"], row["partition"]): row["committed_offset"]
            for row in snapshot.rows("committed_offset_snapshots")} == offsets
    assert snapshot.errors == []


def test_an_offset_fetch_that_fails_while_the_coordinator_moves_leaves_its_error_row(connection, monkeypatch):
    """What the models rely on: a group whose offsets a snapshot could not fetch has an
    OffsetFetch error row, so that they are not read as removed (here the client asks only once)."""
    group = "snapshot-not-retrying"
    standalone_commit(connection.bootstrap_servers, group, {(ORDERS, 2): 7})
    calls: list = []
    monkeypatch.setattr(snapshot_groups, "_add_committed_offsets", moving_before(
        connection, snapshot_groups._add_committed_offsets, calls, lambda rows, group_id: [group_id]))
    rows = SnapshotRows()
    with SnapshotAdminClient(bootstrap_servers=connection.bootstrap_servers, request_timeout_ms=15000,
                             coordinator_retry_s=0) as admin:
        snapshot_groups.collect_groups(admin, rows, [group])

    assert len(calls) == 1 and held_a_moved_coordinator(calls)
    assert [row["group"] for row in rows.tables["group_snapshots"]] == [group]
    assert rows.tables["committed_offset_snapshots"] == []
    assert [(e["scope"], e["name"], e["operation"], e["error"]) for e in rows.tables["snapshot_errors"]] == [
        ("group", group, "OffsetFetch", "NOT_COORDINATOR")]


def test_an_apply_follows_the_coordinator_through_its_moves(connection, tmp_path, monkeypatch):
    """The coordinator is moved away from the broker the client holds between the live re-check's
    DescribeGroups and OffsetFetch of each group, and right before OffsetDelete and DeleteGroups.
    Every call finds the new coordinator, and Kafka carries out every action."""
    stale, idle = "apply-offsets-while-moving", "apply-group-while-moving"
    standalone_commit(connection.bootstrap_servers, stale, {(ORDERS, 0): 2, (ORDERS, 1): 4, (PAYMENTS, 0): 1})
    standalone_commit(connection.bootstrap_servers, idle, {(ORDERS, 2): 6})
    lake = Lake(tmp_path / "lake")
    actions = [*offset_delete_actions(connection, stale, ORDERS), delete_group_action(connection, idle)]
    plan = approved_plan(lake, actions)
    calls: list = []
    for name, groups_of in (("_committed_offsets", lambda group: [group]),
                            ("delete_offsets", lambda group, partitions: [group]),
                            ("delete_groups", lambda groups: groups)):
        monkeypatch.setattr(group_calls, name, moving_before(connection, getattr(group_calls, name), calls, groups_of))

    # four moves in one apply, each waited out by the client within its budget (three timeouts
    # over all its calls): twice the default timeout, for a machine loaded by other tests
    result = apply_plan(lake, connection, plan.plan_id, requested_by="bob", timeout_s=30, **QUIET)
    monkeypatch.undo()  # the checks below move nothing

    # the outcomes first: when an action was not carried out, they say why
    assert [(row["outcome"], row["error"]) for row in result.outcomes] == [("deleted", None)] * len(actions), \
        [(row["outcome"], row["error"], row["detail"]) for row in result.outcomes]
    assert len(calls) == 4 and held_a_moved_coordinator(calls)  # two live re-checks, two deletions
    assert committed(connection, stale) == {(PAYMENTS, 0): 1}
    assert idle not in listed_groups(connection)
