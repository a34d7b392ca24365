"""KIP-490 loss, lag and forecasts from admin-API snapshots only, on a hand-built input.

Three snapshots ten minutes apart of topic `events` (cleanup.policy=delete, retention.ms 1 h)
whose log start moves 0 -> 60 -> 150 while the log end grows 100 -> 200 -> 300:
- `slow` stays at offset 40 and loses [40, 60) then [60, 150);
- `fast` keeps up and loses nothing; `mid` is at 120, then at 150 when the log start reaches 150;
- `clicks` is watched by a configured group `audit` that has no committed offset: it loses
  everything deleted; `state` is compacted and out of scope;
- `stopped` is Stable, then Empty from the second snapshot on;
- `resetter` is at 40 on `resets` when its log start moves 0 -> 60, then resets past the deleted
  range and commits 120 before the second snapshot (the log shows each commit);
- `one-partition` holds an offset on partition 0 of `pair` only, whose partition 1 loses 50;
- `moved` is Stable throughout, its member subscribed to `events` only: its offset on `resets`,
  which it stopped reading at 40, is abandoned, so its lag and losses there are no backlog;
  `reader`, Stable throughout with its member subscribed to `resets`, is stuck at 40 there too.

One partition each, whose log start moves 0 -> 60 between the first two snapshots, where those
snapshots record when they read each group's offsets and each log start:
- `early` commits 10 after the first snapshot's stamp, then 80 before its OffsetFetch sees 80;
- `late` is at 40 when the second snapshot's OffsetFetch reads it, then commits 90 before that
  snapshot's ListOffsets sees the log start moved;
- `newcomer` commits its first offset, 10, between the snapshots;
- `tidy` is at 10 on a topic with cleanup.policy 'compact, delete', `bare` on one with an empty
  cleanup.policy (DeleteRecords still moves its log start);
- `compacted`, whose records are in another partition of __consumer_offsets, commits 90 and then
  40 again; the log cleaner removed the 90 before ingest read it.
`mirror-reader` reads `mirrored`, a CreateTime topic whose records carry timestamps two days
older than their writes (a mirror's target).

Boundaries of the snapshot history, one partition each, log start 0 throughout but where said:
- `exact` is at 200 on `ties`, whose log end is 100 -> 200 -> 400: the log end reached 200 at
  S2 but passed it only at S3;
- `crosser` is at 120 on `truncated`, whose log end is 250 -> 150 -> 300 (truncated, then grew):
  the log end first passed 120 at S1, though S2's 150 is the lowest above it;
- `flipper` is at 40, then 50, then 40 again on `flips`;
- `behind` is at 50 on `retained`, whose log end is 100 -> 200 -> 300 and whose log start moved
  from 0 to 250 at S3: S1 saw only messages retention has deleted since;
- `regrower` is at 120 on `regrown`, whose log end is 300 -> 100 -> 200 (truncated, then grew)
  and whose log start moved from 0 to 150 at S3: its log end passed 150 first at S1.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.models.bronze_builder import BronzeBuilder, at, ms
from tests.models.conftest import rows_by, run_models


S1, S2, S3 = at(days=1), at(days=1, minutes=10), at(days=1, minutes=20)
RETENTION_MS = 3_600_000
MIRROR_RETENTION_MS = 3 * 86_400_000
MIRROR_LAG = timedelta(days=2)  # how much older than their writes the mirrored records' timestamps are
# One partition each, with its cleanup.policy; the log start moves 0 -> 60 between S1 and S2.
READ_TIME_TOPICS = {"early-commits": "delete", "late-commits": "delete", "newcomers": "delete",
              "both-policies": "compact, delete", "no-policy": "", "compacted-commits": "delete"}


def _read_times(when, start: int, offsets: dict[tuple[str, str], int], fetched: dict[str, timedelta],
                listed: timedelta) -> dict[str, list[dict]]:
    """Rows of READ_TIME_TOPICS for one snapshot: `fetched` says when after the snapshot's stamp
    each group's OffsetFetch was sent, `listed` when the ListOffsets answers came."""
    topics = [{"topic": t, "retention_ms": RETENTION_MS, "retention_bytes": -1, "cleanup_policy": policy}
              for t, policy in READ_TIME_TOPICS.items()]
    logs = [{"topic": t, "partition": 0, "log_start_offset": start, "log_end_offset": 100,
             "listed_at": when + listed} for t in READ_TIME_TOPICS]
    rows = [{"group": g, "topic": t, "partition": 0, "committed_offset": o,
             "fetched_at": when + fetched[g]} for (g, t), o in offsets.items()]
    return {"topics": topics, "logs": logs, "offsets": rows}


