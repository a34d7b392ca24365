"""The report stays readable on a large cluster: a thousand groups over ten thousand partitions,
from the scale generator through the models (a real local Spark) to the HTML file.

Each figure draws at most its cap of rows, the ones that need attention first, and says "the N
of M" on its axis; its key numbers still count every row; each table ends with "and N more".
"""

from __future__ import annotations

import re
import shutil

import pytest

from offsets_platform_dagster.key_numbers import key_numbers as dagster_key_numbers
from offsets_platform.views.alerts import messages_lost
from offsets_platform.views.attention import NOT_ABANDONED
from offsets_platform.views.metrics import exposition
from offsets_platform.models.project import lake_for_models
from offsets_platform.models.runner import ModelRunner
from offsets_platform.views.report import FIGURES, key_numbers
from offsets_platform.views.report.figures import (MAX_FORECAST_BARS, MAX_HEATMAP_COLUMNS, MAX_HEATMAP_GROUPS,
                                             MAX_LOSS_SERIES, MAX_TIMELINE_GROUPS, group_states_figure,
                                             lag_heatmap_figure, retention_figure)
from offsets_platform.views.report.html import MAX_TABLE_ROWS, write_report
from offsets_platform.views.from_lake import list_groups, lost
from proving_ground.workload.scale_lake import BronzeFeed, add_snapshots
from tests.metrics.helpers import samples, sums_by_group
from tests.ui.browser import Browser

RECORDS = 300_000  # enough history for about 1,300 groups to commit on about 9,000 partitions
GROUPS, TOPIC_PARTITIONS = 1_000, 10_000


@pytest.fixture(scope="module")
def large(spark, tmp_path_factory):
    lake = lake_for_models(tmp_path_factory.mktemp("large_cluster") / "lake")
    BronzeFeed(lake, RECORDS, groups=GROUPS, topic_partitions=TOPIC_PARTITIONS).append(RECORDS, "build")
    add_snapshots(lake)
    ModelRunner(spark, lake, emit=lambda line: None).run_all(full_refresh=True)
    return lake


def one(lake, sql: str, *tables: str):
    return lake.query(sql, *tables).to_pylist()[0]["n"]


# what the figures leave out, as the command line does: the offsets a group abandoned
NOT_LEFT_BEHIND = NOT_ABANDONED.format(t="t")


def test_the_lake_has_a_large_clusters_shape(large):
    assert one(large, 'select count(distinct group_id) as n from consumer_lag', "consumer_lag") >= GROUPS
    assert one(large, 'select count(distinct topic || \'-\' || cast(partition_id as varchar)) as n from consumer_lag',
               "consumer_lag") >= 0.8 * TOPIC_PARTITIONS


def test_the_state_timeline_draws_the_groups_whose_state_changed_last(large):
    figure = group_states_figure(large)
    drawn = {group for trace in figure.data for group in trace.y}
    groups = one(large, 'select count(distinct group_id) as n from group_state_history', "group_state_history")
    assert len(drawn) == MAX_TIMELINE_GROUPS and key_numbers(figure)["groups"] == groups
    assert f"the {MAX_TIMELINE_GROUPS} of {groups:,} whose state changed last" in figure.layout.yaxis.title.text
    last_change: dict[str, object] = {}  # the group's newest observation of a state other than the one before
    previous: dict[str, str] = {}
    for row in large.query('select group_id, observed_at, state from group_state_history order by group_id, observed_at',
                           "group_state_history").to_pylist():
        if previous.get(row["group_id"]) != row["state"]:
            last_change[row["group_id"]] = row["observed_at"]
        previous[row["group_id"]] = row["state"]
    cutoff = sorted(last_change.values(), reverse=True)[MAX_TIMELINE_GROUPS - 1]
    assert all(last_change[group] >= cutoff for group in drawn)


def test_the_lag_heatmap_draws_the_groups_with_most_lag_per_topic(large):
    figure = lag_heatmap_figure(large)
    (heatmap,) = figure.data
    top = large.query(f'select group_id, sum(lag_messages) as lag from consumer_lag t where {NOT_LEFT_BEHIND} '
                      f'group by group_id order by lag desc, group_id limit {MAX_HEATMAP_GROUPS}',
                      "consumer_lag", "expirable_offsets").to_pylist()
    assert list(heatmap.y) == [row["group_id"] for row in top], "the most lag first"
    assert len(heatmap.x) <= MAX_HEATMAP_COLUMNS and "partitions' lag summed" in figure.layout.xaxis.title.text
    total = one(large, f"select sum(lag_messages) as n from consumer_lag t where {NOT_LEFT_BEHIND}",
                "consumer_lag", "expirable_offsets")
    assert key_numbers(figure)["total_lag_messages"] == total, "the numbers count every row, not the drawn ones"
    # a cell is the lag of the group on the topic's partitions, summed
    group, topic = heatmap.y[0], heatmap.x[0]
    cell = heatmap.z[0][0]
    expected = large.query(f"""select sum(lag_messages) as n from consumer_lag t
                               where group_id = '{group}' and topic = '{topic}' and {NOT_LEFT_BEHIND}""",
                           "consumer_lag", "expirable_offsets").to_pylist()[0]["n"]
    assert cell == expected


