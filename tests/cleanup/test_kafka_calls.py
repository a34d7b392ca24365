"""The cleanup's Kafka calls against the embedded Apache Kafka broker, groups made by real clients.

The answers asserted here are Kafka's own (its group coordinator's), so the tests also pin the
facts the commands rely on: GROUP_SUBSCRIBED_TO_TOPIC for a subscribed topic, UNKNOWN_TOPIC_OR_PARTITION
for a partition that does not exist, INVALID_GROUP_ID for an empty group id in OffsetDelete.
"""

from __future__ import annotations

import pytest

from offsets_platform.kafka.group_calls import (
    DEAD, delete_groups, delete_offsets, live_group, topic_metadata,
)
from proving_ground.workload.live.clients import committed_offsets, describe_groups_raw
from tests.cleanup.direct_helpers import (
    ORDERS, PAYMENTS, commit, empty_group, join_group, standalone_commit,
)


@pytest.fixture(scope="module")
def live_member(bootstrap):
    """Group `calls-live`: one member subscribed to orders, with offsets on orders and payments."""
    consumer = join_group(bootstrap, "calls-live", [ORDERS], 3)
    commit(consumer, {(ORDERS, 0): (2, ""), (ORDERS, 1): (3, ""), (PAYMENTS, 0): (1, "")})
    yield consumer
    consumer.close()


def test_live_group_of_a_stable_group_has_its_members_subscriptions_and_offsets(admin, live_member):
    state = live_group(admin, "calls-live")
    assert (state.state, state.protocol_type, state.member_count) == ("Stable", "consumer", 1)
    assert state.subscribed_topics == {ORDERS}
    assert state.committed_offsets == {(ORDERS, 0): 2, (ORDERS, 1): 3, (PAYMENTS, 0): 1}
    assert state.exists


def test_live_group_of_empty_standalone_and_unknown_groups(admin, bootstrap):
    empty_group(bootstrap, "calls-empty", [PAYMENTS], {(PAYMENTS, 1): 4})
    standalone_commit(bootstrap, "calls-standalone", {(ORDERS, 2): 5})

    empty = live_group(admin, "calls-empty")
    assert (empty.state, empty.protocol_type, empty.member_count, empty.subscribed_topics) == \
        ("Empty", "consumer", 0, frozenset())
    assert empty.committed_offsets == {(PAYMENTS, 1): 4}
    standalone = live_group(admin, "calls-standalone")
    assert (standalone.state, standalone.protocol_type, standalone.member_count) == ("Empty", "", 0)
    assert standalone.committed_offsets == {(ORDERS, 2): 5}
    # Kafka 4 answers DescribeGroups for a group it does not know with GROUP_ID_NOT_FOUND (and
    # state Dead); live_group reads that as Dead, like the no-error Dead of older brokers.
    raw = describe_groups_raw(admin, ["calls-never-existed"])["calls-never-existed"]
    assert (raw["error_code"], raw["state"], raw["members"]) == (69, "Dead", [])
    unknown = live_group(admin, "calls-never-existed")
    assert (unknown.state, unknown.member_count, unknown.committed_offsets) == (DEAD, 0, {})
    assert not unknown.exists


def test_topic_metadata_names_partitions_and_unknown_topics(admin):
    metadata = topic_metadata(admin, [ORDERS, PAYMENTS, "calls-no-such-topic"])
    assert metadata.partitions == {ORDERS: {0, 1, 2}, PAYMENTS: {0, 1}}
    assert metadata.errors == {"calls-no-such-topic": 3}  # UNKNOWN_TOPIC_OR_PARTITION


def test_delete_offsets_answers_per_partition(admin, bootstrap):
    standalone_commit(bootstrap, "calls-delete", {(ORDERS, 0): 1, (ORDERS, 1): 1, (PAYMENTS, 0): 1})
    outcomes = delete_offsets(admin, "calls-delete", [(ORDERS, 0), (ORDERS, 1), (ORDERS, 0)])
    assert [(o.topic, o.partition, o.error, o.group_level) for o in outcomes] == \
        [(ORDERS, 0, None, False), (ORDERS, 1, None, False)]
    assert committed_offsets(admin, "calls-delete") == {(PAYMENTS, 0): 1}
    assert delete_offsets(admin, "calls-delete", []) == []