def _mirrored(when, end: int, offset: int | None) -> dict[str, list[dict]]:
    """`mirrored` when its log end is `end`: its newest record, written just before, is stamped
    MIRROR_LAG earlier (the snapshot's max timestamp)."""
    return {"topics": [{"topic": "mirrored", "retention_ms": MIRROR_RETENTION_MS, "retention_bytes": -1,
                        "cleanup_policy": "delete", "message_timestamp_type": "CreateTime"}],
            "logs": [{"topic": "mirrored", "partition": 0, "log_start_offset": 0, "log_end_offset": end,
                      "max_timestamp_ms": ms(when - MIRROR_LAG)}],
            "offsets": [] if offset is None else [{"group": "mirror-reader", "topic": "mirrored", "partition": 0,
                                                   "committed_offset": offset}]}


def _boundaries(index: int) -> dict[str, list[dict]]:
    """Rows of the snapshot history's boundary cases (module doc) for snapshot `index` (0, 1, 2)."""
    ends = {"ties": (100, 200, 400), "truncated": (250, 150, 300), "flips": (100, 100, 100),
            "retained": (100, 200, 300), "regrown": (300, 100, 200)}
    starts = {"retained": (0, 0, 250), "regrown": (0, 0, 150)}
    offsets = {("exact", "ties"): (100, 200, 200), ("crosser", "truncated"): (120, 120, 120),
               ("flipper", "flips"): (40, 50, 40), ("behind", "retained"): (50, 50, 50),
               ("regrower", "regrown"): (120, 120, 120)}
    return {"topics": [{"topic": t, "retention_ms": RETENTION_MS, "retention_bytes": -1, "cleanup_policy": "delete"}
                       for t in ends],
            # records stamped as they were written: the largest timestamp is the snapshot's time
            "logs": [{"topic": t, "partition": 0, "log_start_offset": starts.get(t, (0, 0, 0))[index],
                      "log_end_offset": end[index],
                      "max_timestamp_ms": ms((S1, S2, S3)[index])} for t, end in ends.items()],
            "offsets": [{"group": g, "topic": t, "partition": 0, "committed_offset": o[index]}
                        for (g, t), o in offsets.items()]}


def _snapshot(b: BronzeBuilder, when, start: int, end: int, offsets: dict, stopped_state: str,
              other_starts: dict, *extras: dict[str, list[dict]]) -> None:
    delete = {"retention_ms": RETENTION_MS, "retention_bytes": -1, "cleanup_policy": "delete"}
    topics = [{"topic": t, **delete} for t in ("events", "clicks", "resets", "pair")]
    topics.append({"topic": "state", "retention_ms": -1, "retention_bytes": -1, "cleanup_policy": "compact"})
    logs = [{"topic": t, "partition": 0, "log_start_offset": start, "log_end_offset": end}
            for t in ("events", "clicks", "state")]
    logs += [{"topic": t, "partition": p, "log_start_offset": log_start, "log_end_offset": end}
             for (t, p), log_start in other_starts.items()]
    moved, reader = ({"group": group, "state": "Stable", "protocol_type": "consumer", "protocol": "", "member_count": 1}
                     for group in ("moved", "reader"))
    b.snapshot(when, topics=topics + [row for extra in extras for row in extra["topics"]],
               logs=logs + [row for extra in extras for row in extra["logs"]],
               groups=[{"group": "stopped", "state": stopped_state, "protocol_type": "consumer", "protocol": "",
                        "member_count": 1 if stopped_state == "Stable" else 0}, moved, reader],
               members=([{"group": "stopped", "member_id": "m1", "subscribed_topics": ["events"]}]
                        if stopped_state == "Stable" else []) +
               [{"group": "moved", "member_id": "m2", "subscribed_topics": ["events"]},
                {"group": "reader", "member_id": "m3", "subscribed_topics": ["resets"]}],
               offsets=[{"group": g, "topic": t, "partition": 0, "committed_offset": o}
                        for (g, t), o in offsets.items()] + [row for extra in extras for row in extra["offsets"]])


