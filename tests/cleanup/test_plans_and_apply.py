"""Plans, approval and apply against the embedded Apache Kafka broker, on groups made by real clients.

The module's groups: `orders-active`, Stable, subscribed to orders; `search-changed`, Stable,
subscribed to payments, with committed offsets left on orders (a topic it no longer reads);
`reports-stopped` and `batch-done`, consumer groups that committed and left (Empty);
`ledger-standalone`, offsets committed without ever joining. With idle_hours=0 every Empty group
is "idle", but a standalone group is proposed only once Kafka would expire its offsets.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer

from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, PlanError, build_plan, save_plan
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.models import ModelRunner
from offsets_platform.settings import KafkaConnection
from proving_ground.workload.live.clients import committed_offsets
from tests.cleanup.direct_helpers import ORDERS, PAYMENTS, commit, empty_group, join_group, standalone_commit

QUIET = {"emit": lambda line: None}
CHANGED, STALE_TOPIC, KEPT_TOPIC = "search-changed", ORDERS, PAYMENTS
STALE_OFFSETS = {(ORDERS, 0): (4, ""), (ORDERS, 1): (6, ""), (ORDERS, 2): (8, "")}


@pytest.fixture(scope="module")
def cluster(spark, bootstrap, connection, tmp_path_factory):
    from offsets_platform.models.project import lake_for_models

    lake = lake_for_models(tmp_path_factory.mktemp("lake"))
    members = []
    try:
        members.append(join_group(bootstrap, "orders-active", [ORDERS], 3))
        commit(members[-1], {(ORDERS, p): (2, "") for p in range(3)})
        # A member of the classic protocol may commit any partition: the offsets on orders stay
        # behind from what the group read before, while it now subscribes to payments only.
        members.append(join_group(bootstrap, CHANGED, [KEPT_TOPIC], 2))
        commit(members[-1], {**STALE_OFFSETS, (PAYMENTS, 0): (3, ""), (PAYMENTS, 1): (5, "")})
        empty_group(bootstrap, "reports-stopped", [ORDERS], {(ORDERS, 0): 5})
        empty_group(bootstrap, "batch-done", [ORDERS], {(ORDERS, 1): 3})
        standalone_commit(bootstrap, "ledger-standalone", {(PAYMENTS, 1): 2})
        snapshot_cluster(connection, lake, **QUIET)
        ModelRunner(spark, lake, **QUIET).run_all()
        yield lake
    finally:
        for member in members:
            member.close()


@pytest.fixture(scope="module")
def plan(cluster):
    plan = build_plan(cluster, created_by="test", idle_hours=0)
    save_plan(cluster, plan)
    return plan


def _targets(plan, action):
    return {(a.group, a.topic, a.partition) for a in plan.actions if a.action == action}


def test_plan_holds_stale_offsets_and_idle_groups_and_nothing_of_active_groups(plan):
    assert _targets(plan, OFFSET_DELETE) == {(CHANGED, topic, p) for topic, p in STALE_OFFSETS}
    assert {g for g, _, _ in _targets(plan, DELETE_GROUPS)} == {"reports-stopped", "batch-done"}
    assert "ledger-standalone" not in {a.group for a in plan.actions}, "its offset is not past Kafka's expiry"
    assert "orders-active" not in {a.group for a in plan.actions}
    for action in (a for a in plan.actions if a.action == OFFSET_DELETE):
        assert action.facts["group_state"] == "Stable" and action.facts["subscribed_topics"] == [KEPT_TOPIC]
        assert action.facts["committed_offset"] == STALE_OFFSETS[(action.topic, action.partition)][0]


def test_a_plan_touching_a_subscribed_topic_or_a_group_with_members_cannot_be_built(cluster):
    with pytest.raises(PlanError, match="cannot clean 'orders-active' early: it is Stable"):
        build_plan(cluster, created_by="test", clean_early=("orders-active",))


def test_unknown_unapproved_and_expired_plans_are_refused(cluster, plan, connection):
    lake = cluster
    with pytest.raises(PlanError, match="unknown plan 'nope'"):
        approve(lake, "nope", "alice")
    with pytest.raises(PlanError, match="expired"):
        approve(lake, plan.plan_id, "alice", now=plan.expires_at + timedelta(seconds=1))
    with pytest.raises(PlanError, match="no approved action"):
        apply_plan(lake, connection, plan.plan_id, **QUIET)
    with pytest.raises(PlanError, match="approver"):
        approve(lake, plan.plan_id, " ")


def _member_joins(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = datetime.now(timezone.utc) + timedelta(seconds=20)
    while not consumer.assignment() and datetime.now(timezone.utc) < deadline:
        consumer.poll(0.2)
    return consumer


def _listed_groups(connection) -> set[str]:
    with open_admin(connection, 15, 15) as admin:
        return {group["group_id"] for group in admin.list_groups()}


def test_apply_deletes_exactly_what_was_approved_and_skips_what_changed(cluster, plan, bootstrap):
    lake, changed = cluster, CHANGED
    connection = KafkaConnection(bootstrap_servers=bootstrap)
    stale = sorted((a for a in plan.actions if a.action == OFFSET_DELETE), key=lambda a: (a.topic, a.partition))
    approved_offsets, left_alone = stale[:-1], stale[-1]
    groups = {a.group: a for a in plan.actions if a.action == DELETE_GROUPS}
    approve(lake, plan.plan_id, "alice", comment="stale offsets and idle groups",
            action_ids=[a.action_id for a in approved_offsets]
            + [groups["batch-done"].action_id, groups["reports-stopped"].action_id])

    # between approval and apply, the stopped group gets a member again
    member = _member_joins(bootstrap, "reports-stopped", ORDERS)
    try:
        dry = apply_plan(lake, connection, plan.plan_id, dry_run=True, **QUIET)
        assert dry.count("dry_run") == len(approved_offsets) + 1 and dry.count("deleted") == 0
        assert "batch-done" in _listed_groups(connection), "a dry run sends nothing"

        result = apply_plan(lake, connection, plan.plan_id, requested_by="bob", **QUIET)
        deleted = {(r["group"], r["topic"], r["partition"]) for r in result.outcomes if r["outcome"] == "deleted"}
        assert deleted == {(a.group, a.topic, a.partition) for a in approved_offsets} | {("batch-done", None, None)}
        (skipped,) = [r for r in result.outcomes if r["outcome"] == "skipped"]
        assert skipped["group"] == "reports-stopped" and "gained members" in skipped["detail"]

        with open_admin(connection, 15, 15) as admin:
            remaining = committed_offsets(admin, changed)
        assert not [a for a in approved_offsets if (a.topic, a.partition) in remaining]
        assert (left_alone.topic, left_alone.partition) in remaining, "an unapproved action is not applied"
        listed = _listed_groups(connection)
        assert "batch-done" not in listed and {"reports-stopped", "ledger-standalone"} <= listed

        again = apply_plan(lake, connection, plan.plan_id, **QUIET)
        assert again.count("deleted") == again.count("failed") == 0, "done actions are not repeated"
    finally:
        member.close()
    with pytest.raises(PlanError, match="already been applied"):
        approve(lake, plan.plan_id, "carol")
    audit = lake.read_arrow("cleanup_audit").to_pylist()
    assert {r["requested_by"] for r in audit if r["outcome"] == "deleted"} == {"bob"}
