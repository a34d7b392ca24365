"""The definitions load with every job, schedule and sensor resolved; what the UI shows of them."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from dagster import (AssetCheckKey, AssetKey, AssetMaterialization, DagsterInstance, DefaultScheduleStatus,
                     DefaultSensorStatus, FreshnessPolicy, build_schedule_context, build_sensor_context,
                     instance_for_test)
from dagster._utils.schedules import get_smallest_cron_interval

from offsets_platform_dagster.automation import (AUTOMATION_ENV, BOOTSTRAP_SERVERS_ENV, CLEANUP_CRON_ENV, INGEST_MAX_LAG_ENV,
                               PRUNE_CRON_ENV, REFRESH_CRON_ENV, build_automation)
from offsets_platform_dagster.bronze import offsets_topic_bronze
from offsets_platform_dagster.definitions import automation, defs, models, refresh_job
from offsets_platform_dagster.snapshots import cluster_snapshot
from offsets_platform.lake import Lake

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"bronze", "silver", "gold", "cleanup"}
JOBS = {"refresh", "ingest", "approve_cleanup", "apply_cleanup", "plan_cleanup", "alert", "prune",
        "plan_offset_reset"}
# As loaded here (the environment may set other crons than the defaults, which are tested below).
SCHEDULES = {"refresh_schedule": (automation.refresh_cron, "refresh"),
             "cleanup_plan_schedule": (automation.cleanup_cron, "plan_cleanup"),
             "prune_schedule": (automation.prune_cron, "prune")}
GRAPH = defs.resolve_asset_graph()
# what ingest and the snapshots write (pruned_offset_commit_counts, bronze too, is the prune's)
BRONZE = {key for definition in (offsets_topic_bronze, cluster_snapshot) for key in definition.keys}
MODELS = set(models.keys)


def automation_running() -> bool:
    """What the definitions loaded in this process decided, from this process's environment."""
    default = "running" if os.environ.get(BOOTSTRAP_SERVERS_ENV) else "stopped"
    return os.environ.get(AUTOMATION_ENV, default) == "running"


def test_every_job_schedule_and_sensor_resolves_with_the_in_process_executor():
    jobs = {job.name: job for job in defs.resolve_all_job_defs()}
    assert JOBS <= set(jobs)
    for job in jobs.values():
        assert job.executor_def.name == "in_process", job.name
    for name, (cron, job_name) in SCHEDULES.items():
        schedule = defs.resolve_schedule_def(name)
        assert (schedule.cron_schedule, schedule.job_name, schedule.execution_timezone) == (cron, job_name, "UTC")
        assert schedule.default_status == (DefaultScheduleStatus.RUNNING if automation_running()
                                           else DefaultScheduleStatus.STOPPED)
        assert schedule.description
        assert defs.resolve_job_def(schedule.job_name).executor_def.name == "in_process"
    sensors = {"freshness_checks_sensor", "alerts_sensor"}
    for name in sensors:
        assert defs.resolve_sensor_def(name).default_status == (DefaultSensorStatus.RUNNING if automation_running()
                                                                else DefaultSensorStatus.STOPPED)
    # the list of open plans reads only the lake: it runs everywhere
    assert defs.resolve_sensor_def("open_cleanup_plans_sensor").default_status == DefaultSensorStatus.RUNNING
    assert {s.name for s in defs.schedules} == set(SCHEDULES)
    assert {s.name for s in defs.sensors} == sensors | {"open_cleanup_plans_sensor"}


def test_every_table_asset_is_in_a_layer_group_with_a_description_and_a_column_schema():
    groups = {GRAPH.get(key).group_name for key in GRAPH.get_all_asset_keys()}
    assert LAYERS <= groups
    for key in GRAPH.get_all_asset_keys():
        node = GRAPH.get(key)
        if node.group_name not in LAYERS:  # assets of other groups (reports) are not tables
            continue
        assert node.description and "\n" not in node.description.strip(), f"{key}: one-line description"
        schema = node.metadata.get("dagster/column_schema")
        assert schema is not None and getattr(schema, "schema", schema).columns, f"{key} has no column schema"