@pytest.fixture(scope="module")
def lake(spark, module_lake):
    b = BronzeBuilder()
    seconds = [timedelta(seconds=n) for n in range(61)]
    others = {("one-partition", "pair"): 10, ("moved", "resets"): 40, ("reader", "resets"): 40}
    read_times = {("early", "early-commits"): 80, ("late", "late-commits"): 40, ("tidy", "both-policies"): 10,
                  ("bare", "no-policy"): 10, ("compacted", "compacted-commits"): 40}
    fetched = dict.fromkeys(["early", "late", "newcomer", "tidy", "bare", "compacted"], seconds[30])
    b.commit("compacted", "compacted-commits", 0, 40, S1 - timedelta(minutes=1), source_partition=1)
    _snapshot(b, S1, 0, 100, {("slow", "events"): 40, ("fast", "events"): 100, ("mid", "events"): 90, ("moved", "events"): 100,
                              ("stopped", "events"): 50, ("slow", "state"): 0, ("resetter", "resets"): 40,
                              **others}, "Stable", {("resets", 0): 0, ("pair", 0): 0, ("pair", 1): 0},
              _read_times(S1, 0, read_times, fetched, seconds[40]), _mirrored(S1, 100, None), _boundaries(0))
    b.commit("early", "early-commits", 0, 10, S1 + seconds[10])  # after S1's stamp, before its OffsetFetch
    b.commit("early", "early-commits", 0, 80, S1 + seconds[20])
    b.commit("resetter", "resets", 0, 45, S1 + timedelta(minutes=2))
    b.commit("newcomer", "newcomers", 0, 10, S1 + timedelta(minutes=3))
    b.compacted_away(source_partition=1)  # compacted's commit of 90 at S1 + 4 minutes
    b.commit("resetter", "resets", 0, 120, S1 + timedelta(minutes=5))
    b.commit("compacted", "compacted-commits", 0, 40, S1 + timedelta(minutes=6), source_partition=1)
    b.commit("resetter", "resets", 0, 130, S2)
    read_times[("newcomer", "newcomers")] = 10
    _snapshot(b, S2, 60, 200, {("slow", "events"): 40, ("fast", "events"): 200, ("mid", "events"): 120, ("moved", "events"): 200,
                               ("stopped", "events"): 50, ("slow", "state"): 0, ("resetter", "resets"): 130,
                               **others}, "Empty", {("resets", 0): 60, ("pair", 0): 0, ("pair", 1): 50},
              _read_times(S2, 60, read_times, {**fetched, "late": seconds[10]}, seconds[30]),
              _mirrored(S2, 200, 150), _boundaries(1))
    b.commit("late", "late-commits", 0, 90, S2 + seconds[20])  # after S2's OffsetFetch, before its ListOffsets
    b.commit("resetter", "resets", 0, 150, S2 + timedelta(minutes=1))  # after the interval
    b.commit("compacted", "compacted-commits", 0, 40, S2 + timedelta(minutes=2), source_partition=1)
    read_times[("late", "late-commits")] = 90
    _snapshot(b, S3, 150, 300, {("slow", "events"): 40, ("fast", "events"): 300, ("mid", "events"): 150, ("moved", "events"): 300,
                                ("stopped", "events"): 50, ("slow", "state"): 0, ("resetter", "resets"): 150,
                                **others}, "Empty", {("resets", 0): 60, ("pair", 0): 0, ("pair", 1): 50},
              _read_times(S3, 60, read_times, fetched, seconds[40]), _mirrored(S3, 300, 150), _boundaries(2))
    b.ingest_checkpoints(S3 + seconds[50])
    b.write(module_lake)
    run_models(spark, module_lake, S3 + timedelta(minutes=1), watched_groups={"clicks": ["audit"]})
    return module_lake


