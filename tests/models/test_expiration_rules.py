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


RETENTION = timedelta(minutes=1440)
AS_OF = at(days=3)


def where_snapshots_meet_the_log(b: BronzeBuilder) -> dict:
    """Groups whose verdict needs both sources: their log records, a snapshot at day 1, and their
    rows of the day-2 snapshot (returned, keyed by the snapshot's lists)."""
    classic_stable = {"state": "Stable", "protocol_type": "consumer", "protocol": "range"}
    # A classic group that ran again between the two snapshots, both of which saw it Empty: Kafka
    # wrote a record at each return to Empty, and counts from the latest (ClassicGroup.transitionTo).
    b.group_record("rerun", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("rerun", "orders", 0, 70, at(hours=2))
    b.group_record("rerun", at(hours=3), members={}, current_state_at=at(hours=3), generation=2)
    b.group_record("rerun", at(days=1, hours=21), members={"m2": ["orders"]},
                   current_state_at=at(days=1, hours=21), generation=3)
    b.commit("rerun", "orders", 0, 71, at(days=1, hours=21, minutes=30))
    b.group_record("rerun", at(days=1, hours=22), members={}, current_state_at=at(days=1, hours=22), generation=4)
    # A standalone committer (assign() and commit: no group record), listed by both snapshots,
    # that committed again after the latest one.
    b.commit("standalone-live", "quiet", 0, 1, at(hours=1))
    b.commit("standalone-live", "quiet", 0, 2, at(days=2, hours=10))
    # A KIP-848 group whose ConsumerGroupDescribe was refused (an ACL on one of its topics): the
    # log's member records say what it subscribes to.
    b.kip848_group("acl-kip848", at(hours=1))
    b.kip848_member("acl-kip848", "m1", at(hours=1), topics=["payments"])
    b.commit("acl-kip848", "payments", 0, 80, at(hours=2))
    b.commit("acl-kip848", "refunds", 0, 81, at(hours=3))
    # A classic group the log last saw go Empty, which ListGroups now reports Stable while its
    # coordinator was loading: members (and so subscriptions) unknown.
    b.group_record("loading-classic", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("loading-classic", "old-topic", 0, 82, at(hours=2))
    b.group_record("loading-classic", at(hours=5), members={}, current_state_at=at(hours=5), generation=2)
    # Groups deleted by another tool after the last ingest: no describe API knows them now.
    b.group_record("deleted-elsewhere", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("deleted-elsewhere", "orders", 0, 83, at(hours=2))
    b.group_record("deleted-elsewhere", at(hours=3), members={}, current_state_at=at(hours=3), generation=2)
    b.commit("standalone-deleted", "quiet", 0, 84, at(hours=2))
    # ... and one that committed again after the snapshot that did not find it.
    b.commit("recreated", "quiet", 0, 85, at(days=2, hours=2))
    # A Stable group whose OffsetFetch failed in the latest snapshot (its coordinator moving).
    b.group_record("fetch-failed", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("fetch-failed", "orders", 0, 86, at(hours=2))

    empty = {"state": "Empty", "protocol_type": "consumer", "protocol": "", "member_count": 0}
    standalone = {"state": "Empty", "protocol_type": "", "protocol": "", "member_count": 0}
    b.snapshot(at(days=1), retention_minutes=int(RETENTION.total_seconds() // 60),
               groups=[{"group": "rerun", **empty}, {"group": "standalone-live", **standalone}],
               offsets=[{"group": "rerun", "topic": "orders", "partition": 0, "committed_offset": 70},
                        {"group": "standalone-live", "topic": "quiet", "partition": 0, "committed_offset": 1}])

    def error(group, operation, name):
        return {"scope": "group", "name": group, "operation": operation, "error": name, "message": "refused"}

    return {
        "groups": [{"group": "rerun", **empty}, {"group": "standalone-live", **standalone},
                   {"group": "acl-kip848", "group_type": "consumer", "state": "Stable", "protocol_type": "consumer"},
                   {"group": "acl-snap-only", "group_type": "consumer", "state": "Stable",
                    "protocol_type": "consumer"},
                   {"group": "loading-classic", "group_type": "classic", "state": "Stable",
                    "protocol_type": "consumer"},
                   {"group": "fetch-failed", "member_count": 1, **classic_stable}],
        "members": [{"group": "fetch-failed", "member_id": "m1", "subscribed_topics": ["orders"]}],
        "offsets": [{"group": "rerun", "topic": "orders", "partition": 0, "committed_offset": 71},
                    {"group": "standalone-live", "topic": "quiet", "partition": 0, "committed_offset": 1},
                    {"group": "acl-kip848", "topic": "payments", "partition": 0, "committed_offset": 80},
                    {"group": "acl-kip848", "topic": "refunds", "partition": 0, "committed_offset": 81},
                    {"group": "acl-snap-only", "topic": "payments", "partition": 0, "committed_offset": 90},
                    {"group": "loading-classic", "topic": "old-topic", "partition": 0, "committed_offset": 82}],
        "errors": [error("acl-kip848", "ConsumerGroupDescribe", "TOPIC_AUTHORIZATION_FAILED"),
                   error("acl-snap-only", "ConsumerGroupDescribe", "TOPIC_AUTHORIZATION_FAILED"),
                   error("loading-classic", "DescribeGroups", "COORDINATOR_LOAD_IN_PROGRESS"),
                   error("deleted-elsewhere", "DescribeGroups", "GROUP_ID_NOT_FOUND"),
                   error("standalone-deleted", "DescribeGroups", "GROUP_ID_NOT_FOUND"),
                   error("recreated", "DescribeGroups", "GROUP_ID_NOT_FOUND"),
                   error("fetch-failed", "OffsetFetch", "NOT_COORDINATOR")],
    }


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
    met = where_snapshots_meet_the_log(b)
    b.snapshot(at(days=2), retention_minutes=int(RETENTION.total_seconds() // 60), errors=met["errors"],
               groups=met["groups"] + [{"group": "rebalancing", "state": "PreparingRebalance", "protocol_type": "consumer",
                        "protocol": "", "member_count": 1},
                       {"group": "empty-seen-later", "state": "Empty", "protocol_type": "consumer",
                        "protocol": "", "member_count": 0},
                       # a KIP-848 group known from snapshots only (no access to the log)
                       {"group": "snap-kip848", "group_type": "consumer", "state": "Stable",
                        "protocol_type": "consumer", "protocol": "uniform", "member_count": 1}],
               members=met["members"] + [{"group": "snap-kip848", "member_id": "k1", "subscribed_topics": ["payments"]}],
               offsets=met["offsets"] + [{"group": "rebalancing", "topic": "old-topic", "partition": 0, "committed_offset": 17},
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
    from offsets_platform.views.candidates import cleanup_candidates

    candidates = cleanup_candidates(module_lake, idle_hours=24)
    proposed = {(row["group_id"], row["topic"]) for row in candidates.offset_deletes}
    # stale offsets of groups with members
    assert {("stable", "old-topic"), ("kip848", "refunds"), ("kip848-regex", "gone-a"),
            ("streams-live", "old-words")} <= proposed
    # never a subscribed topic, and nothing of an Empty group: every offset of an Empty KIP-848 or
    # streams group is unsubscribed, yet a redeploy would find them gone
    assert not {key for key in proposed if key[0] in ("kip848-empty", "streams-empty")}
    assert not proposed & {("kip848-regex", "clk-app"), ("streams-live", "words"), ("kip848", "payments")}
    # Empty groups of every kind are deleted whole once idle for idle_hours (Kafka accepts
    # DeleteGroups for an Empty classic, KIP-848 or streams group)
    idle = {row["group_id"]: row["classification"] for row in candidates.group_deletes}
    assert idle["kip848-empty"] == "kip848_consumer" and idle["streams-empty"] == "streams"
    assert "empty-ts" in idle and "stable" not in idle and "kip848" not in idle


# --- Where the snapshots and the log meet ---------------------------------------------------

@pytest.fixture(scope="module")
def groups(expirable, module_lake):
    return rows_by(module_lake, "group_state", "group_id")


def test_a_group_that_ran_between_two_snapshots_is_empty_since_its_latest_record(expirable, groups):
    # Both snapshots saw it Empty, the first at day 1; the log saw it return to Empty later.
    assert groups["rerun"]["state_entered_at"] == at(days=1, hours=22)
    row = expirable[("rerun", "orders", 0)]
    assert (row["rule"], row["base_at"]) == ("empty_group", at(days=1, hours=22))
    assert row["expires_at"] == at(days=1, hours=22) + RETENTION and row["is_base_estimated"] is False


def test_a_standalone_group_is_idle_since_its_last_commit_not_since_a_snapshot_listed_it(expirable, groups):
    assert (groups["standalone-live"]["classification"], groups["standalone-live"]["state"]) == ("standalone", "Empty")
    assert groups["standalone-live"]["state_entered_at"] == at(days=2, hours=10)
    row = expirable[("standalone-live", "quiet", 0)]
    assert (row["rule"], row["committed_offset"]) == ("standalone", 2)
    assert row["expires_at"] == at(days=2, hours=10) + RETENTION and row["is_expired"] is False


def test_a_refused_describe_falls_back_to_the_logs_members(expirable, groups):
    assert (groups["acl-kip848"]["state_source"], groups["acl-kip848"]["is_membership_known"]) == ("log", True)
    subscribed = expirable[("acl-kip848", "payments", 0)]
    assert (subscribed["rule"], subscribed["not_eligible_reason"]) == ("not_eligible", "topic subscribed by a member")
    other = expirable[("acl-kip848", "refunds", 0)]
    assert (other["rule"], other["expires_at"]) == ("kip848_unsubscribed_topic", at(hours=3) + RETENTION)


def test_members_nobody_could_describe_mean_unknown_subscriptions_and_nothing_expires(expirable, groups):
    for group, topic in (("acl-snap-only", "payments"), ("loading-classic", "old-topic")):
        state = groups[group]
        assert (state["state"], state["count_members"], state["is_membership_known"]) == ("Stable", None, False)
        row = expirable[(group, topic, 0)]
        assert (row["rule"], row["not_eligible_reason"]) == ("not_eligible", "subscriptions unknown")
        assert row["expires_at"] is None and row["is_expired"] is False and row["is_abandoned"] is False


def test_a_group_no_describe_api_knows_is_gone_with_its_offsets(expirable, groups, module_lake):
    offsets = rows_by(module_lake, "committed_offsets", "group_id", "topic", "partition_id")
    assert not [key for key in offsets if key[0] in ("deleted-elsewhere", "standalone-deleted")]
    assert (groups["deleted-elsewhere"]["state"], groups["deleted-elsewhere"]["state_source"]) == ("Dead", "gone")
    assert groups["deleted-elsewhere"]["state_entered_at"] == at(days=2)
    assert "standalone-deleted" not in groups
    # the log's commit after that snapshot is a group Kafka holds again
    assert offsets[("recreated", "quiet", 0)]["committed_offset"] == 85


def test_a_failed_offset_fetch_leaves_the_logs_offsets(expirable, module_lake):
    offsets = rows_by(module_lake, "committed_offsets", "group_id", "topic", "partition_id")
    assert offsets[("fetch-failed", "orders", 0)]["committed_offset"] == 86
    assert expirable[("fetch-failed", "orders", 0)]["rule"] == "not_eligible"


def test_a_plan_proposes_no_deletion_of_a_group_that_runs_between_snapshots_or_commits_alone(expirable, module_lake):
    from offsets_platform.views.candidates import cleanup_candidates

    # 36 h: rerun went Empty 26 h before, standalone-live committed 14 h before (the first
    # snapshots that saw them Empty were 48 h before)
    idle = {row["group_id"] for row in cleanup_candidates(module_lake, idle_hours=36).group_deletes}
    assert not idle & {"rerun", "standalone-live", "acl-kip848", "acl-snap-only", "loading-classic"}
    assert "empty-ts" in idle
    # 12 h: standalone-live is idle that long, but its offset is not yet past Kafka's expiry,
    # while the standalone group that committed 65 h before is
    idle = {row["group_id"] for row in cleanup_candidates(module_lake, idle_hours=12).group_deletes}
    assert "standalone-live" not in idle and "standalone" in idle
    stale = {row["group_id"] for row in cleanup_candidates(module_lake, idle_hours=12).offset_deletes}
    assert not stale & {"acl-snap-only", "loading-classic", "fetch-failed"}