def test_the_cleanup_plan_job_proposes_a_plan_and_nothing_else():
    job = defs.resolve_job_def("plan_cleanup")
    assert {key.to_user_string() for key in job.asset_layer.executable_asset_keys} == {"cleanup_plans"}


def test_the_scheduled_refresh_runs_every_asset_but_the_cleanup_plan_with_their_checks():
    schedule = defs.resolve_schedule_def("refresh_schedule")
    # Each context is closed (`with`): an open one keeps the instance it entered as Dagster's
    # current one, and later definitions in this process would reach for its deleted folder.
    with instance_for_test() as instance:  # schedules need a persistent instance
        with build_schedule_context(instance=instance, repository_def=defs.get_repository_def()) as context:
            (request,) = schedule.evaluate_tick(context).run_requests  # as the daemon does
        with build_schedule_context(instance=instance) as context:
            (without_definitions,) = schedule.evaluate_tick(context).run_requests
    selected = set(request.asset_selection)
    assert set(without_definitions.asset_selection) == selected
    everything = set(defs.resolve_job_def("refresh").asset_layer.executable_asset_keys)
    assert selected == everything - {AssetKey("cleanup_plans")}
    assert {AssetKey("cleanup_approvals"), AssetKey("cleanup_audit")} <= selected  # their row counts
    subset = defs.resolve_job_def("refresh").get_subset(asset_selection=selected)
    checks = {key.name for key in subset.asset_layer.asset_graph.asset_check_keys
              if key.asset_key in selected}
    assert checks == {"expectations", "freshness_check"}


def test_a_refresh_tick_is_skipped_while_an_earlier_refresh_has_not_finished():
    from dagster import DagsterRunStatus
    from dagster._core.test_utils import create_run_for_test

    schedule = defs.resolve_schedule_def("refresh_schedule")
    with instance_for_test() as instance, \
            build_schedule_context(instance=instance, repository_def=defs.get_repository_def()) as context:
        run = create_run_for_test(instance, job_name="refresh", status=DagsterRunStatus.STARTED)
        skipped = schedule.evaluate_tick(context)
        assert skipped.run_requests == [] and run.run_id in skipped.skip_message
        instance.report_run_failed(run)
        assert len(schedule.evaluate_tick(context).run_requests) == 1


def test_the_refresh_cron_and_the_freshness_window_come_from_the_environment_at_load():
    script = ("from dagster import AssetKey; "
              "from offsets_platform_dagster.definitions import automation, defs; "
              "s = defs.resolve_schedule_def('refresh_schedule'); "
              "print(s.cron_schedule, s.default_status.value, int(automation.ingest_max_lag.total_seconds())); "
              "graph = defs.resolve_asset_graph(); "
              "policies = [graph.get(AssetKey(name)).freshness_policy for name in ('group_snapshots', 'consumer_lag')]; "
              "print(*(int(window.to_timedelta().total_seconds()) for policy in policies "
              "for window in (policy.fail_window, policy.warn_window)))")
    env = {**os.environ, REFRESH_CRON_ENV: "*/5 * * * *", AUTOMATION_ENV: "stopped"}
    env.pop(INGEST_MAX_LAG_ENV, None)
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", script], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["*/5", "*", "*", "*", "*", "STOPPED", "600",
                                     "600", "450", "600", "450"]  # bronze's freshness policy, then a model's