def test_slow_group_loses_what_retention_deleted_before_it_was_consumed(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    first, second = facts[("slow", "events", S2)], facts[("slow", "events", S3)]
    # [max(previous log start, committed), new log start)
    assert (first["lost_from_offset"], first["lost_to_offset"], first["count_lost"]) == (40, 60, 20)
    assert (second["lost_from_offset"], second["lost_to_offset"], second["count_lost"]) == (60, 150, 90)
    assert second["retention_ms"] == RETENTION_MS and second["watched_by"] == "default"


def test_a_loss_is_counted_even_when_the_group_committed_past_it_before_the_next_snapshot(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    reset = facts[("resetter", "resets", S2)]
    assert (reset["committed_offset_at_start"], reset["committed_offset"], reset["count_log_records_between"]) == (40, 130, 3)
    # at most [40, 60) if the log start moved while 40 was in force; at least nothing, had it
    # moved after the commit of 120
    assert (reset["lost_from_offset"], reset["lost_to_offset"], reset["count_lost"]) == (40, 60, 20)
    assert reset["count_lost_at_least"] == 0
    slow = facts[("slow", "events", S2)]  # held 40 throughout: the bounds agree
    assert slow["count_lost_at_least"] == slow["count_lost"] == 20


def test_a_group_watches_only_the_partitions_where_it_holds_an_offset(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    assert not [k for k in facts if k[1] == "pair"]


def test_group_that_keeps_up_loses_nothing_and_compacted_topics_are_out_of_scope(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    assert not [k for k in facts if k[0] == "fast"]
    # `mid` was at 120 when the log start began moving to 150 and at 150 when it ended: it may
    # have lost [120, 150), or nothing
    mid = facts.pop(("mid", "events", S3))
    assert (mid["count_lost"], mid["count_lost_at_least"]) == (30, 0)
    assert not [k for k in facts if k[0] == "mid"]
    assert not [k for k in facts if k[1] == "state"]


def test_watched_group_without_committed_offset_loses_everything_deleted(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    assert facts[("audit", "clicks", S2)]["committed_offset"] is None
    assert facts[("audit", "clicks", S2)]["count_lost"] == 60 - 0
    assert facts[("audit", "clicks", S3)]["count_lost"] == 150 - 60
    assert facts[("audit", "clicks", S3)]["watched_by"] == "configured"


def test_non_consumed_total_sums_losses_per_partition(lake):
    (row,) = [r for r in lake.read_arrow("non_consumed_metrics").to_pylist() if r["topic"] == "events"]
    slow = (60 - 40) + (150 - 60)
    stopped = (60 - 50) + (150 - 60)  # committed 50 in every snapshot
    mid = 150 - 120  # at most; at least nothing
    assert row["non_consumed_total"] == slow + stopped + mid and row["count_groups_affected"] == 3
    assert row["non_consumed_at_least"] == slow + stopped


def test_lag_in_messages_and_below_log_start(lake):
    lag = rows_by(lake, "consumer_lag", "group_id", "topic")
    slow = lag[("slow", "events")]
    assert (slow["lag_messages"], slow["is_below_log_start"], slow["messages_below_log_start"]) == (260, True, 110)
    assert (lag[("fast", "events")]["lag_messages"], lag[("fast", "events")]["lag_ms"]) == (0, 0)


def test_time_lag_is_interpolated_between_snapshots(lake):
    mid = rows_by(lake, "consumer_lag", "group_id", "topic")[("mid", "events")]
    # offset 150 was written when the log end passed it between S1 (end 100) and S2 (end 200)
    written_at = S1 + (S2 - S1) * (150 + 1 - 100) / (200 - 100)
    assert mid["lag_ms"] == int((S3 - written_at).total_seconds() * 1000)
    assert mid["is_time_lag_lower_bound"] is False
    stopped = rows_by(lake, "consumer_lag", "group_id", "topic")[("stopped", "events")]
    assert stopped["committed_offset"] == 50  # and the log start is 150 by S3


def test_time_lag_is_the_age_of_the_oldest_unread_message_still_in_the_log(lake):
    slow = rows_by(lake, "consumer_lag", "group_id", "topic")[("slow", "events")]
    # slow is at 40 but retention deleted up to 150: the oldest message it can still read is 150,
    # written between S1 (end 100) and S2 (end 200); the age of 40 would be that of a lost message
    written_at = S1 + (S2 - S1) * (150 + 1 - 100) / (200 - 100)
    assert (slow["lag_ms"], slow["is_time_lag_lower_bound"]) == (int((S3 - written_at).total_seconds() * 1000), False)
    assert (slow["lag_messages"], slow["messages_below_log_start"], slow["unread_in_log"]) == (260, 110, 150)


def test_a_message_was_written_when_the_log_end_first_passed_it_not_when_it_reached_it(lake):
    exact = rows_by(lake, "consumer_lag", "group_id", "topic")[("exact", "ties")]
    # S2's log end of 200 is the next message's offset: offset 200 was written after S2
    written_at = S2 + (S3 - S2) * (200 + 1 - 200) / (400 - 200)
    assert (exact["lag_ms"], exact["is_time_lag_lower_bound"]) == (int((S3 - written_at).total_seconds() * 1000), False)
    # retention_forecast interpolates its timestamp between the same two snapshots' max timestamps
    forecast = rows_by(lake, "retention_forecast", "group_id", "topic")[("exact", "ties")]
    stamped = ms(S2) + int((ms(S3) - ms(S2)) * (200 + 1 - 200) / (400 - 200))
    assert (forecast["oldest_unconsumed_timestamp_ms"], forecast["is_time_lag_lower_bound"]) == (stamped, False)
    assert (exact["oldest_unread_timestamp_ms"], exact["is_oldest_unread_timestamp_upper_bound"]) == (stamped, False)


def test_a_message_was_written_before_the_first_snapshot_whose_log_end_passed_it_even_after_a_truncation(lake):
    crosser = rows_by(lake, "consumer_lag", "group_id", "topic")[("crosser", "truncated")]
    # S1's log end of 250 had passed 120 already, so the message is older than S1: a lower bound.
    # S2's 150 is the lowest log end above 120, but the log was truncated to it after S1.
    assert (crosser["lag_ms"], crosser["is_time_lag_lower_bound"]) == (int((S3 - S1).total_seconds() * 1000), True)
    # and its timestamp is at most S1's largest one
    forecast = rows_by(lake, "retention_forecast", "group_id", "topic")[("crosser", "truncated")]
    assert (forecast["oldest_unconsumed_timestamp_ms"], forecast["is_time_lag_lower_bound"]) == (ms(S1), True)
    # from S1's max timestamp (which here equals its time), not the write time standing in for it
    assert forecast["timestamp_source"] == "max_timestamp"
    assert (crosser["oldest_unread_timestamp_ms"], crosser["is_oldest_unread_timestamp_upper_bound"]) == (ms(S1), True)


def test_the_snapshots_before_the_log_end_passed_the_log_start_now_bracket_no_unread_message(lake):
    # consumer_lag sorts only the log ends from the snapshot before the first whose log end
    # passed the log start now: the oldest unread offset is at least the log start
    lag = rows_by(lake, "consumer_lag", "group_id", "topic")
    behind = lag[("behind", "retained")]
    # retention deleted up to 250: its oldest unread message was written between S2 (log end 200)
    # and S3 (300), 51% of the way; S1 brackets nothing still in the log
    written_at = S2 + (S3 - S2) * 51 / 100
    assert (behind["lag_ms"], behind["is_time_lag_lower_bound"]) == (ms(S3) - ms(written_at), False)
    assert (behind["oldest_unread_timestamp_ms"], behind["is_oldest_unread_timestamp_upper_bound"]) == \
        (ms(written_at), False)
    # S1's log end of 300 had passed 150 already, and the log was truncated after it: the message
    # is older than S1, as in the truncated case, however low the log ends after S1 fell
    regrower = lag[("regrower", "regrown")]
    assert (regrower["lag_ms"], regrower["is_time_lag_lower_bound"]) == (ms(S3) - ms(S1), True)


def test_forecast_of_when_retention_deletes_unconsumed_messages(lake):
    forecast = rows_by(lake, "retention_forecast", "group_id", "topic")
    mid = forecast[("mid", "events")]
    age_ms = mid["oldest_unconsumed_age_ms"]
    assert mid["hours_left"] == round((RETENTION_MS - age_ms) / 3_600_000, 3)
    assert mid["deletion_expected_at"] == S3 + timedelta(milliseconds=RETENTION_MS - age_ms)
    assert ("fast", "events") not in forecast  # nothing unconsumed
    assert ("slow", "state") not in forecast  # compacted


def test_messages_at_risk_are_only_those_still_in_the_log(lake):
    slow = rows_by(lake, "retention_forecast", "group_id", "topic")[("slow", "events")]
    # 260 behind, of which 110 deleted already (lost, in unconsumed_messages): 150 at risk, and
    # their deletion is forecast from the age of offset 150, not of the long-gone 40
    assert slow["unread_in_log"] == 150
    lag = rows_by(lake, "consumer_lag", "group_id", "topic")[("slow", "events")]
    assert slow["oldest_unconsumed_age_ms"] == lag["lag_ms"]
    assert slow["deletion_expected_at"] == S3 + timedelta(milliseconds=RETENTION_MS - lag["lag_ms"])


def test_an_offset_on_a_topic_no_member_subscribes_to_is_abandoned(lake):
    offsets = rows_by(lake, "expirable_offsets", "group_id", "topic")
    assert (offsets[("moved", "resets")]["is_abandoned"], offsets[("moved", "resets")]["rule"]) == \
        (True, "unsubscribed_topic")
    assert offsets[("moved", "events")]["is_abandoned"] is False  # subscribed
    # an Empty group has no member reading on: its offsets are a stopped group's, not abandoned
    assert offsets[("stopped", "events")]["is_abandoned"] is False


def test_a_loss_while_the_group_had_left_the_topic_is_marked_abandoned(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    # both lost [40, 60) of `resets`; at both snapshots `moved`'s member read `events` only, while
    # `reader`'s read `resets`. The mark comes from those snapshots, so it stays once the
    # abandoned offset is gone.
    assert [(facts[(group, "resets", S2)]["count_lost"], facts[(group, "resets", S2)]["is_abandoned"])
            for group in ("moved", "reader")] == [(20, True), (20, False)]
    # no member at S2 (stopped was Empty), none described at all (slow): nothing known was left
    assert facts[("stopped", "events", S2)]["is_abandoned"] is False
    assert facts[("slow", "events", S2)]["is_abandoned"] is False


def test_stopped_group_expires_retention_after_the_first_snapshot_that_saw_it_empty(lake):
    row = rows_by(lake, "expirable_offsets", "group_id", "topic")[("stopped", "events")]
    assert (row["group_state"], row["rule"]) == ("Empty", "empty_group")
    assert row["base_at"] == S2 and row["is_base_estimated"] is True
    assert row["expires_at"] == S2 + timedelta(minutes=10080)


def test_snapshot_commit_time_bounds(lake):
    offsets = rows_by(lake, "snapshot_offsets", "group_id", "topic")
    assert (offsets[("slow", "events")]["first_seen_at"], offsets[("slow", "events")]["last_unseen_at"]) == (S1, None)
    assert (offsets[("fast", "events")]["first_seen_at"], offsets[("fast", "events")]["last_unseen_at"]) == (S3, S2)
    # 40 again after 50: committed again after S2, not first at S1
    assert (offsets[("flipper", "flips")]["first_seen_at"], offsets[("flipper", "flips")]["last_unseen_at"]) == (S3, S2)
    committed = rows_by(lake, "committed_offsets", "group_id", "topic")
    assert committed[("fast", "events")]["estimated_committed_at"] == S3
    assert committed[("fast", "events")]["commit_time_source"] == "snapshot"


# -- the interval of a log start move runs from one OffsetFetch to the next ListOffsets ---------

def test_a_commit_the_earlier_offset_fetch_already_saw_past_is_not_counted_as_lost(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    # `early` committed 10 after S1's stamp, then 80, and S1's OffsetFetch read 80: it held 80
    # all the while the log start moved to 60, so it lost nothing
    assert not [k for k in facts if k[0] == "early"]


def test_a_commit_after_the_later_offset_fetch_may_have_been_in_force_when_the_log_start_moved(lake):
    late = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")[("late", "late-commits", S2)]
    # S2's OffsetFetch read 40, then `late` committed 90 before S2's ListOffsets saw the log start
    # at 60: it may have held 90 when the log start moved
    assert (late["committed_offset_at_start"], late["committed_offset"], late["count_log_records_between"]) == \
        (40, 40, 1)
    assert (late["count_lost"], late["count_lost_at_least"]) == (20, 0)
    assert (late["interval_start_at"], late["interval_end_at"]) == (S1 + timedelta(seconds=30),
                                                                    S2 + timedelta(seconds=30))


def test_the_lower_bound_holds_only_for_a_group_that_held_an_offset_throughout(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    newcomer = facts[("newcomer", "newcomers", S2)]
    # it committed its first offset, 10, between the snapshots: the log start may have moved
    # before it held any
    assert (newcomer["count_lost"], newcomer["count_lost_at_least"], newcomer["is_held_throughout"]) == \
        (50, 0, False)
    late = facts[("late", "late-commits", S2)]
    assert late["is_held_throughout"] is True


def test_every_cleanup_policy_but_compact_alone_loses_messages(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    # 'compact, delete' is both (Kafka trims each value); an empty policy deletes nothing by
    # retention, but DeleteRecords still moves the log start
    assert (facts[("tidy", "both-policies", S2)]["count_lost"], facts[("bare", "no-policy", S2)]["count_lost"]) == \
        (50, 50)
    forecast = rows_by(lake, "retention_forecast", "group_id", "topic")
    assert ("tidy", "both-policies") in forecast
    assert ("bare", "no-policy") not in forecast  # no time-based retention without delete


def test_a_loss_says_whether_the_log_shows_every_commit_of_its_interval(lake):
    facts = rows_by(lake, "unconsumed_messages", "group_id", "topic", "observed_at")
    # ingest read resetter's partition of __consumer_offsets without a gap, and past the interval
    assert facts[("resetter", "resets", S2)]["is_commit_chain_complete"] is True
    # the cleaner removed compacted's 90 before ingest read it: the bounds cannot see it
    compacted = facts[("compacted", "compacted-commits", S2)]
    assert (compacted["count_lost_at_least"], compacted["is_commit_chain_complete"]) == (20, False)
    # slow's commits are not in the log at all
    assert facts[("slow", "events", S2)]["is_commit_chain_complete"] is False


def test_retention_reads_record_timestamps_a_mirror_keeps_older_than_the_writes(lake):
    mirrored = rows_by(lake, "retention_forecast", "group_id", "topic")[("mirror-reader", "mirrored")]
    # offset 150 is the 51st of the 100 records written between S1 and S2, whose max timestamps
    # were S1 - 2 days and S2 - 2 days
    stamped_at = S1 - MIRROR_LAG + (S2 - S1) * (150 + 1 - 100) / (200 - 100)
    assert (mirrored["message_timestamp_type"], mirrored["timestamp_source"]) == ("CreateTime", "max_timestamp")
    assert mirrored["oldest_unconsumed_timestamp_ms"] == ms(stamped_at)
    assert mirrored["deletion_expected_at"] == stamped_at + timedelta(milliseconds=MIRROR_RETENTION_MS)
    assert mirrored["hours_left"] == round((stamped_at + timedelta(milliseconds=MIRROR_RETENTION_MS) - S3)
                                           / timedelta(hours=1), 3)
    # its write time would give it two days more
    assert mirrored["deletion_expected_at"] < S3 + timedelta(milliseconds=MIRROR_RETENTION_MS - mirrored[
        "oldest_unconsumed_age_ms"]) - timedelta(days=1)
    assert rows_by(lake, "retention_forecast", "group_id", "topic")[("mid", "events")]["timestamp_source"] == \
        "write_time"  # its snapshots hold no max timestamps
    # consumer_lag keeps the timestamp it interpolated with the write time; the forecast reads it there
    lag = rows_by(lake, "consumer_lag", "group_id", "topic")
    mirror_lag = lag[("mirror-reader", "mirrored")]
    assert (mirror_lag["oldest_unread_timestamp_ms"], mirror_lag["is_oldest_unread_timestamp_upper_bound"]) == \
        (ms(stamped_at), False)
    assert (lag[("mid", "events")]["oldest_unread_timestamp_ms"],
            lag[("mid", "events")]["is_oldest_unread_timestamp_upper_bound"]) == (None, None)
    nothing_unread = [row for row in lag.values() if row["unread_in_log"] == 0]
    assert nothing_unread and all(row["oldest_unread_timestamp_ms"] is None for row in nothing_unread)
