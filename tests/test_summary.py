"""The snapshot summary reads every table at the same, latest complete snapshot, and states
what it holds; lag and retention losses are the models' answers, not worked out here again."""

from datetime import datetime, timedelta, timezone

import pyarrow as pa

from offsets_platform.lake.tables import table_spec
from offsets_platform.views.summary import groups_by_state, headline, models_summary, snapshot_summary


def at(minute: int) -> datetime:
    return datetime(2026, 1, 1, 0, minute, tzinfo=timezone.utc)


def snapshot(lake, snapshot_id, minute, groups, offsets, logs):
    """Append one snapshot the way ingest/snapshots.py does: empty tables are not written,
    broker_configs last."""
    stamp = {"snapshot_id": snapshot_id, "snapshot_at": at(minute)}
    rows = {
        "group_snapshots": [{**stamp, "group": g, "group_type": "classic", "state": s, "protocol_type": "consumer",
                             "protocol": "range",
                             "member_count": 1, "coordinator_id": 1} for g, s in groups],
        "committed_offset_snapshots": [{**stamp, "group": g, "topic": "t", "partition": p, "committed_offset": o,
                                        "leader_epoch": None, "metadata": ""} for g, p, o in offsets],
        "log_offset_snapshots": [{**stamp, "topic": "t", "partition": p, "log_start_offset": start,
                                  "log_end_offset": end} for p, start, end in logs],
        "broker_configs": [{**stamp, "offsets_retention_minutes": 10080, "offsets_retention_source": "fallback"}],
    }
    for name, table_rows in rows.items():
        if table_rows:
            lake.append(name, pa.Table.from_pylist(table_rows, schema=table_spec(name).schema))


def test_the_summary_is_of_the_latest_snapshot_only(lake):
    snapshot(lake, "s1", 1, [("slow", "Stable")], [("slow", 0, 5)], [(0, 0, 10)])
    snapshot(lake, "s2", 2, [("slow", "Empty"), ("new", "Empty")], [("slow", 0, 6), ("new", 0, 1)], [(0, 8, 20)])
    assert snapshot_summary(lake) == [
        "live groups by state (latest snapshot): Empty 2",
        "committed offsets in it: 2 of 2 groups on 1 topics (lag and retention losses: the models)"]
    assert groups_by_state(lake, "s1") == [{"state": "Stable", "groups": 1}]


def test_a_snapshot_without_committed_offsets_is_not_mixed_with_an_older_one(lake):
    snapshot(lake, "s1", 1, [("slow", "Stable")], [("slow", 0, 5)], [(0, 0, 10)])
    snapshot(lake, "s2", 2, [], [], [(0, 8, 20)])  # the group and its offsets are gone
    assert snapshot_summary(lake) == [
        "live groups by state (latest snapshot): no groups",
        "committed offsets in it: 0 of 0 groups on 0 topics (lag and retention losses: the models)"]


def test_no_snapshot_yet(lake):
    assert snapshot_summary(lake) == ["no admin-API snapshot yet"]


def full_rows(lake, name: str, rows: list[dict]) -> pa.Table:
    """Rows of a model's table, the columns a test does not care about filled with zeros."""
    schema = lake.spec(name).schema
    unknown = sorted({column for row in rows for column in row} - set(schema.names))
    assert not unknown, f"{name} has no columns {unknown}"  # from_pylist would drop them unseen
    filler = {field.name: (0 if pa.types.is_integer(field.type) or pa.types.is_floating(field.type) else
                           at(0) if pa.types.is_timestamp(field.type) else
                           False if pa.types.is_boolean(field.type) else "") for field in schema}
    return pa.Table.from_pylist([{**filler, **row} for row in rows], schema=schema)