def test_automation_settings_are_checked_and_named_in_errors():
    bronze = [offsets_topic_bronze, cluster_snapshot]

    def build(**environ):
        return build_automation(refresh_job, bronze, refreshed_keys=[], environ=environ)

    default = build()
    assert (default.refresh_cron, default.cleanup_cron, default.ingest_max_lag, default.prune_cron) == (
        "*/15 * * * *", "0 6 * * *", timedelta(minutes=30), "30 5 * * *")
    assert build(**{PRUNE_CRON_ENV: "0 2 * * 0"}).prune_cron == "0 2 * * 0"
    with pytest.raises(ValueError, match=PRUNE_CRON_ENV):
        build(**{PRUNE_CRON_ENV: "daily"})
    hourly = build(**{REFRESH_CRON_ENV: "0 * * * *", CLEANUP_CRON_ENV: "30 5 * * 1"})
    assert (hourly.ingest_max_lag, hourly.cleanup_cron) == (timedelta(hours=2), "30 5 * * 1")
    assert build(**{INGEST_MAX_LAG_ENV: "45"}).ingest_max_lag == timedelta(minutes=45)
    with pytest.raises(ValueError, match=REFRESH_CRON_ENV):
        build(**{REFRESH_CRON_ENV: "every 15 minutes"})
    with pytest.raises(ValueError, match=INGEST_MAX_LAG_ENV):
        build(**{INGEST_MAX_LAG_ENV: "-1"})
    with pytest.raises(ValueError, match=INGEST_MAX_LAG_ENV):  # a freshness policy's window is a minute at least
        build(**{INGEST_MAX_LAG_ENV: "0.5"})
    with pytest.raises(ValueError, match=AUTOMATION_ENV):
        build(**{AUTOMATION_ENV: "maybe"})


def _windows(policy) -> tuple[timedelta, timedelta | None]:
    return policy.fail_window.to_timedelta(), policy.warn_window.to_timedelta() if policy.warn_window else None


def test_bronze_and_the_models_carry_freshness_policies_with_the_configured_windows():
    # as loaded here: bronze fails past the ingest lag, a model past two refresh intervals
    refresh_interval = get_smallest_cron_interval(automation.refresh_cron, "UTC")
    assert automation.bronze_freshness == FreshnessPolicy.time_window(
        fail_window=automation.ingest_max_lag, warn_window=automation.ingest_max_lag * 3 / 4)
    assert automation.model_freshness == FreshnessPolicy.time_window(
        fail_window=2 * refresh_interval, warn_window=refresh_interval * 3 / 2)
    with_policy = {key for key in GRAPH.get_all_asset_keys() if GRAPH.get(key).freshness_policy is not None}
    assert BRONZE and MODELS and with_policy == BRONZE | MODELS
    for key in BRONZE:
        assert GRAPH.get(key).freshness_policy == automation.bronze_freshness, key
    for key in MODELS:
        assert GRAPH.get(key).freshness_policy == automation.model_freshness, key
    # observed tables and the cleanup plan, report and records have none
    assert GRAPH.get(AssetKey("cleanup_plans")).freshness_policy is None
    assert GRAPH.get(AssetKey("pruned_offset_commit_counts")).freshness_policy is None


def test_the_freshness_windows_follow_the_settings():
    def windows(**environ):
        built = build_automation(refresh_job, [offsets_topic_bronze, cluster_snapshot], refreshed_keys=[],
                                 environ=environ)
        return _windows(built.bronze_freshness), _windows(built.model_freshness)

    minutes = lambda value: timedelta(minutes=value)  # noqa: E731
    assert windows() == ((minutes(30), minutes(22.5)), (minutes(30), minutes(22.5)))
    assert windows(**{REFRESH_CRON_ENV: "0 * * * *"}) == ((minutes(120), minutes(90)), (minutes(120), minutes(90)))
    assert windows(**{INGEST_MAX_LAG_ENV: "45"}) == ((minutes(45), minutes(33.75)), (minutes(30), minutes(22.5)))
    # too short a window for a warning (Dagster's policies count in minutes at least)
    assert windows(**{INGEST_MAX_LAG_ENV: "1"})[0] == (minutes(1), None)


