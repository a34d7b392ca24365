"""The live re-check, delete-offsets and apply on KIP-848, streams and share groups.

DescribeGroups answers GROUP_ID_NOT_FOUND for every group that is not classic; these groups must
still read with their type, state and members. The groups are made by real clients against the
embedded broker: confluent-kafka members with group.protocol=consumer (one subscribed by regex),
Kafka's console share consumer and Kafka Streams' WordCountDemo with group.protocol=streams.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer

from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.direct import TopicRequest, run_delete_offsets
from offsets_platform.cleanup.kafka_calls import live_group
from offsets_platform.cleanup.plans import DELETE_GROUPS, CleanupPlan, PlannedAction, offset_key, save_plan
from offsets_platform.ingest.snapshot_collect import take_snapshot
from proving_ground.workload.live.jvm_members import JvmMembers
from tests.cleanup.direct_helpers import PAYMENTS, commit, create_topics, produce_counts

QUIET = {"emit": lambda line: None}
GROUP = "kip848-app"
PREFIX_A, PREFIX_B = "prefix-a", "prefix-b"
STREAMS_INPUT, STREAMS_OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
SHARE_TOPIC = "alerts"


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
    """A share group ("alerts-share", one console share consumer on alerts) and a streams group
    ("wordcount", one WordCountDemo), both Stable, the streams group with committed offsets."""
    create_topics(bootstrap, {SHARE_TOPIC: (1, {}), STREAMS_INPUT: (1, {}), STREAMS_OUTPUT: (1, {})})
    produce_counts(bootstrap, STREAMS_INPUT, [5])
    produce_counts(bootstrap, SHARE_TOPIC, [2])
    members = JvmMembers(bootstrap)
    try:
        members.start_share_consumer("alerts-share", SHARE_TOPIC)
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
    # a streams group with members is taken as subscribed to every topic it committed on
    assert STREAMS_INPUT in streams.subscribed_topics
    assert {topic for topic, _ in streams.committed_offsets} <= streams.subscribed_topics
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