def test_the_retention_figure_draws_the_partitions_due_soonest_and_the_biggest_losses(large):
    figure = retention_figure(large)
    (forecast,) = [trace for trace in figure.data if trace.name == "forecast"]
    hours = sorted(row["h"] for row in large.query(
        f"select hours_left as h from retention_forecast t where hours_left is not null and {NOT_LEFT_BEHIND}",
        "retention_forecast", "expirable_offsets")
        .to_pylist())
    assert list(forecast.x) == pytest.approx(hours[:MAX_FORECAST_BARS])
    assert f"the {MAX_FORECAST_BARS} of {len(hours):,} due soonest" in figure.layout.yaxis2.title.text
    losses = [trace for trace in figure.data if trace.name != "forecast"]
    assert len(losses) <= MAX_LOSS_SERIES + 1
    assert sum(sum(trace.y) for trace in losses) == key_numbers(figure)["messages_lost"] \
        == one(large, f"select sum(count_lost) as n from unconsumed_messages t where {NOT_LEFT_BEHIND}",
               "unconsumed_messages", "expirable_offsets")


def test_the_report_stays_small_and_every_table_says_how_many_more(large, tmp_path):
    page = write_report(large, tmp_path / "report.html").read_text()
    # plotly.js itself is about 4.6 MB of the file, inlined so that the report works offline
    assert len(page.encode()) < 8_000_000
    tables = re.findall(r'<table id="([^"]+)">(.*?)</table>(<p>and ([\d,]+) more</p>)?', page, re.S)
    assert len(tables) >= 4
    for _, body, _, more in tables:
        rows = body.count("<tr>") - 1  # the header's row
        assert rows <= MAX_TABLE_ROWS and (rows < MAX_TABLE_ROWS or more), "a full table says how many it leaves out"


def test_every_surface_gives_one_answer_at_scale(large):
    # the demo's one-answer checks (test_one_answer.py), on a thousand groups: the views, the
    # metrics, the report's figures, the alerts and the Dagster UI count lag and losses alike
    metrics = samples(exposition(large, openmetrics=False))
    lag = sums_by_group(metrics, "offsets_platform_consumer_lag_messages")
    viewed = {row["group_id"]: row["lag"] for row in list_groups(large) if row["lag"] is not None}
    assert sum(1 for messages in viewed.values() if messages) >= 100, "the large lake has many lagging groups"
    assert viewed == {group: lag[group] for group in viewed}
    assert {group for group, messages in lag.items() if messages} == {g for g, m in viewed.items() if m}
    assert key_numbers(lag_heatmap_figure(large))["total_lag_messages"] == sum(viewed.values())

    losses = lost(large)
    assert len({row["group_id"] for row in losses}) >= 10, "the large lake's groups lose messages to retention"
    retention = key_numbers(retention_figure(large))
    assert retention["messages_lost"] == sum(row["messages_lost"] for row in losses)
    assert retention["groups_losing"] == len({row["group_id"] for row in losses})
    non_consumed = sums_by_group(metrics, "offsets_platform_non_consumed_total")
    for row in losses:  # the counter also counts what a group abandoned (docs/metrics.md)
        assert non_consumed[row["group_id"]] >= row["messages_lost"]
    # an alert per group and topic whose loss the latest snapshot saw, as lost() counts it
    latest = one(large, "select max(measured_at) as n from consumer_lag", "consumer_lag")
    newly_lost = {(row["group_id"], row["topic"]) for row in losses if row["last_loss_at"] == latest}
    assert newly_lost and {(alert.group_id, alert.topic) for alert in messages_lost(large)} == newly_lost
    # and the Dagster UI's key numbers of the same tables
    lag_numbers = dagster_key_numbers(large, "consumer_lag")
    assert lag_numbers["lag_messages"] == sum(viewed.values())
    assert lag_numbers["groups_lagging"] == sum(1 for messages in viewed.values() if messages)
    loss_numbers = dagster_key_numbers(large, "unconsumed_messages")
    assert loss_numbers["messages_lost_to_retention"] == retention["messages_lost"]
    assert loss_numbers["groups_that_lost_messages"] == retention["groups_losing"]


def test_the_large_report_renders_in_a_browser(large, tmp_path):
    # as a person opens it: every figure drawn by plotly.js in headless Chromium (the screenshot
    # is kept in test-artifacts/ui to look at)
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run .ci/install-debian-packages (`make test` runs it before pytest)")
    report = write_report(large, tmp_path / "report.html")
    page = Browser(chromium, tmp_path).render(report.as_uri(), "cluster-report-1000-groups", height=6000)
    for div_id in FIGURES:
        tag = re.search(rf'<div[^>]*\bid="{div_id}"[^>]*>', page.dom)
        assert tag and "js-plotly-plot" in tag.group(0), f"plotly.js did not draw {div_id}"
