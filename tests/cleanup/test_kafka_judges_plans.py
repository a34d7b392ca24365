"""Kafka as the judge of cleanup plans, for every group kind: a plan built from the live workload's
groups (classic, KIP-848 by names and by regular expression, transactional, standalone, Connect,
share and streams), with every Empty group idle, is approved whole and applied, and the broker
refuses none of it: no GROUP_SUBSCRIBED_TO_TOPIC for an offset, no NON_EMPTY_GROUP for a group.
Apply's live re-check sees the members of every kind, so nothing of a group with members is sent.
"""

from __future__ import annotations

import pytest

from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, build_plan, save_plan
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.models import ModelRunner
from proving_ground.workload.live import run_live_workload
from proving_ground.workload.live.scenarios import GROUPS

QUIET = {"emit": lambda line: None}
REFUSALS = {"GROUP_SUBSCRIBED_TO_TOPIC", "NON_EMPTY_GROUP"}


@pytest.fixture(scope="module")
def applied(spark, broker, connection, tmp_path_factory):
    from offsets_platform.models.project import lake_for_models

    lake = lake_for_models(tmp_path_factory.mktemp("lake"))
    workload = run_live_workload(broker.bootstrap_servers, seed=5, scale=0.2, emit=None)
    try:
        ingest_offsets_topic(connection, lake, **QUIET)
        snapshot_cluster(connection, lake, **QUIET)
        ModelRunner(spark, lake, **QUIET).run_all()
        plan = build_plan(lake, created_by="test", idle_hours=0)
        save_plan(lake, plan)
        approve(lake, plan.plan_id, "judge")
        result = apply_plan(lake, connection, plan.plan_id, requested_by="judge", **QUIET)
        yield plan, result
    finally:
        workload.stop()


def test_the_plan_removes_what_is_stale_and_nothing_of_groups_with_members(applied):
    plan, _ = applied
    offsets = {(a.group, a.topic) for a in plan.actions if a.action == OFFSET_DELETE}
    groups = {a.group for a in plan.actions if a.action == DELETE_GROUPS}
    assert ("search-changed-subscription", "search-clicks") in offsets, "the topic it no longer reads"
    # the Empty groups, idle at idle_hours=0; not the standalone committer, whose offsets Kafka keeps
    # until each is past offsets.retention.minutes
    assert groups == {"reports-stopped"}
    with_members = {group for group, spec in GROUPS.items() if spec.keep_alive}
    assert not groups & with_members
    assert not {(g, t) for g, t in offsets if g != "search-changed-subscription"}, offsets


def test_kafka_refuses_nothing_of_the_applied_plan(applied):
    plan, result = applied
    refused = [row for row in result.outcomes if row.get("error") in REFUSALS or
               any(name in (row.get("detail") or "") for name in REFUSALS)]
    assert refused == []
    assert result.count("deleted") == len(plan.actions), result.outcomes
