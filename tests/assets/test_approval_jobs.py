"""The approve job in Dagster: the approver is the run's identity tag, never config; four-eyes
against the plan's author; the plan's actions and facts shown in the run; the plan asset's author
and facts."""

from datetime import datetime, timedelta, timezone

import pytest
from dagster import DagsterInstance, materialize

import offsets_platform_dagster.cleanup as cleanup_assets
from offsets_platform_dagster.definitions import defs
from offsets_platform_dagster.resources import LakeResource
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, CleanupPlan, PlannedAction, save_plan
from offsets_platform.lake import Lake
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV
from tests.assets.sensor_ticks import tick

ACTIONS = (PlannedAction(DELETE_GROUPS, "old-group", None, None, "idle for 30 h",
                         {"group_state": "Empty", "member_count": 0, "classification": "consumer"}),
           PlannedAction(OFFSET_DELETE, "search", "orders", 2, "the group no longer subscribes to the topic",
                         {"group_state": "Stable", "committed_offset": 8, "lag_messages": 3}))


@pytest.fixture(autouse=True)
def four_eyes_by_default(monkeypatch):
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)


def _plan(lake: Lake, author: str) -> CleanupPlan:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    plan = CleanupPlan(f"plan-by-{author}", now, now + timedelta(hours=1), author, ACTIONS)
    save_plan(lake, plan)
    return plan


def _approve(lake: Lake, plan_id: str | None, tags: dict, **config):
    """Run the approve job for the plan, chosen as the launchpad chooses it: the run's partition."""
    run_config = {"ops": {"approve_plan": {"config": config}}, "resources": {"lake": {"config": {"root": str(lake.root)}}}}
    with DagsterInstance.ephemeral() as instance:
        if plan_id is not None:
            instance.add_dynamic_partitions(cleanup_assets.OPEN_PLANS.name, [plan_id])
        result = defs.resolve_job_def("approve_cleanup").execute_in_process(
            run_config=run_config, instance=instance, raise_on_error=False, tags=tags, partition_key=plan_id)
        result.logged = "\n".join(entry.user_message for entry in instance.all_logs(result.run_id))
        return result


def _approvers(lake: Lake) -> list[str]:
    if not lake.exists("cleanup_approvals"):
        return []
    return sorted({row["approved_by"] for row in lake.read_arrow("cleanup_approvals").to_pylist()})


def _failure(result) -> str:
    """What the failed step tells the person who launched it (a Failure's description)."""
    (failure,) = result.get_step_failure_events()
    return failure.event_specific_data.user_failure_data.description


def test_a_run_without_identity_tag_cannot_approve_and_names_the_tag_to_set(tmp_path):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    result = _approve(lake, plan.plan_id, tags={"team": "ops"})
    assert not result.success
    assert "offsets_platform/user=YOUR_NAME" in _failure(result)
    assert _approvers(lake) == []


def test_a_run_names_its_plan_by_its_partition_and_one_without_is_told_so(tmp_path):
    lake = Lake(tmp_path / "lake")
    _plan(lake, "bob")
    result = _approve(lake, None, tags={"offsets_platform/user": "alice"})
    assert not result.success
    assert "choose the plan: launch this job with one of its partitions" in _failure(result)
    assert _approvers(lake) == []
    with pytest.raises(Exception, match="plan_id"):  # the plan is never typed into config
        _approve(lake, "plan-by-bob", tags={"offsets_platform/user": "alice"}, plan_id="plan-by-bob")


def test_a_typed_approver_name_in_the_config_is_refused(tmp_path):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    with pytest.raises(Exception, match="approved_by"):
        _approve(lake, plan.plan_id, tags={"offsets_platform/user": "alice"}, approved_by="mallory")
    assert _approvers(lake) == []


def test_the_approver_is_the_run_s_identity_tag_dagster_plus_first(tmp_path):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    result = _approve(lake, plan.plan_id, tags={"dagster/user": "carol@example.com",
                                                "offsets_platform/user": "bob"})
    assert result.success, _failure(result)
    assert _approvers(lake) == ["carol@example.com"]


def test_the_approve_run_shows_the_plan_s_actions_and_facts_before_recording(tmp_path):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    chosen = ACTIONS[1].action_id
    result = _approve(lake, plan.plan_id, tags={"offsets_platform/user": "alice"}, action_ids=[chosen])
    assert result.success, _failure(result)
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = {key: value.value for key, value in output.event_specific_data.metadata.items()}
    assert (metadata["plan_id"], metadata["plan_created_by"], metadata["approved_by"], metadata["actions_approved"]) \
        == (plan.plan_id, "bob", "alice", 1)
    table = metadata["actions"]
    assert f"| {chosen} | OffsetDelete | search | orders | 2 | the group no longer subscribes to the topic | " \
           "committed_offset=8, group_state=Stable, lag_messages=3 |" in table
    assert "old-group" not in table, "only the actions being approved"
    # the same table is in the run's log, and before the approval is recorded
    log = result.logged
    assert "committed_offset=8" in log and log.index("committed_offset=8") < log.index("alice approved 1 actions")


