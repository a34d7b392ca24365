"""The quick views' reading of the models' tables, on small hand-written rows (no Spark, no broker).

The rules behind the rows are the models' (tested with them); these tests pin what the views
select, join, group and filter, and how the command line prints it.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.cli import main
from offsets_platform.cli.output import table_lines
from offsets_platform.cli.views import hours, since
from offsets_platform.views.from_lake import describe_group, expiring, list_groups, lost
from tests.test_summary import at, full_rows


def write(lake, name: str, rows: list[dict]) -> None:
    lake.append(name, full_rows(lake, name, rows))


@pytest.fixture
def filled(lake):
    """Two groups: `busy` (Stable, lagging on t-0, t-1, Burrow's WARN) and `idle` (Empty, offsets due
    to expire, not evaluated)."""
    write(lake, "group_state", [{"group_id": "busy", "state": "Stable", "classification": "consumer", "count_members": 1},
                                {"group_id": "idle", "state": "Empty", "classification": "standalone"}])
    write(lake, "committed_offsets", [{"group_id": "busy", "topic": "t", "partition_id": p, "committed_offset": 5}
                                      for p in (0, 1)] +
          [{"group_id": "idle", "topic": "t", "partition_id": p, "committed_offset": 2} for p in (0, 1, 2)])
    write(lake, "consumer_lag", [{"group_id": "busy", "topic": "t", "partition_id": p, "committed_offset": 5,
                                  "log_end_offset": 5 + lag, "lag_messages": lag} for p, lag in ((0, 3), (1, 4))])
    write(lake, "expirable_offsets",
          [{"group_id": "busy", "topic": "t", "partition_id": p, "rule": "not_eligible",
            "not_eligible_reason": "topic subscribed by a member", "hours_until_expiry": None, "expires_at": None}
           for p in (0, 1)] +
          [{"group_id": "idle", "topic": "t", "partition_id": p, "rule": "standalone", "group_state": "Empty",
            "hours_until_expiry": h, "is_expired": h <= 0, "expires_at": at(0) + timedelta(hours=h)}
           for p, h in ((0, -1.0), (1, 2.0), (2, 30.0))])
    write(lake, "consumer_status", [{"group_id": "busy", "topic": "t", "partition_id": p, "status": status,
                                     "group_status": "WARN"} for p, status in ((0, "OK"), (1, "WARN"))])
    write(lake, "group_members", [{"group_id": "busy", "member_id": "m-1", "client_id": "c", "client_host": "/h",
                                   "subscribed_topics": ["t"], "subscribed_topic_regex": None,
                                   "group_instance_id": None}])
    return lake


def test_groups_lists_state_status_kind_and_the_sums_of_offsets_and_lag(filled):
    assert [(g["group_id"], g["state"], g["status"], g["kind"], g["topics"], g["partitions"], g["lag"])
            for g in list_groups(filled)] \
        == [("busy", "Stable", "WARN", "consumer", 1, 2, 7), ("idle", "Empty", None, "standalone", 1, 3, None)]
    assert [g["group_id"] for g in list_groups(filled, frozenset({"empty"}))] == ["idle"]  # any case, as Kafka's --state


def test_describe_joins_lag_and_expiry_per_partition(filled):
    view = describe_group(filled, "busy")
    assert (view.state, view.kind, view.status) == ("Stable", "consumer", "WARN")
    assert [o["status"] for o in view.offsets] == ["OK", "WARN"]
    assert [(o["partition_id"], o["current_offset"], o["log_end_offset"], o["lag"], o["expiry"]) for o in view.offsets] \
        == [(0, 5, 8, 3, "never while topic subscribed by a member"), (1, 5, 9, 4, "never while topic subscribed by a member")]
    assert view.members == [{"consumer_id": "m-1", "group_instance_id": None, "host": "/h", "client_id": "c",
                             "partitions": None, "subscription": "t"}]
    idle = describe_group(filled, "idle")
    assert [o["expiry"] for o in idle.offsets] == ["due now (standalone)", "in 2.0 h (standalone)",
                                                  "in 30.0 h (standalone)"]
    assert [o["lag"] for o in idle.offsets] == [None] * 3  # no log offsets known: not zero
    assert idle.status is None and [o["status"] for o in idle.offsets] == [None] * 3
    assert describe_group(filled, "nobody") is None


def test_expiring_groups_partitions_and_counts_the_ones_already_due(filled):
    (row,) = expiring(filled, within_hours=24)
    assert (row["group_id"], row["topic"], row["rule"], row["partitions"], row["due_now"]) == ("idle", "t", "standalone", 2, 1)
    assert row["first_expires_at"] == at(0) - timedelta(hours=1)
    assert expiring(filled, within_hours=48)[0]["partitions"] == 3


def test_lost_counts_only_losses_observed_since(lake):
    rows = [{"group_id": "g", "topic": "t", "partition_id": p, "count_lost": 10, "count_lost_at_least": 8,
             "observed_at": at(minute)} for p, minute in ((0, 1), (1, 30))]
    write(lake, "unconsumed_messages", rows)
    (ever,) = lost(lake)
    assert (ever["messages_lost"], ever["messages_lost_at_least"], ever["partitions_lost"]) == (20, 16, 2)
    (recent,) = lost(lake, since=at(10))
    assert (recent["messages_lost"], recent["partitions_lost"]) == (10, 1)
    assert lost(lake, since=at(31)) == []


def test_durations_and_times_on_the_command_line():
    assert [hours(text) for text in ("24h", "90m", "7d", "36", "30s")] == [24, 1.5, 168, 36, 30 / 3600]
    with pytest.raises(argparse.ArgumentTypeError):
        hours("tomorrow")
    assert since("2026-11-01") == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert abs(since("2h") - (datetime.now(timezone.utc) - timedelta(hours=2))) < timedelta(seconds=5)


def test_tables_are_aligned_with_a_dash_for_what_is_not_known():
    assert table_lines([("GROUP", "g"), ("LAG", "lag")], [{"g": "a-long-name", "lag": 3}, {"g": "b", "lag": None}]) \
        == ["GROUP       LAG", "a-long-name 3", "b           -"]


def test_the_commands_print_tables_or_json(filled, capsys):
    home = str(filled.root.parent)
    assert main(["groups", "--home", home]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ["GROUP", "STATE", "STATUS", "KIND", "MEMBERS", "TOPICS", "PARTITIONS", "LAG"]
    assert out.splitlines()[1].split()[:3] == ["busy", "Stable", "WARN"]
    assert "the models have not run yet" in err  # no model_runs rows in this hand-made lake
    assert main(["expiring", "--within", "1d", "--home", home, "--output", "json"]) == 0
    assert [row["partitions"] for row in json.loads(capsys.readouterr().out)] == [2]
    assert main(["describe", "busy", "--home", home, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["offsets"][1]["lag"] == 4
    assert main(["describe", "busy", "--home", home]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "GROUP busy: Stable, consumer, 1 members, status WARN"
    assert lines[2].split()[5] == "STATUS" and lines[4].split()[5] == "WARN"


def test_a_view_of_a_lake_that_is_not_there_creates_nothing(tmp_path, capsys):
    assert main(["groups", "--home", str(tmp_path / "none")]) == 1
    assert "there is no lake in" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_a_table_an_older_version_wrote_is_named_with_what_to_do(lake, capsys):
    from deltalake import write_deltalake

    # retention_forecast as written before it had unread_in_log
    older = full_rows(lake, "retention_forecast", [{"group_id": "g", "topic": "t", "partition_id": 0}]).drop(["unread_in_log"])
    write_deltalake(str(lake.path("retention_forecast")), older)
    assert main(["lost", "--home", str(lake.root.parent)]) == 1
    error = capsys.readouterr().err
    assert "the table retention_forecast lacks the columns unread_in_log" in error
    assert "offsets-platform models" in error


def test_a_table_written_before_its_columns_were_renamed_is_named_with_what_to_do(lake, capsys):
    from deltalake import write_deltalake

    # retention_forecast as written when its columns still had Kafka's names, group and partition
    current = full_rows(lake, "retention_forecast", [{"group_id": "g", "topic": "t", "partition_id": 0}])
    kafka_names = {"group_id": "group", "partition_id": "partition"}
    write_deltalake(str(lake.path("retention_forecast")),
                    current.rename_columns([kafka_names.get(name, name) for name in current.column_names]))
    assert main(["lost", "--home", str(lake.root.parent)]) == 1
    error = capsys.readouterr().err
    assert "the table retention_forecast lacks the columns group_id, partition_id" in error
    assert "offsets-platform models" in error


def test_a_removed_offset_names_the_plan_or_command_that_deleted_it(filled, capsys):
    def tombstone(partition: int, seconds: int) -> dict:
        return {"group_id": "busy", "topic": "gone", "partition_id": partition, "is_removed": True,
                "appended_at": at(0) + timedelta(seconds=seconds), "source_offset": partition}

    def audited(partition: int | None, outcome: str, plan_id: str | None, action: str = "OffsetDelete",
                group: str = "busy") -> dict:
        return {"audit_id": f"{group}-{partition}-{outcome}", "plan_id": plan_id, "origin": "plan" if plan_id else "cli",
                "action": action, "group": group, "topic": None if partition is None else "gone",
                "partition": partition, "outcome": outcome, "requested_by": "ann" if plan_id else "bob", "at": at(0)}

    # gone-0 by a plan; gone-1 by the delete-offsets command; gone-2's OffsetDelete failed; gone-3's
    # tombstone came 20 minutes after an audited deletion (an expiration later, not the deletion);
    # gone-4's only match is a DeleteGroups of another group; busy's t-0 is not removed
    write(filled, "log_offset_state", [tombstone(0, 30), tombstone(1, -30), tombstone(2, 30), tombstone(3, 1200),
                                       tombstone(4, 30),
                                       {"group_id": "busy", "topic": "t", "partition_id": 0, "is_removed": False}])
    write(filled, "cleanup_audit", [audited(0, "sending", "p1"), audited(0, "deleted", "p1"),
                                    audited(1, "deleted", None), audited(2, "failed", "p1"), audited(3, "deleted", "p1"),
                                    audited(None, "deleted", None, "DeleteGroups", group="idle")])
    view = describe_group(filled, "busy")
    assert [(row["topic"], row["partition_id"], row["removed_by"]) for row in view.removed] == [
        ("gone", 0, "plan p1 (OffsetDelete, applied by ann)"),
        ("gone", 1, "delete-offsets by bob"),
        *(("gone", p, "not this tool: Kafka's expiration, a deleted topic, or another client") for p in (2, 3, 4))]
    assert view.removed[0]["removed_at"] == at(0) + timedelta(seconds=30)
    assert describe_group(filled, "idle").removed == []
    assert main(["describe", "busy", "--home", str(filled.root.parent)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("REMOVED ")))
    assert lines[header].split() == ["REMOVED", "PARTITION", "REMOVED-AT", "BY"]
    assert lines[header + 1].split()[:2] == ["gone", "0"] and lines[header + 1].endswith("applied by ann)")
