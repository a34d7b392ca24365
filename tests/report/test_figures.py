"""The figures show the tables' data: every number drawn is read back and compared with the
gold and silver tables of the small demo."""

from collections import Counter, defaultdict

import pandas as pd
import pytest

from offsets_platform.views.attention import NOT_ABANDONED
from offsets_platform.views.report import (coordinator_metrics_figure, expiration_calendar_figure, group_states_figure,
                                     key_numbers, lag_heatmap_figure, retention_figure)


def rows(lake, sql, *tables):
    return lake.query(sql, *tables).to_pylist()


# what the figures leave out, as the command line does: offsets their group abandoned
NOT_LEFT_BEHIND = NOT_ABANDONED.format(t="t")


def test_lag_heatmap_cells_are_consumer_lag_lag_messages(demo_lake):
    (heatmap,) = lag_heatmap_figure(demo_lake).data
    drawn = {(group, column): value for group, line in zip(heatmap.y, heatmap.z)
             for column, value in zip(heatmap.x, line) if value is not None}
    expected = {(r["group_id"], f"{r['topic']}-{r['partition_id']}"): r["lag_messages"]
                for r in rows(demo_lake, 'select group_id, topic, partition_id, lag_messages from consumer_lag t '
                              f'where {NOT_LEFT_BEHIND}', "consumer_lag", "expirable_offsets")}
    assert drawn == expected

    slow = {column: value for (group, column), value in drawn.items() if group == "billing-slow"}
    slow_expected = {f"{r['topic']}-{r['partition_id']}": r["lag_messages"] for r in rows(
        demo_lake, """select topic, partition_id, lag_messages from consumer_lag where group_id = 'billing-slow'""",
        "consumer_lag")}
    assert slow == slow_expected and sum(slow.values()) > 0, "the slow group lags"


def test_expiration_calendar_counts_sum_to_the_expirable_offsets_per_rule(demo_lake):
    figure = expiration_calendar_figure(demo_lake)
    drawn = Counter()
    for trace in figure.data:
        drawn[trace.name] += sum(trace.y)
    expected = {r["rule"]: r["n"] for r in rows(
        demo_lake, "select rule, count(*) as n from expirable_offsets where expires_at is not null group by rule",
        "expirable_offsets")}
    assert dict(drawn) == expected
    assert "unsubscribed_topic" in expected, "the changed subscription left offsets that expire"
    assert key_numbers(figure)["offsets_that_expire"] == sum(expected.values())
    # one bar per UTC day: every x is midnight
    days = [pd.Timestamp(day) for trace in figure.data for day in trace.x]
    assert days and all(day == day.normalize() for day in days)


def test_group_states_timeline_has_every_group_and_its_latest_state(demo_lake):
    figure = group_states_figure(demo_lake)
    segments = defaultdict(list)  # group -> [(start, state)]
    for trace in figure.data:
        for group, start in zip(trace.y, trace.base):
            segments[group].append((start, trace.name))
    history = rows(demo_lake, 'select group_id, observed_at, state from group_state_history', "group_state_history")
    assert set(segments) == {r["group_id"] for r in history}
    assert {trace.name for trace in figure.data} == {r["state"] for r in history}
    latest = {}
    for r in sorted(history, key=lambda r: r["observed_at"]):
        latest[r["group_id"]] = r["state"]
    unambiguous = [g for g in latest
                   if Counter(r["observed_at"] for r in history if r["group_id"] == g).most_common(1)[0][1] == 1]
    assert unambiguous
    for group in unambiguous:
        assert max(segments[group])[1] == latest[group], group
    numbers = key_numbers(figure)
    assert numbers["groups"] == len(latest) and numbers["observations"] == len(history)
    assert numbers["state_changes"] == sum(len(s) for s in segments.values()) - len(segments)


def test_retention_figure_shows_every_lost_message_and_the_forecast(demo_lake):
    figure = retention_figure(demo_lake)
    lost_traces = [trace for trace in figure.data if trace.name != "forecast"]
    lost = {r["key"]: r["lost"] for r in rows(
        demo_lake, f"""select group_id || ' · ' || topic as key, sum(count_lost) as lost from unconsumed_messages t
                       where {NOT_LEFT_BEHIND} group by group_id, topic""", "unconsumed_messages", "expirable_offsets")}
    assert {trace.name: sum(trace.y) for trace in lost_traces} == lost
    assert any(name.startswith("billing-slow") for name in lost), "retention deleted what the slow group never read"

    (forecast,) = [trace for trace in figure.data if trace.name == "forecast"]
    expected = {f"{r['group_id']} · {r['topic']}-{r['partition_id']}": pytest.approx(r["hours_left"]) for r in rows(
        demo_lake, f"select * from retention_forecast t where hours_left is not null and {NOT_LEFT_BEHIND}",
        "retention_forecast", "expirable_offsets")}
    assert dict(zip(forecast.y, forecast.x)) == expected
    numbers = key_numbers(figure)
    assert numbers["messages_lost"] == sum(lost.values()) and numbers["partitions_at_risk"] == len(expected)


def test_coordinator_metrics_are_the_table_per_bucket(demo_lake):
    figure = coordinator_metrics_figure(demo_lake)
    table = rows(demo_lake, "select * from coordinator_metrics order by bucket_start_at", "coordinator_metrics")
    assert table
    for trace in figure.data:
        counter = trace.name.replace(" ", "_")  # the bar's name: its column without count_
        assert list(trace.y) == [r[f"count_{counter}"] for r in table], counter
    assert key_numbers(figure)["offset_commits"] == sum(r["count_offset_commits"] for r in table) > 0
