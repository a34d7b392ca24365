"""The metrics exporter on hand-written gold rows (no Spark, no broker): what it reads from each
model, how it encodes names, labels and values, and its two commands."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from offsets_platform.broker.embedded import free_loopback_port
from offsets_platform.cli import main
from offsets_platform.views.metrics import exposition
from offsets_platform.views.metrics.serve import metrics_server, write_textfile
from tests.metrics.helpers import AWKWARD, fill, key, samples, write
from tests.test_summary import at

pytestmark = pytest.mark.fast  # make test-fast

P = "offsets_platform_"


@pytest.fixture
def filled(lake):
    fill(lake)
    return lake


def test_coordinator_meters_add_up_every_bucket(filled):
    found = samples(exposition(filled))
    assert [found[key(P + name + "_total")] for name in
            ("offset_commits", "offset_expirations", "offset_deletions", "group_completed_rebalances")] == [42, 4, 4, 2]


def test_non_consumed_sums_every_loss_per_group_topic_and_partition(filled):
    found = samples(exposition(filled))
    assert {labels: value for (name, labels), value in found.items() if name == P + "non_consumed_total"} == {
        key("", group_id="busy", topic="t", partition_id=0)[1]: 15,
        key("", group_id="busy", topic="t", partition_id=1)[1]: 7,
        key("", group_id=AWKWARD, topic="t", partition_id=0)[1]: 3}
    assert found[key(P + "non_consumed_at_least_total", group_id="busy", topic="t", partition_id=0)] == 13


def test_lag_in_messages_and_seconds_with_an_unknown_age_left_out(filled):
    found = samples(exposition(filled))
    assert found[key(P + "consumer_lag_messages", group_id="busy", topic="t", partition_id=0)] == 3
    assert found[key(P + "consumer_lag_messages", group_id="busy", topic="t", partition_id=1)] == 0
    assert found[key(P + "consumer_lag_seconds", group_id="busy", topic="t", partition_id=0)] == 1.5
    assert found[key(P + "consumer_lag_seconds", group_id=AWKWARD, topic="t", partition_id=0)] == 120
    assert key(P + "consumer_lag_seconds", group_id="busy", topic="t", partition_id=1) not in found  # null, not 0


def test_status_per_partition_and_one_per_group(filled):
    found = samples(exposition(filled))
    statuses = {(dict(labels)["group_id"], dict(labels)["partition_id"], dict(labels)["status"], value)
                for (name, labels), value in found.items() if name == P + "consumer_partition_status"}
    assert statuses == {("busy", "0", "STALL", 1), ("busy", "1", "OK", 1), (AWKWARD, "0", "WARN", 1)}
    groups = {(dict(labels)["group_id"], dict(labels)["status"]) for (name, labels), value in found.items()
              if name == P + "consumer_group_status"}
    assert groups == {("busy", "ERR"), (AWKWARD, "WARN")}


def test_expiring_counts_partitions_within_the_horizon_due_ones_included(filled):
    found = samples(exposition(filled))
    labels = {"group_id": AWKWARD, "topic": "u", "rule": "standalone"}
    assert found[key(P + "offsets_expiring", **labels)] == 2
    assert found[key(P + "offsets_expiring_due_now", **labels)] == 1
    assert found[key(P + "offsets_expiring_first_timestamp_seconds", **labels)] == at(0).timestamp() - 3600
    assert found[key(P + "offsets_expiring_horizon_seconds")] == 86400
    wider = samples(exposition(filled, within_hours=48))
    assert wider[key(P + "offsets_expiring", **labels)] == 3
    assert wider[key(P + "offsets_expiring_horizon_seconds")] == 48 * 3600
    assert not [name for name, labels in found if dict(labels).get("group_id") == "busy" and "expiring" in name]


def test_messages_at_risk_are_the_unread_ones_retention_deletes_within_the_horizon(filled):
    write(filled, "retention_forecast", [
        {"group_id": "busy", "topic": "t", "partition_id": 0, "unread_in_log": 5, "hours_left": 2.0},
        {"group_id": "busy", "topic": "t", "partition_id": 1, "unread_in_log": 9, "hours_left": -1.0},  # due now
        {"group_id": AWKWARD, "topic": "t", "partition_id": 0, "unread_in_log": 4, "hours_left": 30.0},
        {"group_id": "busy", "topic": "old", "partition_id": 0, "unread_in_log": 6, "hours_left": 1.0}])
    # busy left topic old: its offsets there are abandoned, no one's backlog
    write(filled, "expirable_offsets", [{"group_id": "busy", "topic": "old", "partition_id": 0,
                                         "rule": "unsubscribed_topic", "is_abandoned": True, "hours_until_expiry": 9.0}])

    def at_risk(within_hours: float) -> dict:
        return {(dict(labels)["group_id"], dict(labels)["topic"], dict(labels)["partition_id"]): value
                for (name, labels), value in samples(exposition(filled, within_hours)).items()
                if name == P + "messages_at_risk"}

    assert at_risk(24) == {("busy", "t", "0"): 5, ("busy", "t", "1"): 9}
    assert at_risk(48) == {("busy", "t", "0"): 5, ("busy", "t", "1"): 9, (AWKWARD, "t", "0"): 4}


def test_the_watched_groups_are_marked_for_the_expiry_alerting_rule(filled, capsys, monkeypatch):
    def watched(text: str) -> set[str]:
        return {dict(labels)["group_id"] for (name, labels), value in samples(text).items()
                if name == P + "watched_group" and value == 1}

    assert watched(exposition(filled)) == set()  # none watched: no expiry alerts, as the alerts' own
    assert watched(exposition(filled, watched_groups=("we*", "nobody"))) == {AWKWARD}  # the lake's groups only
    # the commands: --watch, else the alerts' setting
    monkeypatch.setenv("OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS", "busy, other")
    home = str(filled.root.parent)
    assert main(["metrics", "--home", home]) == 0
    assert watched(capsys.readouterr().out) == {"busy"}
    assert main(["metrics", "--home", home, "--watch", "we*", "--watch", "busy,x"]) == 0
    assert watched(capsys.readouterr().out) == {AWKWARD, "busy"}


def test_the_times_of_the_latest_refresh_ingest_and_snapshot(filled):
    found = samples(exposition(filled))
    assert found[key(P + "models_last_run_timestamp_seconds")] == at(20).timestamp()
    assert found[key(P + "model_last_run_timestamp_seconds", model="consumer_lag")] == at(20).timestamp()
    assert found[key(P + "model_last_run_timestamp_seconds", model="coordinator_metrics")] == at(11).timestamp()
    assert found[key(P + "ingest_last_checkpoint_timestamp_seconds")] == at(4).timestamp()
    assert found[key(P + "snapshot_last_timestamp_seconds")] == at(6).timestamp()


def test_a_lake_without_models_declares_the_families_and_claims_nothing(lake):
    lake.root.mkdir(parents=True)
    text = exposition(lake)
    assert "# TYPE offsets_platform_offset_commits counter" in text
    assert samples(text) == {key(P + "offsets_expiring_horizon_seconds"): 86400}
    assert not lake.exists("coordinator_metrics") and list(lake.root.iterdir()) == []  # reading wrote nothing


@pytest.mark.parametrize("openmetrics", [True, False])
def test_label_values_are_escaped_and_counters_named_as_each_format_wants(filled, openmetrics):
    text = exposition(filled, openmetrics=openmetrics)
    lines = text.splitlines()
    # the awkward group's name: backslash, double quote and line feed escaped, in both formats
    assert 'offsets_platform_non_consumed_total{group_id="we\\"ird\\\\group\\nname",partition_id="0",topic="t"} 3.0' \
        in lines
    assert samples(text)[key(P + "non_consumed_total", group_id=AWKWARD, topic="t", partition_id=0)] == 3
    # OpenMetrics names a counter's family without _total and ends with # EOF; 0.0.4 does neither
    family = P + "offset_commits" if openmetrics else P + "offset_commits_total"
    assert f"# TYPE {family} counter" in lines and lines[lines.index(f"# TYPE {family} counter") + 1] \
        == P + "offset_commits_total 42.0"
    assert (lines[-1] == "# EOF") == openmetrics


def test_two_samples_with_the_same_labels_are_refused_before_a_scraper_sees_them(filled):
    # a consumer_status row twice: one partition would have two series of one status
    write(filled, "consumer_status", [{"group_id": "busy", "topic": "t", "partition_id": 1, "status": "OK",
                                       "rule": "caught_up", "group_status": "ERR"}])
    with pytest.raises(ValueError, match="offsets_platform_consumer_partition_status: two samples"):
        exposition(filled)


def test_metrics_prints_or_writes_a_textfile_in_one_rename(filled, tmp_path, capsys):
    home = str(filled.root.parent)
    assert main(["metrics", "--home", home]) == 0
    printed = capsys.readouterr().out
    assert "# EOF" not in printed and samples(printed)[key(P + "offset_commits_total")] == 42
    assert main(["metrics", "--home", home, "--format", "openmetrics"]) == 0
    assert capsys.readouterr().out.endswith("# EOF\n")

    folder = tmp_path / "textfiles"
    folder.mkdir()
    (folder / "offsets_platform.prom").write_text("old\n")
    assert main(["metrics", "--home", home, "--within", "2d", "--textfile", str(folder / "offsets_platform.prom")]) == 0
    assert os.listdir(folder) == ["offsets_platform.prom"]  # the temporary file was renamed, not left
    written = (folder / "offsets_platform.prom").read_text()
    assert samples(written)[key(P + "offsets_expiring_horizon_seconds")] == 2 * 86400
    assert stat.S_IMODE((folder / "offsets_platform.prom").stat().st_mode) == 0o644  # node_exporter's user reads it


def test_a_failed_textfile_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "m.prom"
    target.write_text("old\n")
    monkeypatch.setattr(os, "replace", lambda *args: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        write_textfile(target, "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["m.prom"]


@pytest.mark.parametrize("command", [["metrics"], ["metrics-server", "--port", "0"],
                                     ["metrics", "--textfile", "out.prom"]])
def test_a_lake_that_is_not_there_is_named_and_nothing_is_created(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--home", str(tmp_path / "none")]) == 1
    assert f"there is no lake in {tmp_path / 'none' / 'lake'}" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_the_server_reads_the_lake_on_each_scrape_in_the_format_asked_for(filled):
    server = metrics_server(filled, "127.0.0.1", 0, 24)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"

    def get(path: str, accept: str = "*/*"):
        with urllib.request.urlopen(urllib.request.Request(url + path, headers={"Accept": accept}), timeout=10) as r:
            return r.headers["Content-Type"], r.read().decode()

    try:
        kind, text = get("/metrics", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
        assert kind.startswith("application/openmetrics-text; version=1.0.0") and text.endswith("# EOF\n")
        kind, text = get("/metrics")
        assert kind.startswith("text/plain; version=0.0.4") and "# EOF" not in text
        assert samples(text)[key(P + "offset_commits_total")] == 42
        filled.append("coordinator_metrics", filled.read_arrow("coordinator_metrics").slice(0, 1).set_column(
            0, "bucket_start_at", [[at(30)]]))
        assert samples(get("/metrics")[1])[key(P + "offset_commits_total")] == 52  # read anew
        with pytest.raises(urllib.error.HTTPError) as missing:
            get("/")
        assert missing.value.code == 404
        filled.root.rename(filled.root.with_name("moved"))
        with pytest.raises(urllib.error.HTTPError) as gone:  # the scraper marks the target down
            get("/metrics")
        assert gone.value.code == 500 and str(filled.root) in gone.value.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# metrics-server whose every collection takes a second and a half: long enough to stop it mid-scrape
SLOW_SERVER = """
import sys, time
from offsets_platform.views.metrics import collector
from offsets_platform.cli import main
read = collector.collect
collector.collect = lambda *arguments: (time.sleep(1.5), read(*arguments))[1]
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_during_a_scrape_answers_it_and_ends_the_server_cleanly(filled, stop_signal):
    port = free_loopback_port()
    server = subprocess.Popen([sys.executable, "-c", SLOW_SERVER, "metrics-server", "--home", str(filled.root.parent),
                               "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "serving the metrics" in server.stdout.readline()
        answers = []
        scrape = threading.Thread(target=lambda: answers.append(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).status))
        scrape.start()
        time.sleep(0.5)  # the scrape is being collected
        server.send_signal(stop_signal)
        scrape.join(timeout=30)
        assert answers == [200], "the scrape in progress is answered whole"
        assert server.wait(timeout=30) == 0, server.stderr.read()
        assert "metrics server stopped" in server.stdout.read()
    finally:
        server.kill()


def test_offsets_a_group_left_behind_are_not_lag_but_abandoned(filled):
    """`busy` has members and none reads `old` any more: its 2 partitions there are abandoned."""
    write(filled, "consumer_lag", [{"group_id": "busy", "topic": "old", "partition_id": p, "lag_messages": 7, "lag_ms": 9000}
                                   for p in (0, 1)])
    write(filled, "expirable_offsets", [{"group_id": "busy", "topic": "old", "partition_id": p, "rule": "unsubscribed_topic",
                                         "is_abandoned": True, "hours_until_expiry": 100.0} for p in (0, 1)])
    found = samples(exposition(filled))
    assert not [labels for (name, labels) in found if name.startswith(P + "consumer_lag") and ("topic", "old") in labels]
    assert found[key(P + "abandoned_offsets", group_id="busy", topic="old")] == 2
    assert found[key(P + "abandoned_lag_messages", group_id="busy", topic="old")] == 14
    assert found[key(P + "consumer_lag_messages", group_id="busy", topic="t", partition_id=0)] == 3  # the rest stays
