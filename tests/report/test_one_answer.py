"""One demo on the real broker, one answer: the quick views, the Prometheus metrics, the alerts and
the report's tables give the same numbers for the same question, all read from the models' tables.
Each test runs on the demo's lake and again once its applied cleanup reached the tables
(`cleaned_demo`; test_one_answer_after_cleanup.py compares the two).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from offsets_platform.views import attention
from offsets_platform.views.alerts import messages_at_risk
from offsets_platform.views.metrics import exposition
from offsets_platform.views.report.figures import lag_heatmap_figure, retention_figure
from offsets_platform.views.from_lake import describe_group, list_groups, lost
from tests.metrics.helpers import samples, sums_by_group

PREFIX = "offsets_platform_"


@pytest.fixture(params=["demo", "after its cleanup"])
def lake(request):
    """The demo's lake, then the same after its cleanup and one more refresh."""
    if request.param == "demo":
        return request.getfixturevalue("demo_run").lake
    return request.getfixturevalue("cleaned_demo").after


def by_group(metrics: dict, name: str) -> dict[str, float]:
    return sums_by_group(metrics, PREFIX + name)


def test_lag_is_one_number_in_the_views_the_metrics_and_the_summary(lake):
    metrics = samples(exposition(lake, openmetrics=False))
    lag = by_group(metrics, "consumer_lag_messages")
    lagging = {row["group_id"]: row["lag_messages"] for row in attention.lag_by_group(lake)}
    assert lagging and {group: lag[group] for group in lagging} == lagging
    for row in list_groups(lake):
        if row["lag"] is not None:
            assert lag[row["group_id"]] == row["lag"], row["group_id"]
    slow = describe_group(lake, "billing-slow")
    assert sum(o["lag"] for o in slow.offsets if o["lag"] is not None) == lag["billing-slow"] > 0


def test_losses_are_one_number_in_the_lost_view_the_metrics_and_the_report(lake):
    metrics = samples(exposition(lake, openmetrics=False))
    non_consumed = by_group(metrics, "non_consumed_total")
    viewed = defaultdict(int)
    for row in lost(lake):
        viewed[row["group_id"]] += row["messages_lost"]
    reported = defaultdict(int)
    for row in attention.retention_losses(lake):
        reported[row["group_id"]] += row["messages_lost"] or 0
    assert viewed["billing-slow"] > 0, "the demo's slow group loses messages to retention"
    for group, messages in viewed.items():
        # the metric also counts offsets a group abandoned (its counter must not fall when a
        # group drops a topic); the view and the report leave those out
        assert non_consumed[group] >= messages == reported[group], group


def test_the_messages_at_risk_alerts_are_the_reports_at_risk_messages_of_groups_not_catching_up(lake):
    within = attention.DEFAULT_WITHIN_HOURS
    alerted = {(a.group_id, a.topic): sum(p["unread_in_log"] for p in a.partitions)
               for a in messages_at_risk(lake, within)}
    reported = {(row["group_id"], row["topic"]): row["messages_at_risk"]
                for row in attention.retention_losses(lake, within) if row["messages_at_risk"]}
    # the report's rule, partition by partition, less the partitions Burrow's rules call OK
    status = {(r["group_id"], r["topic"], r["partition_id"]): r["status"]
              for r in lake.read_arrow("consumer_status").to_pylist()}
    abandoned = {(r["group_id"], r["topic"], r["partition_id"])
                 for r in lake.read_arrow("expirable_offsets").to_pylist() if r["is_abandoned"]}
    due, not_catching_up = defaultdict(int), defaultdict(int)
    for row in lake.read_arrow("retention_forecast").to_pylist():
        partition = (row["group_id"], row["topic"], row["partition_id"])
        if row["hours_left"] is not None and row["hours_left"] <= within and partition not in abandoned:
            due[partition[:2]] += row["unread_in_log"]
            if status.get(partition) != "OK":
                not_catching_up[partition[:2]] += row["unread_in_log"]
    assert dict(due) == reported
    assert alerted == dict(not_catching_up)


def test_the_reports_figures_count_lag_and_losses_as_the_command_line_does(lake):
    # The demo's search group changed its subscription: the offsets it left behind lag and lose
    # messages that are no loss of its own, and every surface leaves them out alike.
    # (after the cleanup deleted those offsets, the losses seen while the group had left the topic)
    abandoned = [r for table in ("expirable_offsets", "unconsumed_messages")
                 for r in lake.read_arrow(table).to_pylist() if r["is_abandoned"]]
    assert abandoned, "the demo leaves offsets behind: without them this test would prove nothing"
    lag = lag_heatmap_figure(lake).layout.meta
    assert lag["total_lag_messages"] == sum(row["lag_messages"] for row in attention.lag_by_group(lake))
    retention = retention_figure(lake).layout.meta
    losses = lost(lake)
    assert retention["messages_lost"] == sum(row["messages_lost"] for row in losses) > 0
    assert retention["groups_losing"] == len({row["group_id"] for row in losses})
