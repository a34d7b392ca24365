"""The live re-check, delete-offsets and apply on KIP-848, streams and share groups.

DescribeGroups answers GROUP_ID_NOT_FOUND for every group that is not classic; these groups must
still read with their type, state and members. Kafka judges what the re-check lets through: a
streams group's offsets outside its topology, and an Empty share group's state in
`__share_group_state`, which DeleteGroups deletes. The groups are made by real clients against the
embedded broker: confluent-kafka members with group.protocol=consumer (one subscribed by regex),
Kafka's console share consumer and Kafka Streams' WordCountDemo with group.protocol=streams.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.direct import TopicRequest, run_delete_offsets
from offsets_platform.kafka.group_calls import delete_offsets, live_group
from offsets_platform.cleanup.plans import (
    DELETE_GROUPS, CleanupPlan, PlannedAction, offset_key, save_plan, share_state_partitions,
)
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshot_collect import take_snapshot
from proving_ground.workload.live.clients import set_group_config
from proving_ground.workload.live.jvm_members import JvmMembers
from tests.cleanup.apply_helpers import approved_plan, offset_delete_actions
from tests.cleanup.direct_helpers import PAYMENTS, commit, create_topics, produce_counts, standalone_commit

QUIET = {"emit": lambda line: None}
GROUP = "kip848-app"
PREFIX_A, PREFIX_B = "prefix-a", "prefix-b"
STREAMS_INPUT, STREAMS_OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
SHARE_TOPIC = "alerts"
IDLE_SHARE = "alerts-idle"  # a share group whose one member leaves: Empty, with state in __share_group_state


def kip848_member(bootstrap: str, group: str, topics: list[str]) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 3})
    consumer.subscribe(topics)
    return consumer


def wait_assigned(consumers: list[Consumer], partitions: list[int]) -> None:
    """Poll every member until each holds its expected number of partitions."""
    deadline = time.monotonic() + 60
    while [len(c.assignment()) for c in consumers] != partitions:
        assert time.monotonic() < deadline, [c.assignment() for c in consumers]
        for consumer in consumers:
            consumer.poll(0.1)


@pytest.fixture(scope="module")
def kip848(bootstrap):
    """GROUP, Stable: one member subscribed to payments by name, one to ^prefix.* by regex; each
    committed the offsets of the partitions it holds."""
    create_topics(bootstrap, {PREFIX_A: (2, {}), PREFIX_B: (1, {})})
    produce_counts(bootstrap, PREFIX_A, [3, 3])
    by_name = kip848_member(bootstrap, GROUP, [PAYMENTS])
    by_regex = kip848_member(bootstrap, GROUP, ["^prefix.*"])
    try:
        wait_assigned([by_name, by_regex], [2, 3])
        commit(by_name, {(PAYMENTS, 0): (1, ""), (PAYMENTS, 1): (1, "")})
        commit(by_regex, {(PREFIX_A, 0): (2, ""), (PREFIX_A, 1): (2, ""), (PREFIX_B, 0): (0, "")})
        yield bootstrap
    finally:
        by_name.close()
        by_regex.close()


def stable_live_group(admin, group: str, timeout_s: float = 60.0):
    """live_group once the coordinator reports the group Stable: under load it can still be
    reconciling its members' assignments when the clients already see theirs."""
    deadline = time.monotonic() + timeout_s
    while (live := live_group(admin, group)).state != "Stable":
        assert time.monotonic() < deadline, f"{group} is {live.state} after {timeout_s} s"
        time.sleep(0.5)
    return live


def test_live_group_of_a_kip848_group_has_its_type_state_members_and_subscriptions(kip848, admin):
    live = stable_live_group(admin, GROUP)

    assert (live.group_type, live.state, live.member_count, live.exists) == ("consumer", "Stable", 2, True)
    by_regex = [m for m in live.members if m.subscribed_topic_regex]
    assert len(by_regex) == 1
    # librdkafka sends its regexes joined as "(r1)|(r2)"
    assert by_regex[0].subscribed_topic_regex == "(^prefix.*)" and by_regex[0].subscribed_topics == ()
    assert {a["topic"] for a in by_regex[0].assigned_partitions} == {PREFIX_A, PREFIX_B}
    # a regex member subscribes to at least what it is assigned
    assert live.subscribed_topics == {PAYMENTS, PREFIX_A, PREFIX_B}
    assert live.committed_offsets[(PREFIX_A, 1)] == 2


def test_delete_offsets_refuses_the_topics_kip848_members_subscribe_to(kip848, admin):
    for topic in (PAYMENTS, PREFIX_A):  # subscribed by name, and by regex
        result = run_delete_offsets(admin, GROUP, [TopicRequest(topic)])

        assert result.refusal is not None and "2 live member(s) subscribe to" in result.refusal, result
        assert {row.outcome for row in result.rows} == {"skipped"}
    assert live_group(admin, GROUP).committed_offsets[(PREFIX_A, 0)] == 2  # nothing was sent