def test_delete_offsets_returns_a_group_level_error_on_every_partition(admin):
    outcomes = delete_offsets(admin, "calls-never-existed", [(ORDERS, 0), (PAYMENTS, 1)])
    assert [(o.partition, o.error, o.message, o.group_level) for o in outcomes] == [
        (0, "GROUP_ID_NOT_FOUND", "The group id does not exist.", True),
        (1, "GROUP_ID_NOT_FOUND", "The group id does not exist.", True)]


def test_offset_delete_on_a_subscribed_topic_is_refused_per_partition_by_kafka(admin, live_member):
    # KIP-496: the coordinator refuses the partitions of a topic a member subscribes to and
    # deletes the others of the same request.
    outcomes = delete_offsets(admin, "calls-live", [(ORDERS, 1), (PAYMENTS, 0)])
    assert [(o.topic, o.partition, o.error, o.message, o.group_level) for o in outcomes] == [
        (ORDERS, 1, "GROUP_SUBSCRIBED_TO_TOPIC",
         "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.", False),
        (PAYMENTS, 0, None, None, False)]
    assert committed_offsets(admin, "calls-live") == {(ORDERS, 0): 2, (ORDERS, 1): 3}


def test_offset_delete_of_an_unknown_topic_or_partition_is_unknown_topic_or_partition(admin, bootstrap):
    standalone_commit(bootstrap, "calls-typo", {(ORDERS, 0): 1})
    outcomes = delete_offsets(admin, "calls-typo", [("calls-no-such-topic", 0), (ORDERS, 9), (ORDERS, 0)])
    assert [(o.partition, o.error, o.message, o.group_level) for o in outcomes] == [
        (0, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.", False),
        (9, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.", False),
        (0, None, None, False)]
    assert committed_offsets(admin, "calls-typo") == {}


def test_an_empty_group_id_is_invalid_for_offset_delete_and_not_found_for_delete_groups(admin):
    # OffsetDelete refuses an empty group id as a whole (INVALID_GROUP_ID); DeleteGroups of Kafka
    # 4.1+ accepts the empty id (only a null one is INVALID_GROUP_ID) and finds no such group.
    [offsets] = delete_offsets(admin, "", [(ORDERS, 0)])
    [group] = delete_groups(admin, [""])
    assert (offsets.error, offsets.message, offsets.group_level) == \
        ("INVALID_GROUP_ID", "The group id is invalid.", True)
    assert (group.error, group.message) == ("GROUP_ID_NOT_FOUND", "The group id does not exist.")


def test_delete_groups_answers_per_group_in_the_order_asked(admin, bootstrap, live_member):
    empty_group(bootstrap, "calls-gone", [ORDERS], {(ORDERS, 0): 3})
    outcomes = delete_groups(admin, ["calls-gone", "calls-live", "calls-ghost", "calls-gone"])
    assert [(o.group, o.error, o.message) for o in outcomes] == [
        ("calls-gone", None, None),
        ("calls-live", "NON_EMPTY_GROUP", "The group is not empty."),
        ("calls-ghost", "GROUP_ID_NOT_FOUND", "The group id does not exist.")]
    assert "calls-gone" not in {group["group_id"] for group in admin.list_groups()}


def test_a_group_id_that_cannot_be_encoded_is_never_sent(admin):
    # kafka-python would hang on it; Kafka's answer would be INVALID_GROUP_ID.
    [outcome] = delete_groups(admin, ["bad\udcffgroup"])
    [partition] = delete_offsets(admin, "bad\udcffgroup", [(ORDERS, 0)])
    assert (outcome.error, partition.error) == ("INVALID_GROUP_ID", "INVALID_GROUP_ID")
