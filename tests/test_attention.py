"""The shared numbers keep lag, loss, risk and abandoned offsets apart (hand-written model rows)."""

from __future__ import annotations

from datetime import timedelta

from offsets_platform.views import attention
from offsets_platform.views.from_lake import list_groups
from tests.test_summary import at, full_rows


def write(lake, name: str, rows: list[dict]) -> None:
    lake.append(name, full_rows(lake, name, rows))


def test_abandoned_offsets_are_neither_lag_nor_loss_nor_risk(lake):
    """`g` reads `kept` and left `left` behind (abandoned): each has 10 unread messages, 5 lost."""
    keys = [{"group_id": "g", "topic": topic, "partition_id": 0} for topic in ("kept", "left")]
    write(lake, "expirable_offsets", [{**key, "is_abandoned": key["topic"] == "left", "rule": "unsubscribed_topic",
                                       "expires_at": at(30)} for key in keys])
    write(lake, "consumer_lag", [{**key, "lag_messages": 10, "lag_ms": 1000, "unread_in_log": 10} for key in keys])
    write(lake, "unconsumed_messages", [{**key, "count_lost": 5, "count_lost_at_least": 5, "observed_at": at(1)}
                                        for key in keys])
    write(lake, "retention_forecast", [{**key, "unread_in_log": 10, "hours_left": 1.0,
                                        "deletion_expected_at": at(1) + timedelta(hours=1)} for key in keys])

    assert attention.lag_by_group(lake) == [{"group_id": "g", "lag_messages": 10, "lag_ms": 1000, "unread_in_log": 10}]
    (loss,) = attention.retention_losses(lake)
    assert (loss["topic"], loss["messages_lost"], loss["messages_at_risk"]) == ("kept", 5, 10)
    assert attention.abandoned_offsets(lake) == [{"group_id": "g", "topic": "left", "partitions": 1, "lag_messages": 10,
                                                  "first_expires_at": at(30)}]


def test_a_loss_seen_while_the_group_had_left_the_topic_stays_out_once_the_offset_is_gone(lake):
    """`g` had left `left` when retention deleted 5 messages there (unconsumed_messages marks it),
    and a cleanup has deleted the offset since: expirable_offsets no longer has it. `kept`'s loss
    is a real one."""
    write(lake, "expirable_offsets", [{"group_id": "g", "topic": "kept", "partition_id": 0, "is_abandoned": False}])
    write(lake, "unconsumed_messages", [{"group_id": "g", "topic": topic, "partition_id": 0, "count_lost": lost,
                                         "observed_at": at(1), "is_abandoned": topic == "left"}
                                        for topic, lost in (("kept", 3), ("left", 5))])
    assert [(row["topic"], row["messages_lost"]) for row in attention.retention_losses(lake)] == [("kept", 3)]


def test_groups_without_lag_are_listed_only_when_asked(lake):
    write(lake, "consumer_lag", [{"group_id": g, "topic": "t", "partition_id": 0, "lag_messages": lag}
                                 for g, lag in (("behind", 3), ("caught-up", 0))])
    write(lake, "expirable_offsets", [{"group_id": g, "topic": "t", "partition_id": 0, "is_abandoned": False}
                                      for g in ("behind", "caught-up")])
    assert [row["group_id"] for row in attention.lag_by_group(lake)] == ["behind"]
    assert [row["group_id"] for row in attention.lag_by_group(lake, lagging_only=False)] == ["behind", "caught-up"]


def test_offset_delete_candidates_are_summed_per_group_and_topic():
    rows = [{"group_id": "g", "topic": "old", "partition_id": p, "lag_messages": lag, "expires_at": expires_at}
            for p, lag, expires_at in ((0, 3, at(20)), (1, None, at(10)), (2, 4, None))]
    rows.append({"group_id": "h", "topic": "old", "partition_id": 0, "lag_messages": None, "expires_at": None})
    assert attention.offset_deletes_by_topic(rows) == [
        {"group_id": "g", "topic": "old", "partitions": 3, "lag_messages": 7, "first_expires_at": at(10)},
        {"group_id": "h", "topic": "old", "partitions": 1, "lag_messages": None, "first_expires_at": None}]


def test_a_dead_group_is_shown_dead_with_no_kind(lake):
    """A Dead group's tombstone names no protocol: the model calls it standalone, a person sees no kind."""
    write(lake, "group_state", [{"group_id": "gone", "state": "Dead", "classification": "standalone"},
                                {"group_id": "loner", "state": "Empty", "classification": "standalone"}])
    assert attention.groups_by_state(lake) == [{"state": "Dead", "classification": None, "groups": 1},
                                               {"state": "Empty", "classification": "standalone", "groups": 1}]
    assert [(g["group_id"], g["kind"]) for g in list_groups(lake)] == [("gone", None), ("loner", "standalone")]