def _plan_delete_group(lake, group: str, offsets: dict[tuple[str, int], int]) -> CleanupPlan:
    now = datetime.now(timezone.utc)
    action = PlannedAction(DELETE_GROUPS, group, None, None, "the group has been Empty for more than 0 h", facts={
        "group_state": "Empty", "member_count": 0,
        "offsets": {offset_key(t, p): o for (t, p), o in offsets.items()}})
    plan = CleanupPlan(uuid.uuid4().hex[:12], now, now + timedelta(hours=1), "test", (action,))
    save_plan(lake, plan)
    approve(lake, plan.plan_id, "tester")
    return plan


def test_apply_skips_deleting_a_kip848_group_that_gained_a_member_and_deletes_it_once_empty(
        kip848, lake, connection, admin):
    group = "kip848-idle"
    first = kip848_member(kip848, group, [PREFIX_B])
    wait_assigned([first], [1])
    commit(first, {(PREFIX_B, 0): (0, "")})
    first.close()
    assert live_group(admin, group).state == "Empty"
    plan = _plan_delete_group(lake, group, {(PREFIX_B, 0): 0})

    member = kip848_member(kip848, group, [PREFIX_B])
    try:
        wait_assigned([member], [1])
        result = apply_plan(lake, connection, plan.plan_id, **QUIET)
    finally:
        member.close()
    [row] = result.outcomes
    assert row["outcome"] == "skipped"
    assert row["detail"] == "the group gained members (1 now, 0 when planned)"

    # Once the member left, the group is Empty again (not Dead): the approved deletion goes through.
    [row] = apply_plan(lake, connection, plan.plan_id, **QUIET).outcomes
    assert (row["outcome"], row["error"]) == ("deleted", None)
    assert not live_group(admin, group).exists


@pytest.fixture(scope="module")
def jvm_groups(bootstrap):
    """Two share groups ("alerts-share" and IDLE_SHARE, one console share consumer each on alerts)
    and a streams group ("wordcount", one WordCountDemo), all Stable, the streams group with
    committed offsets: those of its topology, and one on payments committed before the application
    first ran, which the empty group kept when the streams member converted it
    (GroupMetadataManager.getOrCreateStreamsGroup), as an application moved to Kafka Streams keeps
    its consumer's."""
    create_topics(bootstrap, {SHARE_TOPIC: (1, {}), STREAMS_INPUT: (1, {}), STREAMS_OUTPUT: (1, {})})
    produce_counts(bootstrap, STREAMS_INPUT, [5])
    produce_counts(bootstrap, SHARE_TOPIC, [2])
    standalone_commit(bootstrap, "wordcount", {(PAYMENTS, 0): 1})
    members = JvmMembers(bootstrap)
    try:
        members.start_share_consumer("alerts-share", SHARE_TOPIC)
        # from the log start (share.auto.offset.reset=latest by default), so that it reads, and
        # acknowledges, the alerts already there
        set_group_config(AdminClient({"bootstrap.servers": bootstrap}), IDLE_SHARE,
                         {"share.auto.offset.reset": "earliest"})
        members.start_share_consumer(IDLE_SHARE, SHARE_TOPIC)
        members.start_wordcount("wordcount")
        yield members
    finally:
        members.stop()
        assert not members.running


def _wait_live(admin, group: str, ready) -> object:
    deadline = time.monotonic() + 90
    while True:
        live = live_group(admin, group)
        if ready(live):
            return live
        assert time.monotonic() < deadline, live
        time.sleep(1)


def test_share_and_streams_groups_read_with_their_type_state_and_members(jvm_groups, admin, connection):
    share = _wait_live(admin, "alerts-share", lambda g: g.state == "Stable" and g.member_count)
    assert (share.group_type, share.protocol_type, share.member_count) == ("share", "share", 1)
    assert share.subscribed_topics == {SHARE_TOPIC}

    streams = _wait_live(admin, "wordcount", lambda g: g.state == "Stable" and g.member_count
                         and (STREAMS_INPUT, 0) in g.committed_offsets)
    assert (streams.group_type, streams.protocol_type, streams.member_count) == ("streams", "streams", 1)
    assert STREAMS_INPUT in streams.subscribed_topics
    refused = run_delete_offsets(admin, "wordcount", [TopicRequest(STREAMS_INPUT)])
    assert refused.refusal is not None and {row.outcome for row in refused.rows} == {"skipped"}

    snapshot = take_snapshot(connection, topics=[])
    groups = {row["group"]: row for row in snapshot.rows("group_snapshots")}
    assert {k: groups["alerts-share"][k] for k in ("group_type", "state", "member_count")} == \
        {"group_type": "share", "state": "Stable", "member_count": 1}
    assert {k: groups["wordcount"][k] for k in ("group_type", "state", "member_count")} == \
        {"group_type": "streams", "state": "Stable", "member_count": 1}
    members = {row["group"]: row for row in snapshot.rows("group_member_snapshots")}
    assert members["alerts-share"]["subscribed_topics"] == [SHARE_TOPIC]
    assert members["alerts-share"]["assigned_partitions"] == [{"topic": SHARE_TOPIC, "partitions": [0]}]
    assert STREAMS_INPUT in members["wordcount"]["subscribed_topics"]
    assert {"topic": STREAMS_INPUT, "partitions": [0]} in members["wordcount"]["assigned_partitions"]
    assert not [e for e in snapshot.errors if e["name"] in ("alerts-share", "wordcount")]


