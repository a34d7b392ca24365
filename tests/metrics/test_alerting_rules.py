"""The Prometheus alerting rules the package ships (offsets_platform/views/metrics/alerting_rules.yml):
`promtool check rules` accepts them and rejects a broken copy, `promtool test rules` passes on
tests/metrics/alerting_rules_test.yml and fails when a rule's condition is changed, and end to end
a real Prometheus evaluates them on `offsets-platform metrics-server` and a real Alertmanager
delivers the alerts to a webhook receiver of the test.

The lake holds hand-written gold rows (tests/metrics/helpers.py), as in test_prometheus_scrapes.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from offsets_platform.cli import main
from offsets_platform.views.metrics import collect
from offsets_platform.views.metrics.rules import alerting_rules
from offsets_platform.processes import free_loopback_port
from tests.metrics.helpers import AWKWARD, fill, write
from tests.metrics.programs import ROOT, binary, get, query, running_exporter, running_prometheus, start, stop, wait_for

RULES = ROOT / "offsets_platform" / "views" / "metrics" / "alerting_rules.yml"
RULES_TEST = ROOT / "tests" / "metrics" / "alerting_rules_test.yml"
ALERTS = {"OffsetsPlatformMessagesAtRisk", "OffsetsPlatformWatchedOffsetsExpiring", "OffsetsPlatformConsumerStatus",
          "OffsetsPlatformStaleRefresh"}


def _rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


@pytest.mark.fast  # make test-fast: no program runs
def test_the_command_prints_the_shipped_rules_without_a_lake(tmp_path, capsys):
    assert main(["metrics", "--alerting-rules", "--home", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == RULES.read_text() == alerting_rules()
    assert list(tmp_path.iterdir()) == []  # no lake was made
    assert main(["metrics", "--alerting-rules", "--textfile", str(tmp_path / "x.prom")]) == 1
    assert "rule_files" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


@pytest.mark.fast
def test_each_rule_has_a_severity_a_summary_and_a_description_and_reads_served_metrics(lake):
    lake.root.mkdir(parents=True)
    served = {family.name + ("_total" if family.type == "counter" else "") for family in collect(lake)}
    assert {rule["alert"] for rule in _rules()} == ALERTS
    for rule in _rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        names = set(re.findall(r"offsets_platform_\w+", rule["expr"]))
        assert names and names <= served, (rule["alert"], names - served)


def test_promtool_checks_the_shipped_rules_and_rejects_a_broken_one(tmp_path):
    check = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0 and f"SUCCESS: {len(ALERTS)} rules found" in check.stdout, check
    # the same check can fail: one unbalanced parenthesis in a copy
    broken = tmp_path / "alerting_rules.yml"
    text = RULES.read_text()
    assert text.count('{status=~"STOP|STALL|REWIND"} == 1\n') == 1
    broken.write_text(text.replace('{status=~"STOP|STALL|REWIND"} == 1\n', '{status=~"STOP|STALL|REWIND"} == 1)\n'))
    check = subprocess.run([binary("promtool"), "check", "rules", str(broken)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode != 0, check
    assert "OffsetsPlatformConsumerStatus" in check.stdout + check.stderr and "parse error" in check.stdout + check.stderr


def test_promtool_unit_tests_of_the_rules_pass():
    done = subprocess.run([binary("promtool"), "test", "rules", str(RULES_TEST)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done


# A change to each rule's condition, and the alert whose unit test must then fail: the unit tests
# hold each rule to what it mirrors of offsets_platform/views/alerts.py.
MUTATIONS = {
    "at risk also where the group catches up": (
        '{status="OK"} == 1', '{status="NONE"} == 1', "OffsetsPlatformMessagesAtRisk"),
    "expiring offsets of every group": (
        "\n            and on (group_id) (offsets_platform_watched_group == 1)", "", "OffsetsPlatformWatchedOffsetsExpiring"),
    "REWIND forgotten": ('"STOP|STALL|REWIND"', '"STOP|STALL"', "OffsetsPlatformConsumerStatus"),
    "abandoned offsets' status": (
        "\n              unless on (group_id, topic) (offsets_platform_abandoned_offsets > 0)\n          )", "\n          )",
        "OffsetsPlatformConsumerStatus"),
    "stale after three hours": ("> 2 * 3600", "> 3 * 3600", "OffsetsPlatformStaleRefresh"),
}


@pytest.mark.parametrize("old, new, alert", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_promtool_unit_tests_fail_when_a_rule_changes(tmp_path, old, new, alert):
    # the same layout as the repository's, so the test file's rule_files path finds the copy
    rules = tmp_path / "offsets_platform" / "views" / "metrics" / "alerting_rules.yml"
    rules_test = tmp_path / "tests" / "metrics" / "alerting_rules_test.yml"
    rules.parent.mkdir(parents=True)
    rules_test.parent.mkdir(parents=True)
    text = RULES.read_text()
    assert text.count(old) == 1, old
    rules.write_text(text.replace(old, new))
    shutil.copy(RULES_TEST, rules_test)
    done = subprocess.run([binary("promtool"), "test", "rules", str(rules_test)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0, done
    assert f"alertname: {alert}" in done.stdout + done.stderr, done


@pytest.fixture
def alerting_lake(lake):
    """tests/metrics/helpers.py's gold rows, in which `busy` is STALL on t-0 and the awkwardly named
    group's offsets on u expire within a day, and besides: unread messages due for deletion on both
    of busy's partitions of t (t-1 is OK, so only t-0's count), and on a partition of `calm`,
    which catches up (OK) and so must not alert."""
    fill(lake)
    write(lake, "retention_forecast", [
        {"group_id": "busy", "topic": "t", "partition_id": 0, "unread_in_log": 5, "hours_left": 2.0},
        {"group_id": "busy", "topic": "t", "partition_id": 1, "unread_in_log": 9, "hours_left": 1.0},
        {"group_id": "calm", "topic": "c", "partition_id": 0, "unread_in_log": 80, "hours_left": 1.0}])
    write(lake, "consumer_status", [{"group_id": "calm", "topic": "c", "partition_id": 0, "status": "OK",
                                     "rule": "caught_up", "group_status": "OK"}])
    return lake


class _Receiver(BaseHTTPRequestHandler):
    """Alertmanager's webhook: every POSTed body, kept in the server's `bodies`."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        pass  # the test's failure message shows what was received


