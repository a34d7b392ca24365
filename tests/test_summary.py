"""The snapshot summary reads every table at the same, latest complete snapshot."""

from datetime import datetime, timezone

import pyarrow as pa

from offsets_platform.summary import groups_by_state, snapshot_summary


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
            lake.append(name, pa.Table.from_pylist(table_rows))


def test_lag_and_retention_loss_come_from_the_latest_snapshot_only(lake):
    snapshot(lake, "s1", 1, [("slow", "Stable")], [("slow", 0, 5)], [(0, 0, 10)])
    snapshot(lake, "s2", 2, [("slow", "Empty")], [("slow", 0, 6)], [(0, 8, 20)])
    lines = snapshot_summary(lake)
    assert lines[0] == "live groups by state (latest snapshot): Empty 1"
    # s2: lag 20 - 6 = 14, and messages 6..7 were deleted before the group read them.
    assert lines[1] == "  slow: lag 14 messages, 2 messages deleted by retention before it consumed them"
    assert groups_by_state(lake, "s1") == [{"state": "Stable", "groups": 1}]


def test_a_snapshot_without_committed_offsets_is_not_mixed_with_an_older_one(lake):
    snapshot(lake, "s1", 1, [("slow", "Stable")], [("slow", 0, 5)], [(0, 0, 10)])
    snapshot(lake, "s2", 2, [], [], [(0, 8, 20)])  # the group and its offsets are gone
    assert snapshot_summary(lake) == ["live groups by state (latest snapshot): no groups"]


def test_no_snapshot_yet(lake):
    assert snapshot_summary(lake) == ["no admin-API snapshot yet"]