def test_a_streams_group_subscribes_to_its_topology_only_and_its_other_offsets_are_deleted_as_kafka_does(
        jvm_groups, admin, lake, connection):
    streams = _wait_live(admin, "wordcount", lambda g: g.state == "Stable" and g.member_count
                         and (STREAMS_INPUT, 0) in g.committed_offsets)
    # StreamsGroup.isSubscribedToTopic: the topology's source and repartition source topics
    assert STREAMS_INPUT in streams.subscribed_topics and PAYMENTS not in streams.subscribed_topics
    assert {topic for topic, _ in streams.committed_offsets if topic != PAYMENTS} <= streams.subscribed_topics
    assert streams.committed_offsets[(PAYMENTS, 0)] == 1
    # Kafka's own answer: the topology's topic is refused, payments' offset is not
    [refused] = delete_offsets(admin, "wordcount", [(STREAMS_INPUT, 0)])
    assert refused.error == "GROUP_SUBSCRIBED_TO_TOPIC"

    # the planner proposes what Kafka accepts (expirable_offsets' streams_unsubscribed_topic), and
    # apply's re-check, which names the same topics subscribed, lets it through
    plan = approved_plan(lake, offset_delete_actions(connection, "wordcount", PAYMENTS))
    [row] = apply_plan(lake, connection, plan.plan_id, **QUIET).outcomes
    assert (row["outcome"], row["error"]) == ("deleted", None), row
    assert (PAYMENTS, 0) not in live_group(admin, "wordcount").committed_offsets


def _share_state(admin, group: str) -> int:
    """The start offset the share coordinator keeps for `group` on alerts-0 (-1: no state)."""
    [topic] = admin.describe_share_group_offsets([group], {SHARE_TOPIC: [0]})[group].topics
    return topic.partitions[0].start_offset


def _delete_share_group(group: str, share_partitions: list[str]) -> PlannedAction:
    return PlannedAction(DELETE_GROUPS, group, None, None, "idle", facts={
        "group_state": "Empty", "member_count": 0, "offsets": {}, "share_partitions": share_partitions})


def test_delete_groups_of_an_empty_share_group_deletes_its_state_which_plan_and_recheck_name(
        jvm_groups, admin, lake, connection):
    member = jvm_groups.processes[IDLE_SHARE]
    _wait_live(admin, IDLE_SHARE, lambda g: member.output_lines() == 2)  # it printed (and acknowledged) both alerts
    member.process.terminate()  # its shutdown hook closes the consumer, which leaves the group
    member.process.wait(timeout=30)
    live = _wait_live(admin, IDLE_SHARE, lambda g: g.state == "Empty")
    # no committed offset, but the share partition's state (DescribeShareGroupOffsets)
    assert live.committed_offsets == {} and set(live.share_start_offsets) == {(SHARE_TOPIC, 0)}
    assert _share_state(admin, IDLE_SHARE) >= 0
    # OffsetDelete does not reach that state ("Group alerts-idle is not a consumer group.",
    # ShareGroup.validateOffsetDelete)
    [refused] = delete_offsets(admin, IDLE_SHARE, [(SHARE_TOPIC, 0)])
    assert refused.error == "GROUP_ID_NOT_FOUND" and _share_state(admin, IDLE_SHARE) >= 0
    # what a plan's facts name: the share partitions of the log's ShareGroupStatePartitionMetadata
    ingest_offsets_topic(connection, lake, **QUIET)
    assert share_state_partitions(lake)[IDLE_SHARE] == [offset_key(SHARE_TOPIC, 0)]

    # planned before the group consumed alerts: its state there is not what was approved
    stale = approved_plan(lake, [_delete_share_group(IDLE_SHARE, [])])
    [row] = apply_plan(lake, connection, stale.plan_id, **QUIET).outcomes
    assert row["outcome"] == "skipped" and "state on partitions the plan does not name (alerts:0)" in row["detail"]

    plan = approved_plan(lake, [_delete_share_group(IDLE_SHARE, [offset_key(SHARE_TOPIC, 0)])])
    [row] = apply_plan(lake, connection, plan.plan_id, **QUIET).outcomes
    assert (row["outcome"], row["error"]) == ("deleted", None), row
    assert not live_group(admin, IDLE_SHARE).exists
    assert _share_state(admin, IDLE_SHARE) == -1  # the share coordinator deleted the group's state
