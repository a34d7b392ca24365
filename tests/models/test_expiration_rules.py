"""Each offset-expiration rule of Kafka's group coordinator on a hand-built input
(docs/kafka-semantics.md, "Offset expiration").

One lake holds one group per case; the expected answer of each test is worked out from the rule
in the test itself. The broker's offsets.retention.minutes comes from the snapshot (1 day here,
not Kafka's default), so a model that ignored it would get every expires_at wrong.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import rows_by, run_models

pytestmark = pytest.mark.fast  # make test-fast


RETENTION = timedelta(minutes=1440)
AS_OF = at(days=3)


@pytest.fixture(scope="module")
def expirable(spark, module_lake):
    b = BronzeBuilder()
    # Empty group whose record says when it became Empty (v2+ current_state_timestamp).
    b.group_record("empty-ts", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("empty-ts", "orders", 0, 42, at(hours=2))
    b.group_record("empty-ts", at(hours=5), members={}, current_state_at=at(hours=5), generation=2)
    # Empty group whose record (v1) has no current_state_timestamp: base = each commit's time.
    b.group_record("empty-no-ts", at(hours=1), members={})
    b.commit("empty-no-ts", "orders", 0, 7, at(hours=3))
    b.commit("empty-no-ts", "orders", 1, 8, at(hours=4))
    # Legacy per-offset expire timestamp (value v1), in an Empty group.
    b.group_record("legacy", at(hours=1), members={}, current_state_at=at(hours=1))
    b.commit("legacy", "orders", 0, 5, at(hours=2), expire_at=at(days=10))
    # Stable consumer group: subscribed to orders, still holding offsets of old-topic.
    b.group_record("stable", at(hours=1), members={"m1": ["orders"], "m2": ["orders", "audit"]},
                   current_state_at=at(hours=1))
    b.commit("stable", "orders", 0, 100, at(hours=6))
    b.commit("stable", "audit", 0, 3, at(hours=6))
    b.commit("stable", "old-topic", 0, 9, at(hours=2))
    b.commit("stable", "old-topic", 1, 10, at(days=2, hours=12))
    # Standalone consumer: offsets only, no group record.
    b.commit("standalone", "orders", 0, 1, at(hours=7))
    # Standalone with a group record of empty protocol type.
    b.group_record("standalone-empty-type", at(hours=1), members={}, protocol_type="")
    b.commit("standalone-empty-type", "orders", 0, 2, at(hours=8))
    # Non-consumer protocol (Kafka Connect), Stable.
    b.group_record("connect", at(hours=1), members={"w1": None}, protocol_type="connect")
    b.commit("connect", "sink-input", 0, 11, at(hours=1))
    # Stable consumer group whose member subscription is unreadable.
    b.group_record("opaque", at(hours=1), members={"m1": None})
    b.commit("opaque", "orders", 0, 12, at(hours=1))
    # KIP-848 consumer group subscribed to payments, with an old offset of refunds.
    b.kip848_group("kip848", at(hours=1))
    b.kip848_member("kip848", "m1", at(hours=1), topics=["payments"])
    b.commit("kip848", "payments", 0, 13, at(hours=2))
    b.commit("kip848", "refunds", 0, 14, at(hours=3))
    # KIP-848 group subscribed by a regular expression: the topics it resolved to are subscribed;
    # an expression no member uses any more was tombstoned, and its topics are not.
    b.kip848_group("kip848-regex", at(hours=1))
    b.kip848_member("kip848-regex", "r1", at(hours=1), regex="(^clk-.*)")
    b.kip848_regex("kip848-regex", "(^gone-.*)", at(hours=1), topics=["gone-a"])
    b.kip848_regex("kip848-regex", "(^clk-.*)", at(hours=1), topics=["clk-app", "clk-web"])
    b.kip848_regex("kip848-regex", "(^gone-.*)", at(hours=2), tombstone=True)
    for topic in ("clk-app", "clk-web", "gone-a"):
        b.commit("kip848-regex", topic, 0, 20, at(hours=3))
    # Streams group with a member: its topology's source topics are subscribed.
    b.streams_group("streams-live", at(hours=1))
    b.streams_member("streams-live", "s1", at(hours=1))
    b.streams_topology("streams-live", at(hours=1), ["words", "streams-live-repartition"])
    b.commit("streams-live", "words", 0, 30, at(hours=2))
    b.commit("streams-live", "streams-live-repartition", 0, 31, at(hours=2))
    b.commit("streams-live", "old-words", 0, 32, at(hours=2))
    # Streams group whose last member left: Empty, so it subscribes to nothing.
    b.streams_group("streams-empty", at(hours=1))
    b.streams_member("streams-empty", "s1", at(hours=1))
    b.streams_topology("streams-empty", at(hours=1), ["words"])
    b.commit("streams-empty", "words", 0, 33, at(hours=4))
    b.streams_member("streams-empty", "s1", at(hours=5), tombstone=True)
    # KIP-848 group whose only member left: Empty.
    b.kip848_group("kip848-empty", at(hours=1))
    b.kip848_member("kip848-empty", "m1", at(hours=1), topics=["payments"])
    b.commit("kip848-empty", "payments", 0, 50, at(hours=2))
    b.kip848_member("kip848-empty", "m1", at(hours=6), tombstone=True)
    # A KIP-848 group converted back to the classic protocol: Kafka tombstones the KIP-848
    # records and writes a classic group record; the group is a classic consumer group now.
    b.kip848_group("converted", at(hours=1))
    b.kip848_member("converted", "m1", at(hours=1), topics=["orders"])
    b.commit("converted", "old-topic", 0, 40, at(hours=2))
    b.kip848_member("converted", "m1", at(hours=3), tombstone=True)
    b.kip848_group("converted", at(hours=3), tombstone=True)
    b.group_record("converted", at(hours=3), members={"c1": ["orders"]}, current_state_at=at(hours=3))
    # Standalone with a transactional commit still pending.
    b.commit("pending", "orders", 0, 15, at(hours=1))
    b.pending_commit("pending", "orders", 0, at(days=2))
    # An offset deleted (tombstone) is gone.
    b.commit("deleted", "orders", 0, 16, at(hours=1))
    b.offset_tombstone("deleted", "orders", 0, at(hours=2))
    # A group rebalancing now: the log says Stable, the newer snapshot PreparingRebalance.
    b.group_record("rebalancing", at(hours=1), members={"m1": ["orders"]})
    b.commit("rebalancing", "old-topic", 0, 17, at(hours=1))
    # An Empty group the log saw go Empty, which a later snapshot also reports Empty.
    b.group_record("empty-seen-later", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("empty-seen-later", "orders", 0, 18, at(hours=2))
    b.group_record("empty-seen-later", at(hours=5), members={}, current_state_at=at(hours=5), generation=2)
    b.snapshot(at(days=2), retention_minutes=int(RETENTION.total_seconds() // 60),
               groups=[{"group": "rebalancing", "state": "PreparingRebalance", "protocol_type": "consumer",
                        "protocol": "", "member_count": 1},
                       {"group": "empty-seen-later", "state": "Empty", "protocol_type": "consumer",
                        "protocol": "", "member_count": 0},
                       # a KIP-848 group known from snapshots only (no access to the log)
                       {"group": "snap-kip848", "group_type": "consumer", "state": "Stable",
                        "protocol_type": "consumer", "protocol": "uniform", "member_count": 1}],
               members=[{"group": "snap-kip848", "member_id": "k1", "subscribed_topics": ["payments"]}],
               offsets=[{"group": "rebalancing", "topic": "old-topic", "partition": 0, "committed_offset": 17},
                        {"group": "empty-seen-later", "topic": "orders", "partition": 0, "committed_offset": 18},
                        {"group": "snap-kip848", "topic": "payments", "partition": 0, "committed_offset": 60},
                        {"group": "snap-kip848", "topic": "refunds", "partition": 0, "committed_offset": 61}])
    b.write(module_lake)
    run_models(spark, module_lake, AS_OF)
    return rows_by(module_lake, "expirable_offsets", "group_id", "topic", "partition_id")


def test_empty_group_with_current_state_timestamp_expires_from_when_it_became_empty(expirable):
    row = expirable[("empty-ts", "orders", 0)]
    assert (row["rule"], row["group_state"]) == ("empty_group", "Empty")
    assert row["base_at"] == at(hours=5)
    assert row["expires_at"] == at(hours=5) + RETENTION
    assert row["is_expired"] is (AS_OF >= at(hours=5) + RETENTION)


def test_the_logs_exact_empty_time_wins_over_a_later_snapshots_bound(expirable):
    # The snapshot two days later also says Empty; it only bounds the time the log knows exactly.
    row = expirable[("empty-seen-later", "orders", 0)]
    assert (row["rule"], row["base_at"]) == ("empty_group", at(hours=5))
    assert row["expires_at"] == at(hours=5) + RETENTION and row["is_base_estimated"] is False


def test_empty_group_without_current_state_timestamp_uses_each_commit_time(expirable):
    for partition, committed in ((0, at(hours=3)), (1, at(hours=4))):
        row = expirable[("empty-no-ts", "orders", partition)]
        assert row["rule"] == "empty_group"
        assert row["base_at"] == committed
        assert row["expires_at"] == committed + RETENTION


def test_legacy_expire_timestamp_replaces_base_plus_retention(expirable):
    row = expirable[("legacy", "orders", 0)]
    assert row["rule"] == "legacy_expire_timestamp"
    assert row["expires_at"] == at(days=10)
    assert row["is_expired"] is False


def test_stable_consumer_group_expires_only_unsubscribed_topics(expirable):
    for topic in ("orders", "audit"):
        row = expirable[("stable", topic, 0)]
        assert (row["rule"], row["expires_at"]) == ("not_eligible", None)
        assert row["not_eligible_reason"] == "topic subscribed by a member"
    old_0, old_1 = expirable[("stable", "old-topic", 0)], expirable[("stable", "old-topic", 1)]
    assert old_0["rule"] == old_1["rule"] == "unsubscribed_topic"
    assert old_0["expires_at"] == at(hours=2) + RETENTION and old_0["is_expired"] is True
    assert old_1["expires_at"] == at(days=2, hours=12) + RETENTION and old_1["is_expired"] is False


def test_standalone_groups_expire_from_commit_time(expirable):
    for group, committed in (("standalone", at(hours=7)), ("standalone-empty-type", at(hours=8))):
        row = expirable[(group, "orders", 0)]
        assert (row["rule"], row["classification"]) == ("standalone", "standalone")
        assert row["expires_at"] == committed + RETENTION


def test_rebalancing_group_expires_nothing(expirable):
    row = expirable[("rebalancing", "old-topic", 0)]
    assert row["group_state"] == "PreparingRebalance"
    assert (row["rule"], row["not_eligible_reason"]) == ("not_eligible", "group is rebalancing")
    assert row["expires_at"] is None and row["is_expired"] is False


def test_non_consumer_protocol_while_stable_expires_nothing(expirable):
    row = expirable[("connect", "sink-input", 0)]
    assert (row["classification"], row["rule"]) == ("other_protocol", "not_eligible")
    assert row["not_eligible_reason"] == "Stable group with protocol type connect"


def test_unknown_subscriptions_expire_nothing(expirable):
    row = expirable[("opaque", "orders", 0)]
    assert (row["rule"], row["not_eligible_reason"]) == ("not_eligible", "subscriptions unknown")


def test_kip848_group_expires_topics_no_member_subscribes(expirable):
    assert expirable[("kip848", "payments", 0)]["rule"] == "not_eligible"
    row = expirable[("kip848", "refunds", 0)]
    assert (row["classification"], row["rule"]) == ("kip848_consumer", "kip848_unsubscribed_topic")
    assert row["expires_at"] == at(hours=3) + RETENTION


def test_kip848_regex_topics_are_subscribed_while_the_expression_is_in_use(expirable):
    # ConsumerGroup.updateResolvedRegularExpression adds the resolved topics to the subscribed ones
    for topic in ("clk-app", "clk-web"):
        row = expirable[("kip848-regex", topic, 0)]
        assert (row["rule"], row["not_eligible_reason"]) == ("not_eligible", "topic subscribed by a member")
    gone = expirable[("kip848-regex", "gone-a", 0)]
    assert (gone["rule"], gone["expires_at"]) == ("kip848_unsubscribed_topic", at(hours=3) + RETENTION)


def test_streams_group_subscribes_to_its_topology_while_it_has_members(expirable):
    for topic in ("words", "streams-live-repartition"):
        row = expirable[("streams-live", topic, 0)]
        assert (row["classification"], row["rule"]) == ("streams", "not_eligible")
    old = expirable[("streams-live", "old-words", 0)]
    assert (old["rule"], old["expires_at"]) == ("streams_unsubscribed_topic", at(hours=2) + RETENTION)
    # StreamsGroup.isSubscribedToTopic is false while Empty; the base is the commit time
    empty = expirable[("streams-empty", "words", 0)]
    assert (empty["group_state"], empty["classification"]) == ("Empty", "streams")
    assert (empty["rule"], empty["expires_at"]) == ("streams_unsubscribed_topic", at(hours=4) + RETENTION)


def test_a_group_converted_back_to_classic_follows_its_latest_records(expirable):
    row = expirable[("converted", "old-topic", 0)]
    assert (row["classification"], row["group_state"]) == ("consumer", "Stable")
    assert (row["rule"], row["expires_at"]) == ("unsubscribed_topic", at(hours=2) + RETENTION)


def test_a_kip848_group_known_only_from_snapshots_is_a_kip848_group(expirable):
    # ListGroups' type, not the protocol type "consumer" that classic consumer groups share
    subscribed, other = expirable[("snap-kip848", "payments", 0)], expirable[("snap-kip848", "refunds", 0)]
    assert (subscribed["classification"], subscribed["rule"]) == ("kip848_consumer", "not_eligible")
    assert (other["rule"], other["is_base_estimated"]) == ("kip848_unsubscribed_topic", True)


def test_pending_transactional_commit_never_expires(expirable):
    row = expirable[("pending", "orders", 0)]
    assert (row["rule"], row["not_eligible_reason"]) == ("not_eligible", "pending transactional commit")


def test_deleted_offset_is_gone(expirable):
    assert not [key for key in expirable if key[0] == "deleted"]


def test_retention_comes_from_the_broker_config(expirable):
    assert {row["retention_minutes"] for row in expirable.values()} == {1440}


def test_the_cleanup_plan_waits_for_idle_empty_groups_of_every_kind(expirable, module_lake):
    from offsets_platform.cleanup.candidates import cleanup_candidates

    candidates = cleanup_candidates(module_lake, idle_hours=24)
    proposed = {(row["group"], row["topic"]) for row in candidates.offset_deletes}
    # stale offsets of groups with members
    assert {("stable", "old-topic"), ("kip848", "refunds"), ("kip848-regex", "gone-a"),
            ("streams-live", "old-words")} <= proposed
    # never a subscribed topic, and nothing of an Empty group: every offset of an Empty KIP-848 or
    # streams group is unsubscribed, yet a redeploy would find them gone
    assert not {key for key in proposed if key[0] in ("kip848-empty", "streams-empty")}
    assert not proposed & {("kip848-regex", "clk-app"), ("streams-live", "words"), ("kip848", "payments")}
    # Empty groups of every kind are deleted whole once idle for idle_hours (Kafka accepts
    # DeleteGroups for an Empty classic, KIP-848 or streams group)
    idle = {row["group"]: row["classification"] for row in candidates.group_deletes}
    assert idle["kip848-empty"] == "kip848_consumer" and idle["streams-empty"] == "streams"
    assert "empty-ts" in idle and "stable" not in idle and "kip848" not in idle
