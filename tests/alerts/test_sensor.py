"""`alerts_sensor` over a lake with gold rows: a real local HTTP receiver gets each change once,
a receiver that is down gets it at the next tick, and without a webhook the `alert` run fails."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dagster import DagsterInstance, DagsterRunStatus, DefaultSensorStatus, build_sensor_context

from offsets_platform_dagster.alerts import ALERT_JOB, ALERTS_SENSOR, alert_job, build_alerts
from offsets_platform_dagster.resources import LakeResource
from offsets_platform.processes import free_loopback_port
from tests.alerts.test_conditions import forecast, status, write
from tests.test_summary import at, full_rows

pytestmark = pytest.mark.fast  # make test-fast


class Receiver:
    """An HTTP server on a loopback port that keeps every JSON body POSTed to it."""

    def __init__(self, port: int):
        self.port, self.bodies, self.paths, self.answer = port, [], [], 200
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.paths.append(self.path)
                receiver.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(receiver.answer)
                self.end_headers()

            def log_message(self, *args):  # keep the test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def receiver():
    running = Receiver(free_loopback_port())  # not started: a test starts it when it wants it up
    yield running
    running.stop()


@pytest.fixture
def gold(lake):
    """Group g: a STOP partition and unread messages due for deletion in 2 h; the models ran at minute 1."""
    write(lake, "consumer_status", [status("g", 0, "STOP", lag=42)])
    write(lake, "retention_forecast", [forecast("g", 0, 42, 2.0)])
    refreshed(lake, minute=1)
    return lake


def refreshed(lake, minute: int) -> None:
    write(lake, "model_runs", [{"model": "consumer_status", "run_id": f"r{minute}", "mode": "full",
                                "source": "consumer_lag", "finished_at": at(minute)}])


def tick(sensor, instance, lake, cursor):
    # closed after the tick: an open context keeps its instance as Dagster's current one
    with build_sensor_context(instance=instance, cursor=cursor,
                              resources={"lake": LakeResource(root=str(lake.root))}) as context:
        return sensor.evaluate_tick(context)


def test_each_change_is_posted_once_and_a_receiver_that_is_down_gets_it_at_the_next_tick(gold, receiver, monkeypatch):
    monkeypatch.setenv("OFFSETS_PLATFORM_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{receiver.port}/hooks/T0/secret")
    monkeypatch.setenv("OFFSETS_PLATFORM_ALERT_WEBHOOK_TIMEOUT_SECONDS", "5")
    _, sensor = build_alerts({})
    with DagsterInstance.ephemeral() as instance:
        down = tick(sensor, instance, gold, cursor=None)
        assert down.run_requests == [] and "retried at the next tick" in down.skip_message
        assert "secret" not in down.skip_message and down.cursor is None  # nothing delivered, nothing forgotten

        receiver.start()
        sent = tick(sensor, instance, gold, cursor=down.cursor)
        assert sent.run_requests == [] and "1 cleared" not in sent.skip_message
        (body,) = receiver.bodies
        assert receiver.paths == ["/hooks/T0/secret"]
        assert [(a["key"], a["status"]) for a in body["opened"]] == [("consumer_status/g/t/STOP", "firing"),
                                                                      ("messages_at_risk/g/t", "firing")]
        assert body["opened"][1]["partitions"][0]["unread_in_log"] == 42
        assert body["cleared"] == [] and body["source"] == "offsets_platform"
        assert body["models_refreshed_at"] == at(1).isoformat() and body["text"].startswith("2 new, 0 cleared")

        again = tick(sensor, instance, gold, cursor=sent.cursor)
        assert "evaluated already" in again.skip_message and len(receiver.bodies) == 1  # not sent twice

        # no longer stopped, still not catching up (WARN): the status alert clears, the risk stays
        gold.overwrite("consumer_status", full_rows(gold, "consumer_status", [status("g", 0, "WARN")]))
        refreshed(gold, minute=16)
        cleared = tick(sensor, instance, gold, cursor=again.cursor)
        assert len(receiver.bodies) == 2
        assert receiver.bodies[1]["opened"] == []
        assert [a["key"] for a in receiver.bodies[1]["cleared"]] == ["consumer_status/g/t/STOP"]
        assert receiver.bodies[1]["open"] == ["messages_at_risk/g/t"]

        refreshed(gold, minute=31)  # a refresh that changes nothing alerts nothing
        quiet = tick(sensor, instance, gold, cursor=cleared.cursor)
        assert quiet.skip_message == "no change: 1 alerts open" and len(receiver.bodies) == 2


def test_without_a_webhook_new_alerts_fail_an_alert_run_and_cleared_ones_succeed(gold, monkeypatch):
    monkeypatch.delenv("OFFSETS_PLATFORM_ALERT_WEBHOOK_URL", raising=False)
    _, sensor = build_alerts({})
    with DagsterInstance.ephemeral() as instance:
        first = tick(sensor, instance, gold, cursor=None)
        (request,) = first.run_requests
        assert request.job_name in (None, ALERT_JOB)  # the sensor's own job
        failed = alert_job.execute_in_process(run_config=request.run_config, instance=instance, raise_on_error=False)
        assert not failed.success
        (failure,) = [event for event in failed.all_events if event.is_step_failure]
        message = failure.step_failure_data.user_failure_data.description
        assert message.startswith("2 new alerts:") and "group g is ERR: t partition 0 STOP" in message

        gold.overwrite("consumer_status", full_rows(gold, "consumer_status", []))
        gold.overwrite("retention_forecast", full_rows(gold, "retention_forecast", []))
        refreshed(gold, minute=16)
        (cleared,) = tick(sensor, instance, gold, cursor=first.cursor).run_requests
        assert cleared.run_key != request.run_key
        assert len(cleared.run_config["ops"]["raise_alerts"]["config"]["cleared"]) == 2
        assert alert_job.execute_in_process(run_config=cleared.run_config, instance=instance).success


def test_a_tick_waits_for_an_unfinished_refresh_and_for_models_that_never_ran(lake, monkeypatch):
    from dagster import instance_for_test
    from dagster._core.test_utils import create_run_for_test

    _, sensor = build_alerts({})
    with instance_for_test() as instance:
        assert "have not run" in tick(sensor, instance, lake, cursor=None).skip_message
        run = create_run_for_test(instance, job_name="refresh", status=DagsterRunStatus.STARTED)
        refreshed(lake, minute=1)
        assert run.run_id in tick(sensor, instance, lake, cursor=None).skip_message


def test_the_sensor_runs_by_default_like_the_schedules_and_reads_the_configured_lake(lake, monkeypatch):
    assert build_alerts({})[1].default_status == DefaultSensorStatus.STOPPED
    assert build_alerts({"OFFSETS_PLATFORM_BOOTSTRAP_SERVERS": "kafka-1:9092"})[1].default_status == \
        DefaultSensorStatus.RUNNING
    from offsets_platform_dagster.definitions import defs

    assert defs.resolve_sensor_def(ALERTS_SENSOR).job_name == ALERT_JOB
    assert defs.resolve_job_def(ALERT_JOB).executor_def.name == "in_process"
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(lake.root.parent))  # as the daemon's process would have it
    monkeypatch.delenv("OFFSETS_PLATFORM_ALERT_WEBHOOK_URL", raising=False)
    write(lake, "consumer_status", [status("g", 0, "STALL")])
    refreshed(lake, minute=1)
    with DagsterInstance.ephemeral() as instance:
        # The daemon hands a sensor the definitions' resources it requires (build_sensor_context does not).
        lake_resource = defs.get_repository_def().get_top_level_resources()["lake"]
        with build_sensor_context(instance=instance, resources={"lake": lake_resource}) as context:
            (request,) = defs.resolve_sensor_def(ALERTS_SENSOR).evaluate_tick(context).run_requests
    assert request.run_config["ops"]["raise_alerts"]["config"]["opened"][0].startswith("group g is ERR")


def test_a_receiver_that_answers_an_error_is_an_error_not_a_delivery(receiver):
    from offsets_platform.views.alerts import WebhookError, post_json

    receiver.answer = 503
    receiver.start()
    with pytest.raises(WebhookError, match="the webhook answered HTTP 503"):
        post_json(f"http://127.0.0.1:{receiver.port}/", {"text": "x"}, timeout_s=5)
