"""A real Prometheus scrapes `offsets-platform metrics-server`, and its HTTP API gives back the gold
tables' numbers, an awkward group name included; promtool accepts the textfile.

The lake holds hand-written gold rows (tests/metrics/helpers.py) rather than a model run: the
models are tested on their own, and this test is about the way from a table to Prometheus.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from offsets_platform.views.metrics import exposition
from tests.metrics.helpers import AWKWARD, fill, key, samples
from tests.metrics.programs import ROOT, binary, get, query, running_exporter, running_prometheus

P = "offsets_platform_"


@pytest.fixture(scope="module")
def gold_lake(tmp_path_factory):
    from offsets_platform.models.project import lake_for_models

    filled = lake_for_models(tmp_path_factory.mktemp("home") / "lake")
    fill(filled)
    return filled


@pytest.fixture(scope="module")
def exporter(gold_lake, tmp_path_factory):
    """`offsets-platform metrics-server` on the lake, on a free loopback port: its address."""
    with running_exporter(gold_lake, tmp_path_factory.mktemp("exporter"), "--within", "2d") as address:
        yield address


@pytest.fixture(scope="module")
def prometheus(exporter, tmp_path_factory):
    """A Prometheus scraping the exporter every second, after its first successful scrape: its URL."""
    config = json.dumps({  # YAML reads JSON
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [{"job_name": "offsets_platform", "static_configs": [{"targets": [exporter]}]}]})
    with running_prometheus(config, tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def test_prometheus_holds_the_gold_tables_numbers(prometheus, exporter, gold_lake):
    stored = {}
    # A range rather than an instant: a later scrape that timed out on a busy machine marks every
    # series stale at once, and a range keeps the values scraped before it.
    for series in query(prometheus, '{__name__=~"offsets_platform_.*"}[1m]'):
        labels = dict(series["metric"])
        name = labels.pop("__name__")
        assert (labels.pop("job"), labels.pop("instance")) == ("offsets_platform", exporter)
        stored[key(name, **labels)] = float(series["values"][-1][1])

    # what the tables hold, read back through Prometheus
    assert stored[key(P + "offset_commits_total")] == 42  # coordinator_metrics, both buckets
    assert stored[key(P + "offset_deletions_total")] == 4
    assert stored[key(P + "non_consumed_total", group_id="busy", topic="t", partition_id=0)] == 15  # unconsumed_messages
    assert stored[key(P + "non_consumed_total", group_id=AWKWARD, topic="t", partition_id=0)] == 3
    assert stored[key(P + "consumer_lag_messages", group_id=AWKWARD, topic="t", partition_id=0)] == 40  # consumer_lag
    assert stored[key(P + "consumer_lag_seconds", group_id=AWKWARD, topic="t", partition_id=0)] == 120
    assert stored[key(P + "consumer_partition_status", group_id="busy", topic="t", partition_id=0, status="STALL")] == 1
    assert stored[key(P + "consumer_group_status", group_id=AWKWARD, status="WARN")] == 1  # consumer_status
    assert stored[key(P + "offsets_expiring", group_id=AWKWARD, topic="u", rule="standalone")] == 3  # --within 2d
    assert stored[key(P + "models_last_run_timestamp_seconds")] == 1767226800  # model_runs, 2026-01-01 00:20 UTC
    # and every other sample the exporter serves, exactly
    assert stored == samples(exposition(gold_lake, within_hours=48))


def test_prometheus_reports_the_scrape_healthy_in_openmetrics(prometheus):
    (target,) = json.loads(get(f"{prometheus}/api/v1/targets"))["data"]["activeTargets"]
    assert (target["health"], target["lastError"]) == ("up", "")
    # A counter's family is named without _total only in OpenMetrics: Prometheus asked for it and read it.
    metadata = json.loads(get(f"{prometheus}/api/v1/metadata?metric={P}offset_commits"))["data"]
    assert [(m["type"], "coordinator_metrics" in m["help"]) for m in metadata[P + "offset_commits"]] \
        == [("counter", True)]


def test_promtool_accepts_the_textfile(gold_lake, tmp_path):
    textfile = tmp_path / "offsets_platform.prom"
    done = subprocess.run([sys.executable, "-m", "offsets_platform.cli", "metrics", "--home", str(gold_lake.root.parent),
                           "--textfile", str(textfile)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    check = subprocess.run([binary("promtool"), "check", "metrics"], input=textfile.read_text(),
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), check


def test_the_docs_relabelling_gives_dashboards_the_old_label_names_too(exporter, gold_lake, tmp_path):
    # docs/metrics.md's configuration for the move to 0.2.0's label names, as written there, scraping
    # this exporter every second
    docs = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    config = docs.split("## Label names changed in 0.2.0", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert "metric_relabel_configs" in config and '"127.0.0.1:9308"' in config and "scrape_interval: 1m" in config
    config = config.replace('"127.0.0.1:9308"', json.dumps(exporter)).replace("scrape_interval: 1m", "scrape_interval: 1s")
    with running_prometheus("global: {scrape_interval: 1s, scrape_timeout: 1s}\n" + config, tmp_path) as url:
        # a range, as above: a later scrape that timed out would leave no instant value
        stored = {}
        for series in query(url, '{__name__=~"offsets_platform_.*"}[1m]'):
            labels = dict(series["metric"])
            name = labels.pop("__name__")
            labels.pop("job"), labels.pop("instance")
            stored[key(name, **labels)] = float(series["values"][-1][1])
    # every series as the exporter serves it, with the old names copied from the new ones beside them
    expected = {}
    for (name, labels), value in samples(exposition(gold_lake, within_hours=48)).items():
        names = dict(labels)
        old = {old: names[new] for new, old in (("group_id", "group"), ("partition_id", "partition")) if new in names}
        expected[key(name, **names, **old)] = value
    assert stored == expected
    assert stored[key(P + "consumer_lag_messages", group="busy", group_id="busy", topic="t", partition="0",
                      partition_id="0")] == 3