def test_the_shipped_instance_settings_run_the_freshness_daemon(tmp_path):
    shipped = (ROOT / "assets" / "dagster.yaml").read_text()
    for name, settings in (("shipped", shipped), ("off", shipped.replace("enabled: true", "enabled: false"))):
        home = tmp_path / name
        home.mkdir()
        (home / "dagster.yaml").write_text(settings)
        with DagsterInstance.from_config(str(home)) as instance:
            assert instance.freshness_enabled == (name == "shipped")
            assert ("FRESHNESS_DAEMON" in instance.get_required_daemon_types()) == (name == "shipped")


def test_the_schedules_run_by_default_only_when_a_cluster_is_configured():
    def status(**environ):
        automation = build_automation(refresh_job, [offsets_topic_bronze, cluster_snapshot], refreshed_keys=[],
                                      environ=environ)
        return {definition.default_status.value for definition in (*automation.schedules, *automation.sensors)}

    assert status() == {"STOPPED"}  # the embedded broker: an empty cluster every 15 minutes
    assert status(**{BOOTSTRAP_SERVERS_ENV: "kafka-1:9092"}) == {"RUNNING"}
    assert status(**{AUTOMATION_ENV: "running"}) == {"RUNNING"}
    assert status(**{BOOTSTRAP_SERVERS_ENV: "kafka-1:9092", AUTOMATION_ENV: "stopped"}) == {"STOPPED"}


def test_freshness_checks_fail_for_bronze_that_ingest_left_behind_and_the_sensor_requests_them():
    checks = {key for key in GRAPH.asset_check_keys if key.name == "freshness_check"}
    assert {key.asset_key for key in checks} == BRONZE
    assert not any(spec.blocking for definition in automation.asset_checks for spec in definition.check_specs)
    fresh, stale = AssetKey("offset_commit_records"), AssetKey("group_snapshots")
    with DagsterInstance.ephemeral() as instance:
        with build_sensor_context(instance=instance, definitions=defs) as context:
            (request,) = defs.resolve_sensor_def("freshness_checks_sensor").evaluate_tick(context).run_requests
        assert set(request.asset_check_keys) == checks  # never evaluated: all are due
        instance.report_runless_asset_event(AssetMaterialization(fresh))
        job = defs.resolve_implicit_global_asset_job_def().get_subset(
            asset_selection=set(), asset_check_selection={AssetCheckKey(fresh, "freshness_check"),
                                                          AssetCheckKey(stale, "freshness_check")})
        assert job.executor_def.name == "in_process"
        result = job.execute_in_process(instance=instance)
    outcome = {e.asset_key: e.passed for e in result.get_asset_check_evaluations()}
    assert outcome == {fresh: True, stale: False}


def test_the_refresh_observes_the_row_counts_of_the_tables_the_cleanup_jobs_write(tmp_path):
    from datetime import datetime, timezone

    from offsets_platform.cleanup.approvals import approve
    from offsets_platform.cleanup.plans import CleanupPlan, PlannedAction, save_plan

    lake = Lake(tmp_path / "lake")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    save_plan(lake, CleanupPlan("p1", now, now + timedelta(hours=1), "test",
                                (PlannedAction("DeleteGroups", "old-group", None, None, "idle", {"member_count": 0}),)))
    approve(lake, "p1", "alice")
    keys = {AssetKey("cleanup_approvals"), AssetKey("cleanup_audit")}
    job = defs.resolve_job_def("refresh").get_subset(asset_selection=keys)
    with DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance,
                                        run_config={"resources": {"lake": {"config": {"root": str(lake.root)}}}})
    counts = {e.event_specific_data.asset_observation.asset_key.to_user_string():
              e.event_specific_data.asset_observation.metadata["dagster/row_count"].value
              for e in result.get_asset_observation_events()}
    assert counts == {"cleanup_approvals": 1, "cleanup_audit": 0}