def test_the_plan_s_author_cannot_approve_it_unless_self_approval_is_allowed(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    result = _approve(lake, plan.plan_id, tags={"dagster/user": "bob"})
    assert not result.success
    assert f"four-eyes: bob wrote plan {plan.plan_id}" in _failure(result)
    assert "committed_offset=8" in result.logged, "a refused run still shows what it was asked to approve"
    assert _approvers(lake) == []
    monkeypatch.setenv(ALLOW_SELF_APPROVAL_ENV, "true")
    assert _approve(lake, plan.plan_id, tags={"dagster/user": "bob"}).success
    assert _approvers(lake) == ["bob"]


def test_the_apply_job_sends_nothing_of_a_plan_only_its_author_approved(tmp_path):
    from offsets_platform.cleanup.approvals import approve

    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    approve(lake, plan.plan_id, "bob", allow_self_approval=True)  # as an older version, or a lifted rule, wrote it
    run_config = {"resources": {"lake": {"config": {"root": str(lake.root)}},
                                # never contacted: the refusal comes first
                                "kafka": {"config": {"bootstrap_servers": "127.0.0.1:9"}}}}
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(cleanup_assets.OPEN_PLANS.name, [plan.plan_id])
        result = defs.resolve_job_def("apply_cleanup").execute_in_process(
            run_config=run_config, instance=instance, raise_on_error=False, tags={"offsets_platform/user": "alice"},
            partition_key=plan.plan_id)
    assert not result.success
    assert f"plan {plan.plan_id} is approved only by its author bob; four-eyes" in _failure(result)
    assert not lake.exists("cleanup_audit")


def _materialize_plan(lake: Lake, monkeypatch, tags: dict):
    authors = []

    def build_plan(the_lake, created_by, **kwargs):
        # the plan's content is build_plan's own business (tests/cleanup); here: who the asset names
        authors.append(created_by)
        now = datetime.now(timezone.utc).replace(microsecond=0)
        return CleanupPlan(f"plan-of-{created_by.replace(' ', '-')}", now, now + timedelta(hours=1), created_by, ACTIONS)

    monkeypatch.setattr(cleanup_assets, "build_plan", build_plan)
    with DagsterInstance.ephemeral() as instance:
        result = materialize([cleanup_assets.cleanup_plan], instance=instance, tags=tags,
                             resources={"lake": LakeResource(root=str(lake.root))})
        offered = instance.get_dynamic_partitions(cleanup_assets.OPEN_PLANS.name)
    (materialization,) = result.asset_materializations_for_node("cleanup_plans")
    assert offered == [f"plan-of-{authors[-1].replace(' ', '-')}"], "the plan is offered to approve at once"
    return authors[-1], {key: value.value for key, value in materialization.metadata.items()}, result.run_id


def test_the_plan_asset_s_author_is_the_run_s_identity_tag_and_its_metadata_has_the_facts(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    author, metadata, _ = _materialize_plan(lake, monkeypatch, {"offsets_platform/user": "bob"})
    assert author == "bob" and metadata["created_by"] == "bob"
    assert "| search | orders | 2 |" in metadata["actions"] and "committed_offset=8, lag_messages=3" in metadata["actions"]
    assert "classification=consumer" in metadata["actions"]
    # bob wrote it: bob cannot approve it, alice can
    assert not _approve(lake, "plan-of-bob", tags={"offsets_platform/user": "bob"}).success
    assert _approve(lake, "plan-of-bob", tags={"offsets_platform/user": "alice"}).success

    author, _, run_id = _materialize_plan(lake, monkeypatch, {})
    assert author == f"dagster run {run_id[:8]}"


def test_the_sensor_offers_the_open_plans_and_withdraws_the_others(tmp_path):
    """Plans the command line stored join the list; expired or wholly applied ones leave it."""
    from offsets_platform.cleanup.audit import DELETED, PlanAudit

    lake = Lake(tmp_path / "lake")
    proposed = _plan(lake, "bob")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    applied = CleanupPlan("applied", now, now + timedelta(hours=1), "bob", ACTIONS)
    save_plan(lake, applied)
    PlanAudit(lake, applied.plan_id, "127.0.0.1:9092", "alice").record(list(applied.actions), DELETED, None, None)
    with DagsterInstance.ephemeral() as instance:
        name = cleanup_assets.OPEN_PLANS.name
        instance.add_dynamic_partitions(name, ["applied", "expired-long-ago"])
        resources = {"lake": LakeResource(root=str(lake.root))}
        tick(cleanup_assets.open_cleanup_plans_sensor, instance, resources)
        assert instance.get_dynamic_partitions(name) == [proposed.plan_id]
        assert "the 1 open plans are listed" in tick(cleanup_assets.open_cleanup_plans_sensor, instance,
                                                      resources).skip_message


def test_the_approve_run_warns_of_removals_done_since_the_plan_was_made_or_refuses_if_asked(tmp_path):
    from offsets_platform.cleanup.approvals import removals_since_made
    from offsets_platform.cleanup.audit import DELETED, PlanAudit

    lake = Lake(tmp_path / "lake")
    plan = _plan(lake, "bob")
    result = _approve(lake, plan.plan_id, tags={"offsets_platform/user": "alice"})
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    assert output.event_specific_data.metadata["facts"].value.endswith("no removal was done since")

    other = CleanupPlan("another", plan.created_at, plan.expires_at, "carol", ACTIONS[:1])
    save_plan(lake, other)
    PlanAudit(lake, other.plan_id, "127.0.0.1:9092", "alice").record(list(other.actions), DELETED, None, None)
    warning = removals_since_made(lake, plan)
    assert warning
    refused = _approve(lake, plan.plan_id, tags={"offsets_platform/user": "dave"}, refuse_older_facts=True)
    assert not refused.success and _failure(refused) == f"refused: {warning}"
    assert _approvers(lake) == ["alice"]
    warned = _approve(lake, plan.plan_id, tags={"offsets_platform/user": "dave"})
    assert warned.success and warning in warned.logged
    assert _approvers(lake) == ["alice", "dave"]
