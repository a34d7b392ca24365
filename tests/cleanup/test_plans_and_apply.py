"""Plans, approval and apply against the embedded broker, on the live workload's real groups.

The workload leaves: orders-active and billing-slow Stable, search-changed-subscription Stable
with committed offsets on a topic it no longer reads, reports-stopped Empty, ledger-standalone
(assign + commit) and connect-sink. With idle_hours=0 every Empty group is "idle".
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
from offsets_platform.workload.live import run_live_workload
from offsets_platform.workload.live.clients import committed_offsets

QUIET = {"emit": lambda line: None}


@pytest.fixture(scope="module")
def cluster(spark, broker, connection, tmp_path_factory):
    from offsets_platform.lake import Lake

    lake = Lake(tmp_path_factory.mktemp("lake"))
    workload = run_live_workload(broker.bootstrap_servers, seed=5, scale=0.1, **QUIET)
    try:
        snapshot_cluster(connection, lake, **QUIET)
        ModelRunner(spark, lake, **QUIET).run_all()
        yield workload, lake
    finally:
        workload.stop()


@pytest.fixture(scope="module")
def plan(cluster):
    workload, lake = cluster
    plan = build_plan(lake, created_by="test", idle_hours=0)
    save_plan(lake, plan)
    return plan


def _targets(plan, action):
    return {(a.group, a.topic, a.partition) for a in plan.actions if a.action == action}


def test_plan_holds_stale_offsets_and_idle_groups_and_nothing_of_active_groups(cluster, plan):
    workload, _ = cluster
    changed = workload.changed_subscription
    stale = {(changed["group"], changed["left_behind_topic"], p)
             for (t, p) in workload.groups[changed["group"]].committed if t == changed["left_behind_topic"]}
    assert stale and _targets(plan, OFFSET_DELETE) == stale
    assert {g for g, _, _ in _targets(plan, DELETE_GROUPS)} == {"reports-stopped", "ledger-standalone"}
    touched = {a.group for a in plan.actions}
    assert not touched & {"orders-active", "billing-slow", "connect-sink"}
    action = next(a for a in plan.actions if a.action == OFFSET_DELETE)
    assert action.facts["group_state"] == "Stable" and changed["kept_topic"] in action.facts["subscribed_topics"]
    assert action.facts["committed_offset"] == workload.groups[changed["group"]].committed[(action.topic, action.partition)]


def test_a_plan_touching_a_subscribed_topic_or_a_group_with_members_cannot_be_built(cluster):
    _, lake = cluster
    with pytest.raises(PlanError, match="cannot clean 'orders-active' early: it is Stable"):
        build_plan(lake, created_by="test", clean_early=("orders-active",))


def test_unknown_unapproved_and_expired_plans_are_refused(cluster, plan):
    _, lake = cluster
    with pytest.raises(PlanError, match="unknown plan 'nope'"):
        approve(lake, "nope", "alice")
    with pytest.raises(PlanError, match="expired"):
        approve(lake, plan.plan_id, "alice", now=plan.expires_at + timedelta(seconds=1))
    with pytest.raises(PlanError, match="no approved action"):
        apply_plan(lake, _connection(cluster), plan.plan_id, **QUIET)
    with pytest.raises(PlanError, match="approver"):
        approve(lake, plan.plan_id, " ")


def _connection(cluster):
    from offsets_platform.settings import KafkaConnection

    return KafkaConnection(bootstrap_servers=cluster[0].bootstrap_servers)


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


def test_apply_deletes_exactly_what_was_approved_and_skips_what_changed(cluster, plan):
    workload, lake = cluster
    connection = _connection(cluster)
    changed = workload.changed_subscription["group"]
    stale = sorted((a for a in plan.actions if a.action == OFFSET_DELETE), key=lambda a: (a.topic, a.partition))
    approved_offsets, left_alone = stale[:-1], stale[-1]
    groups = {a.group: a for a in plan.actions if a.action == DELETE_GROUPS}
    approve(lake, plan.plan_id, "alice", comment="stale offsets and idle groups",
            action_ids=[a.action_id for a in approved_offsets]
            + [groups["ledger-standalone"].action_id, groups["reports-stopped"].action_id])

    # between approval and apply, the stopped group gets a member again
    stopped_topic = workload.groups["reports-stopped"].subscribed_topics[0]
    member = _member_joins(workload.bootstrap_servers, "reports-stopped", stopped_topic)
    try:
        dry = apply_plan(lake, connection, plan.plan_id, dry_run=True, **QUIET)
        assert dry.count("dry_run") == len(approved_offsets) + 1 and dry.count("deleted") == 0
        assert "ledger-standalone" in _listed_groups(connection), "a dry run sends nothing"

        result = apply_plan(lake, connection, plan.plan_id, requested_by="bob", **QUIET)
        deleted = {(r["group"], r["topic"], r["partition"]) for r in result.outcomes if r["outcome"] == "deleted"}
        assert deleted == {(a.group, a.topic, a.partition) for a in approved_offsets} | {("ledger-standalone", None, None)}
        (skipped,) = [r for r in result.outcomes if r["outcome"] == "skipped"]
        assert skipped["group"] == "reports-stopped" and "gained members" in skipped["detail"]

        with open_admin(connection, 15, 15) as admin:
            remaining = committed_offsets(admin, changed)
        assert not [a for a in approved_offsets if (a.topic, a.partition) in remaining]
        assert (left_alone.topic, left_alone.partition) in remaining, "an unapproved action is not applied"
        listed = _listed_groups(connection)
        assert "ledger-standalone" not in listed and "reports-stopped" in listed

        again = apply_plan(lake, connection, plan.plan_id, **QUIET)
        assert again.count("deleted") == again.count("failed") == 0, "done actions are not repeated"
    finally:
        member.close()
    with pytest.raises(PlanError, match="already been applied"):
        approve(lake, plan.plan_id, "carol")
    audit = lake.read_arrow("cleanup_audit").to_pylist()
    assert {r["requested_by"] for r in audit if r["outcome"] == "deleted"} == {"bob"}
