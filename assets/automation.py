"""Automation: the scheduled refresh, the daily cleanup plan, and freshness: policies on bronze and
the models, checks on bronze.

- `refresh_schedule` runs the `refresh` job every 15 minutes (cron `OFFSETS_PLATFORM_REFRESH_CRON`).
  The scheduled runs leave out `cleanup_plans`, so that a plan is not proposed every 15 minutes,
  and a tick is skipped while an earlier `refresh` run has not finished.
- `cleanup_plan_schedule` materializes `cleanup_plans` once a day through the `plan_cleanup` job
  (cron `OFFSETS_PLATFORM_CLEANUP_CRON`, default 06:00 UTC). A person still approves every plan.
- Every bronze asset has a freshness policy (Dagster's `FreshnessPolicy.time_window`) that fails
  when the asset was not materialized within `OFFSETS_PLATFORM_INGEST_MAX_LAG_MINUTES` (default: two
  refresh intervals): ingest fell behind. Every model has one whose window is two refresh
  intervals. Both warn at three quarters of their window: by default, one scheduled refresh
  missed. Dagster's freshness daemon (on by default, and in assets/dagster.yaml; `make ui`,
  `dagster dev` and `dg dev` run it) evaluates the policies every 30 seconds, and the UI shows each
  asset's freshness from them. That is all a policy does: the daemon records a change of state,
  nothing runs, no check fails, nothing is blocked, and an asset never materialized is "unknown",
  not failing.
- A `freshness_check` on every bronze asset fails past the same window, and does what the policy
  does not: it fails for a bronze table that was never written (ingest never ran), each evaluation
  is an asset check result kept in the check's history with the last update and the allowed lag,
  and it is evaluated in a run, so on any instance, also one without the freshness daemon or with
  it turned off. `freshness_checks_sensor` evaluates the checks between runs; `refresh` runs
  evaluate them too, after updating bronze (`ingest` runs leave every check out). They do not
  block anything, and the project's alerts (assets/alerts.py) do not read them. The models have
  the policy only: the same `refresh` runs write them after bronze, so when those runs stop the
  bronze checks fail, and a refresh whose models fail is a failed run.

These settings are read when the definitions load (a schedule's cron is part of its definition),
unlike the run settings, which are read when a run starts. Schedules and the sensors (this one, and
`alerts_sensor` in assets/alerts.py, by `automation_running`) start running
with the Dagster daemon (`make ui`) when a cluster is configured (`OFFSETS_PLATFORM_BOOTSTRAP_SERVERS`),
and stopped otherwise: every 15 minutes they would start the embedded broker, empty, and Spark, to
watch nothing. `OFFSETS_PLATFORM_AUTOMATION=running` or `stopped` decides either way. Every run
they start uses the in-process executor.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping, Sequence

from dagster import (AssetChecksDefinition, AssetKey, AssetSelection, AssetsDefinition, DagsterInvariantViolationError,
                     DagsterRunStatus, DefaultScheduleStatus, DefaultSensorStatus, FreshnessPolicy, JobDefinition,
                     RunRequest, RunsFilter, ScheduleDefinition, ScheduleEvaluationContext, SensorDefinition,
                     SkipReason, SupersessionWarning, apply_freshness_policy, build_last_update_freshness_checks,
                     build_sensor_for_freshness_checks, define_asset_job, in_process_executor, schedule)
from dagster._utils.schedules import get_smallest_cron_interval, is_valid_cron_string

REFRESH_CRON_ENV = "OFFSETS_PLATFORM_REFRESH_CRON"
DEFAULT_REFRESH_CRON = "*/15 * * * *"
CLEANUP_CRON_ENV = "OFFSETS_PLATFORM_CLEANUP_CRON"
DEFAULT_CLEANUP_CRON = "0 6 * * *"
PRUNE_CRON_ENV = "OFFSETS_PLATFORM_PRUNE_CRON"
DEFAULT_PRUNE_CRON = "30 5 * * *"  # daily, before the cleanup plan
INGEST_MAX_LAG_ENV = "OFFSETS_PLATFORM_INGEST_MAX_LAG_MINUTES"
AUTOMATION_ENV = "OFFSETS_PLATFORM_AUTOMATION"
BOOTSTRAP_SERVERS_ENV = "OFFSETS_PLATFORM_BOOTSTRAP_SERVERS"  # the cluster the runs watch (settings.py)
TIMEZONE = "UTC"
UNFINISHED_STATUSES = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                       DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]

CLEANUP_PLANS = AssetKey("cleanup_plans")
REFRESH_SCHEDULE = "refresh_schedule"
CLEANUP_PLAN_SCHEDULE = "cleanup_plan_schedule"
PRUNE_SCHEDULE = "prune_schedule"
CLEANUP_PLAN_JOB = "plan_cleanup"
FRESHNESS_SENSOR = "freshness_checks_sensor"


@dataclass(frozen=True)
class Automation:
    """What `build_automation` adds to the definitions."""

    jobs: Sequence[JobDefinition]
    schedules: Sequence[ScheduleDefinition]
    sensors: Sequence[SensorDefinition]
    asset_checks: Sequence[AssetChecksDefinition]
    refresh_cron: str
    cleanup_cron: str
    ingest_max_lag: timedelta
    prune_cron: str
    bronze_freshness: FreshnessPolicy  # fails past ingest_max_lag
    model_freshness: FreshnessPolicy  # fails past two refresh intervals


def build_automation(refresh_job, bronze_assets: Sequence[AssetsDefinition], refreshed_keys: Sequence[AssetKey],
                     prune_job=None, environ: Mapping[str, str] = os.environ) -> Automation:
    """Schedules, the cleanup-plan job, and the bronze freshness checks with their sensor.

    `refreshed_keys`: the assets a scheduled refresh updates (the `refresh` job's executable assets);
    `cleanup_plans` is taken out of them.
    """
    refresh_cron = _cron(environ, REFRESH_CRON_ENV, DEFAULT_REFRESH_CRON)
    cleanup_cron = _cron(environ, CLEANUP_CRON_ENV, DEFAULT_CLEANUP_CRON)
    max_lag = _max_lag(environ, refresh_cron)
    running = automation_running(environ)
    schedule_status = DefaultScheduleStatus.RUNNING if running else DefaultScheduleStatus.STOPPED
    sensor_status = DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED

    scheduled_keys = [key for key in refreshed_keys if key != CLEANUP_PLANS]

    @schedule(
        name=REFRESH_SCHEDULE,
        job=refresh_job,
        cron_schedule=refresh_cron,
        execution_timezone=TIMEZONE,
        default_status=schedule_status,
        description=f"Runs `refresh` ({refresh_cron} {TIMEZONE}, set with {REFRESH_CRON_ENV}): ingest, snapshot and "
                    f"every model with its checks; cleanup_plans is left to {CLEANUP_PLAN_SCHEDULE}.",
    )
    def refresh_schedule(context: ScheduleEvaluationContext):
        # Two refreshes must not write the lake at once: a tick while one is still going is skipped.
        unfinished = context.instance.get_run_records(
            RunsFilter(job_name=refresh_job.name, statuses=UNFINISHED_STATUSES), limit=1)
        if unfinished:
            return SkipReason(f"refresh run {unfinished[0].dagster_run.run_id} has not finished yet")
        keys = scheduled_keys
        try:  # the job as loaded, so that assets added to the definitions later are refreshed too
            job = context.repository_def.get_job(refresh_job.name)
            keys = sorted((key for key in job.asset_layer.executable_asset_keys if key != CLEANUP_PLANS), key=str)
        except DagsterInvariantViolationError:  # evaluated without the definitions (a unit test)
            pass
        # Checks of the selected assets (expectations, freshness) run with them.
        return RunRequest(asset_selection=keys, tags={"offsets_platform/trigger": REFRESH_SCHEDULE})

    plan_job = define_asset_job(
        CLEANUP_PLAN_JOB,
        selection=AssetSelection.assets(CLEANUP_PLANS),
        executor_def=in_process_executor,
        description="Propose a cleanup plan from the current tables (cleanup_plans); a person approves it.",
    )
    cleanup_schedule = ScheduleDefinition(
        name=CLEANUP_PLAN_SCHEDULE,
        job=plan_job,
        cron_schedule=cleanup_cron,
        execution_timezone=TIMEZONE,
        default_status=schedule_status,
        description=f"Proposes a cleanup plan once a day ({cleanup_cron} {TIMEZONE}, set with {CLEANUP_CRON_ENV}); "
                    "approve it with the approve_cleanup job.",
    )

    schedules = [refresh_schedule, cleanup_schedule]
    prune_cron = _cron(environ, PRUNE_CRON_ENV, DEFAULT_PRUNE_CRON)
    if prune_job is not None:
        schedules.append(ScheduleDefinition(
            name=PRUNE_SCHEDULE,
            job=prune_job,
            cron_schedule=prune_cron,
            execution_timezone=TIMEZONE,
            default_status=schedule_status,
            description=f"Runs `prune` once a day ({prune_cron} {TIMEZONE}, set with {PRUNE_CRON_ENV}): the offset "
                        "commit records and the snapshot rows older than a week that no model needs leave the "
                        "lake.",
        ))

    # Dagster 1.13 marks these factories superseded by FreshnessPolicy. The policies (above) are on the
    # assets; these checks are kept for what the policies do not do (the module's docstring says
    # what), and the warning silenced.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=SupersessionWarning)
        freshness_checks = list(build_last_update_freshness_checks(assets=list(bronze_assets), lower_bound_delta=max_lag))
        freshness_sensor = build_sensor_for_freshness_checks(
            freshness_checks=freshness_checks,
            name=FRESHNESS_SENSOR,
            minimum_interval_seconds=60,
            default_status=sensor_status,
        )

    return Automation(jobs=[plan_job], schedules=schedules, sensors=[freshness_sensor],
                      asset_checks=freshness_checks, refresh_cron=refresh_cron, cleanup_cron=cleanup_cron,
                      ingest_max_lag=max_lag, prune_cron=prune_cron, bronze_freshness=freshness_policy(max_lag),
                      model_freshness=freshness_policy(2 * get_smallest_cron_interval(refresh_cron, TIMEZONE)))


def freshness_policy(fail_window: timedelta) -> FreshnessPolicy:
    """Fails past `fail_window` since the last materialization; warns past three quarters of it, when
    that is at least the minute Dagster's policies allow."""
    warn_window = fail_window * 3 / 4
    return FreshnessPolicy.time_window(fail_window=fail_window,
                                       warn_window=warn_window if warn_window >= timedelta(minutes=1) else None)


def with_freshness_policy(definition: AssetsDefinition, policy: FreshnessPolicy) -> AssetsDefinition:
    """`definition` with `policy` on each of its assets."""
    return definition.map_asset_specs(lambda spec: apply_freshness_policy(spec, policy))


def _cron(environ: Mapping[str, str], name: str, default: str) -> str:
    cron = (environ.get(name) or "").strip() or default
    if not is_valid_cron_string(cron):
        raise ValueError(f"{name}={cron!r} is not a cron schedule (five fields, e.g. {default!r})")
    return cron


def _max_lag(environ: Mapping[str, str], refresh_cron: str) -> timedelta:
    value = (environ.get(INGEST_MAX_LAG_ENV) or "").strip()
    if not value:
        return 2 * get_smallest_cron_interval(refresh_cron, TIMEZONE)
    try:
        minutes = float(value)
    except ValueError:
        minutes = 0
    if minutes < 1:  # a freshness policy's window is at least a minute
        raise ValueError(f"{INGEST_MAX_LAG_ENV}={value!r} must be a number of minutes, at least 1")
    return timedelta(minutes=minutes)


def automation_running(environ: Mapping[str, str]) -> bool:
    cluster_configured = bool((environ.get(BOOTSTRAP_SERVERS_ENV) or "").strip())
    value = (environ.get(AUTOMATION_ENV) or ("running" if cluster_configured else "stopped")).strip().lower()
    if value not in ("running", "stopped"):
        raise ValueError(f"{AUTOMATION_ENV}={value!r} must be 'running' or 'stopped'")
    return value == "running"
