"""Alerts from Dagster: `alerts_sensor` and the `alert` job (docs/alerts.md).

The sensor is a plain sensor with a cursor, not an asset sensor: the models also run from the
command line, and whoever ran them, their `model_runs` rows say when the gold tables last
changed. Every minute the sensor:

1. skips while a `refresh` run has not finished (half the gold tables would be new);
2. reads when the models last wrote the lake, and skips when it has evaluated that refresh with
   the same alert settings already;
3. evaluates the conditions (`offsets_platform.views.alerts`) and compares the keys with those open
   before, kept in the cursor;
4. tells only what changed, new alerts and cleared ones:
   - with `OFFSETS_PLATFORM_ALERT_WEBHOOK_URL`, as one JSON POST. The cursor moves only when
     the receiver answered 2xx, so a receiver that is down loses nothing: the sensor logs one
     error line and the next tick evaluates and sends again. It never raises for that, so the
     daemon does not back off or mark the sensor failed;
   - without a webhook, as a run of the `alert` job, whose only op fails with the new alerts'
     text (so Dagster's run-failure notifications, e.g. a run-failure sensor posting to Slack,
     fire), or succeeds listing the cleared ones when nothing opened.

Like the schedules, the sensor runs by default only when a cluster is configured
(`assets/automation.py`). The alert settings are read at every tick, so changing them needs no
reload; the next tick re-evaluates with them.
"""

# No `from __future__ import annotations`: Dagster inspects the op's and the sensor's annotations.
import hashlib
import json
import os
from datetime import datetime, timezone
from typing import List, Mapping, Tuple

from dagster import (Config, DefaultSensorStatus, Failure, JobDefinition, MetadataValue, OpExecutionContext,
                     RunRequest, RunsFilter, SensorDefinition, SensorEvaluationContext, SensorResult, SkipReason,
                     in_process_executor, job, op, sensor)

from offsets_platform_dagster.automation import UNFINISHED_STATUSES, automation_running
from offsets_platform.views.alerts import WebhookError, changes, evaluate, payload, post_json, text
from offsets_platform.lake import Lake
from offsets_platform.settings import AlertSettings
from offsets_platform.views.from_lake import last_refresh

ALERT_JOB = "alert"
ALERTS_SENSOR = "alerts_sensor"
REFRESH_JOB = "refresh"
TICK_SECONDS = 60


class AlertRunConfig(Config):
    """What the sensor hands the `alert` run: the summaries of the changes."""

    opened: List[str] = []
    cleared: List[str] = []
    still_open: int = 0


@op(name="raise_alerts", description="Fails with the new alerts' text; succeeds listing cleared ones.")
def raise_alerts(context: OpExecutionContext, config: AlertRunConfig):
    for summary in config.cleared:
        context.log.info(f"cleared: {summary}")
    if config.opened:
        raise Failure(
            description=f"{len(config.opened)} new alerts:\n" + "\n".join(f"- {s}" for s in config.opened),
            metadata={"opened": MetadataValue.json(list(config.opened)),
                      "cleared": MetadataValue.json(list(config.cleared)),
                      "open": config.still_open},
            allow_retries=False,
        )


@job(name=ALERT_JOB, executor_def=in_process_executor,
     description="Raised by alerts_sensor when no webhook is configured: fails with new alerts, "
                 "succeeds with cleared ones (docs/alerts.md).")
def alert_job():
    raise_alerts()


def build_alerts(environ: Mapping[str, str] = os.environ) -> Tuple[JobDefinition, SensorDefinition]:
    """The `alert` job and `alerts_sensor`, running by default when automation is (automation.py)."""
    status = DefaultSensorStatus.RUNNING if automation_running(environ) else DefaultSensorStatus.STOPPED

    @sensor(name=ALERTS_SENSOR, job=alert_job, minimum_interval_seconds=TICK_SECONDS, default_status=status,
            required_resource_keys={"lake"},
            description="After each refresh of the models, tells new and cleared alerts (messages at risk, a watched "
                        "group's expiring offsets, STOP/STALL/REWIND) to OFFSETS_PLATFORM_ALERT_WEBHOOK_URL, or as "
                        "a failed `alert` run without one.")
    def alerts_sensor(context: SensorEvaluationContext):
        return alert_tick(context, context.resources.lake.lake(), AlertSettings.from_env())

    return alert_job, alerts_sensor


def alert_tick(context: SensorEvaluationContext, lake: Lake, settings: AlertSettings,
               now: datetime | None = None):
    """One evaluation of the sensor (the module docstring says what it does)."""
    now = now or datetime.now(timezone.utc)
    unfinished = context.instance.get_run_records(
        RunsFilter(job_name=REFRESH_JOB, statuses=UNFINISHED_STATUSES), limit=1)
    if unfinished:
        return SkipReason(f"refresh run {unfinished[0].dagster_run.run_id} has not finished: its tables are half new")
    refreshed = last_refresh(lake)
    if refreshed is None:
        return SkipReason("the models have not run on this lake yet")
    cursor = _load(context.cursor)
    evaluated = {"refresh": refreshed.isoformat(), "settings": _fingerprint(settings)}
    if cursor.get("evaluated") == evaluated:
        return SkipReason(f"the models' refresh of {refreshed:%Y-%m-%d %H:%M:%S} UTC was evaluated already; "
                          f"{len(cursor.get('open', {}))} alerts open")
    change = changes(cursor.get("open", {}), evaluate(lake, settings), now)
    moved = json.dumps({"evaluated": evaluated, "open": change.open}, sort_keys=True)
    counts = f"{len(change.opened)} new, {len(change.cleared)} cleared, {len(change.open)} open"
    if not change.any:
        return SensorResult(skip_reason=f"no change: {len(change.open)} alerts open", cursor=moved)
    if settings.webhook_url:
        target = settings.webhook_target()
        try:
            post_json(settings.webhook_url, payload(change, refreshed, now), settings.webhook_timeout_s, target)
        except WebhookError as error:
            # The cursor stays: the next tick evaluates again and sends what this one could not.
            context.log.error(f"alerts not delivered ({counts}): {error}; sent again at the next tick")
            return SkipReason(f"alerts not delivered: {error}; retried at the next tick")
        context.log.info(f"alerts sent to {target}: {counts}")
        return SensorResult(skip_reason=f"sent to {target}: {counts}", cursor=moved)
    context.log.info(f"alerts raised as an {ALERT_JOB} run: {counts}\n{text(change)}")
    digest = hashlib.sha256(moved.encode() + now.isoformat().encode()).hexdigest()[:16]
    return SensorResult(run_requests=[RunRequest(
        run_key=f"alerts-{digest}",
        run_config={"ops": {"raise_alerts": {"config": {
            "opened": [alert["summary"] for alert in change.opened],
            "cleared": [alert["summary"] for alert in change.cleared],
            "still_open": len(change.open)}}}},
        tags={"offsets_platform/trigger": ALERTS_SENSOR, "offsets_platform/alerts": counts})], cursor=moved)


def _load(cursor: str | None) -> dict:
    if not cursor:
        return {}
    try:
        loaded = json.loads(cursor)
    except ValueError:  # a cursor set by hand in the UI: start over, as on a first tick
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _fingerprint(settings: AlertSettings) -> str:
    """What in the settings changes which alerts are open (not where they are sent)."""
    chosen = [settings.loss_within_hours, settings.expiry_within_hours, settings.watched_groups,
              settings.ignored_groups]
    return hashlib.sha256(json.dumps(chosen).encode()).hexdigest()[:16]