def test_the_models_summary_counts_what_it_does_not_list(lake):
    lake.append("group_state", full_rows(lake, "group_state", [
        {"group_id": f"g{n}", "state": "Stable", "classification": "consumer"} for n in range(7)]))
    lake.append("consumer_lag", full_rows(lake, "consumer_lag", [
        {"group_id": f"g{n}", "topic": "t", "partition_id": 0, "lag_messages": 10 + n, "lag_ms": 61_000,
         "unread_in_log": 10 + n - (n == 6) * 16} for n in range(7)]))
    lines = models_summary(lake)
    assert lines[0] == "groups by state: Stable consumer 7"
    # g6's unread messages were all deleted by retention: no message is left to say how old it is
    assert lines[1:7] == ["  lag g6: 16 messages, retention deleted all of it before the group read it"] + \
        [f"  lag g{n}: {10 + n} messages, the oldest unread message 1m 1s old" for n in (5, 4, 3, 2)] + \
        ["  and 2 more lagging groups"]


def test_the_headline_says_it_in_sentences(lake):
    assert headline(lake) == ["The models have not run yet."]
    lake.append("group_state", full_rows(lake, "group_state", [
        {"group_id": group, "state": state, "classification": "consumer"}
        for group, state in (("slow", "Stable"), ("gone", "Stable"), ("left", "Stable"))]
        + [{"group_id": "idle", "state": "Empty", "classification": "consumer",
            "state_entered_at": datetime.now(timezone.utc) - timedelta(hours=300)}]))
    for name in ("committed_offsets", "group_subscriptions"):  # read by the cleanup's candidates
        lake.append(name, full_rows(lake, name, []))
    lake.append("consumer_lag", full_rows(lake, "consumer_lag", [
        {"group_id": "slow", "topic": "t", "partition_id": 0, "lag_messages": 300, "lag_ms": 5_400_000,
         "unread_in_log": 100},
        {"group_id": "gone", "topic": "t", "partition_id": 0, "lag_messages": 50, "lag_ms": 0, "unread_in_log": 0},
        {"group_id": "left", "topic": "old", "partition_id": 0, "lag_messages": 70, "lag_ms": 9, "unread_in_log": 70}]))
    lake.append("unconsumed_messages", full_rows(lake, "unconsumed_messages", [
        {"group_id": "slow", "topic": "t", "partition_id": 0, "count_lost": 200, "count_lost_at_least": 150},
        {"group_id": "left", "topic": "old", "partition_id": 0, "count_lost": 9, "count_lost_at_least": 9}]))
    lake.append("retention_forecast", full_rows(lake, "retention_forecast", [
        {"group_id": "slow", "topic": "t", "partition_id": 0, "unread_in_log": 100, "hours_left": 5.0}]))
    evaluated = {"evaluated_at": datetime.now(timezone.utc)}  # "now" of the models' run
    lake.append("expirable_offsets", full_rows(lake, "expirable_offsets", [{**evaluated, **row} for row in [
        {"group_id": "idle", "topic": "t", "partition_id": 0, "rule": "empty_group", "is_expired": True,
         "hours_until_expiry": -2.0},
        {"group_id": "idle", "topic": "t", "partition_id": 1, "rule": "empty_group", "hours_until_expiry": 3.0},
        {"group_id": "slow", "topic": "t", "partition_id": 0, "rule": "not_eligible", "hours_until_expiry": 900.0},
        {"group_id": "left", "topic": "old", "partition_id": 0, "rule": "unsubscribed_topic", "is_abandoned": True,
         "hours_until_expiry": 100.0}]]))
    sentences = headline(lake)
    # left's lag and loss are on a topic it left (abandoned): neither counts
    assert sentences == [
        "4 groups: 3 Stable, 1 Empty.",
        "2 groups lag, 350 messages in all; furthest behind: slow, 300 messages (the oldest unread message 1h 30m "
        "old); gone, 50 messages (retention deleted all of it before the group read it).",
        "Retention deleted messages before 1 group read them: slow lost 150 to 200 messages of t.",
        "Due for deletion by retention within 24 h: 100 unread messages of 1 group.",
        "Due to expire at Kafka's next check: 1 committed offset, and 1 more within 24 h.",
        "Left behind on topics no member subscribes to any more: 1 committed offset of 1 group (not counted as lag "
        "or loss).",
        "A cleanup would delete 0 stale offsets in 0 groups, and 1 group Empty for longer than 168 h."]