@contextmanager
def _webhook_receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.lock, server.bodies = threading.Lock(), []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def _running_alertmanager(webhook_url: str, folder: Path):
    """Alertmanager sending each alert on its own, a second after it arrives, to `webhook_url`:
    its address, once ready. Clustering off, storage in `folder`: nothing of the machine's own
    Alertmanager service (port 9093) is used."""
    (folder / "alertmanager.yml").write_text(json.dumps({  # YAML reads JSON
        "route": {"receiver": "test", "group_by": ["..."], "group_wait": "1s", "group_interval": "1s",
                  "repeat_interval": "1h"},
        "receivers": [{"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": False}]}]}))
    address = f"127.0.0.1:{free_loopback_port()}"
    log = folder / "alertmanager.log"
    process = start([binary("prometheus-alertmanager", "alertmanager"), f"--config.file={folder / 'alertmanager.yml'}",
                     f"--storage.path={folder / 'data'}", f"--web.listen-address={address}",
                     "--cluster.listen-address=", "--log.level=warn"], log)
    try:
        wait_for("Alertmanager is ready", lambda: get(f"http://{address}/-/ready") is not None, process, log)
        yield address
    finally:
        stop(process)


def test_prometheus_evaluates_the_rules_and_alertmanager_delivers_the_alerts(alerting_lake, tmp_path):
    rules = tmp_path / "offsets_platform_rules.yml"
    printed = subprocess.run([sys.executable, "-m", "offsets_platform.cli", "metrics", "--alerting-rules"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    rules.write_text(printed.stdout)
    expected = {  # (alert, group_id, topic): what the lake holds
        ("OffsetsPlatformConsumerStatus", "busy", "t"),  # STALL on t-0
        ("OffsetsPlatformMessagesAtRisk", "busy", "t"),  # 5 unread messages on t-0; t-1 is OK
        ("OffsetsPlatformWatchedOffsetsExpiring", AWKWARD, "u"),  # watched through --watch 'we*'
        ("OffsetsPlatformStaleRefresh", None, None),  # the models last ran on 2026-01-01
    }
    for name in ("exporter", "alertmanager", "prometheus"):
        (tmp_path / name).mkdir()

    with _webhook_receiver() as receiver, \
            _running_alertmanager(f"http://127.0.0.1:{receiver.server_port}/alerts", tmp_path / "alertmanager") \
            as alertmanager, \
            running_exporter(alerting_lake, tmp_path / "exporter", "--watch", "we*") as exporter:
        config = json.dumps({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
            "scrape_configs": [{"job_name": "offsets_platform", "static_configs": [{"targets": [exporter]}]}]})
        with running_prometheus(config, tmp_path / "prometheus") as prometheus:

            def delivered() -> dict[tuple, dict]:
                with receiver.lock:
                    alerts = [alert for body in receiver.bodies for alert in body["alerts"]]
                return {(a["labels"]["alertname"], a["labels"].get("group_id"), a["labels"].get("topic")): a
                        for a in alerts if a["status"] == "firing"}

            deadline = time.monotonic() + 60
            while not expected <= set(delivered()) and time.monotonic() < deadline:
                time.sleep(0.2)
            received = delivered()
            # a range, as in test_prometheus_scrapes.py: a scrape that timed out on a busy machine
            # would end every series, and the alerts with them, for a moment
            firing = {(s["metric"]["alertname"], s["metric"].get("group_id"), s["metric"].get("topic"))
                      for s in query(prometheus, 'ALERTS{alertstate="firing"}[1m]')}
    # what Prometheus fires, nothing more (calm catches up; the awkward group's WARN is not ERR)
    assert firing == expected, f"Prometheus fires {sorted(firing, key=str)}"
    assert expected <= set(received), (f"the webhook did not receive {sorted(expected - set(received), key=str)} "
                                       f"within 60 s; it received {sorted(received, key=str)}")
    assert set(received) == expected
    status = received[("OffsetsPlatformConsumerStatus", "busy", "t")]
    assert (status["labels"]["status"], status["labels"]["severity"]) == ("STALL", "warning")
    assert status["annotations"]["summary"] == "Group busy is ERR: STALL on 1 of its partitions of t"
    at_risk = received[("OffsetsPlatformMessagesAtRisk", "busy", "t")]
    assert at_risk["labels"]["severity"] == "critical"
    assert at_risk["annotations"]["summary"] == "Group busy: 5 unread messages of t are due for deletion by retention"
    expiring = received[("OffsetsPlatformWatchedOffsetsExpiring", AWKWARD, "u")]
    assert expiring["labels"]["rule"] == "standalone" and "on 2 of" in expiring["annotations"]["description"]
