"""log_observations, the state consumer_status's window is taken from: a refresh folds in only the
commits new since the last one, keeps each partition's latest window up to as_of (and what comes
after it), and holds what a full run over the whole log gives, by a rule computed here in Python."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

import pytest

from offsets_platform.models import ModelRunner, default_project, lake_for_models
from tests.models.bronze_builder import BronzeBuilder, at, ms

WINDOW = 3
MIN_DISTANCE_S = 60
UNTIMED = -9223372036854775807  # the interval of commits without a usable time
FAR_FUTURE_MS = 2**62  # a commit and record time past the year 9999: no usable time


def _as_of(moment: datetime) -> dict:
    return {"as_of": moment.strftime("%Y-%m-%d %H:%M:%S"), "consumer_status_window": WINDOW,
            "consumer_status_min_distance_seconds": MIN_DISTANCE_S}


def _round_one(b: BronzeBuilder) -> None:
    # "many": a commit a minute for six minutes, more than a window
    for minute in range(6):
        b.commit("g", "many", 0, minute * 10, at(minutes=minute))
    # "same-minute": two commits in one interval, the later one counts
    b.commit("g", "same-minute", 0, 5, at(minutes=1, seconds=10))
    b.commit("g", "same-minute", 0, 7, at(minutes=1, seconds=50))
    # "future": a window's worth before as_of (minute 10) and one after it, kept for later
    for minute in range(WINDOW):
        b.commit("g", "future", 0, minute, at(minutes=minute))
    b.commit("g", "future", 0, 99, at(minutes=12))
    # "untimed": one commit without a usable time, one with
    b.commit_ms("g", "untimed", 0, 1, FAR_FUTURE_MS, record_ms=FAR_FUTURE_MS)
    b.commit("g", "untimed", 0, 2, at(minutes=3))
    b.offset_tombstone("g", "many", 1, at(minutes=4))  # tombstones are not observations
    # as_of (minute 10) falls in an interval: a commit there at as_of is in the window and pushes
    # the oldest out ("edge"); a later commit of that interval after as_of keeps the interval out
    # of the window until as_of passes it ("edge-later")
    for topic in ("edge", "edge-later"):
        for minute in range(6, 6 + WINDOW):
            b.commit("g", topic, 0, minute, at(minutes=minute))
        b.commit("g", topic, 0, 10, at(minutes=10))
    b.commit("g", "edge-later", 0, 11, at(minutes=10, seconds=30))


def _round_two(b: BronzeBuilder) -> None:
    # a later commit in the last interval "many" holds, which replaces that row, and two new intervals
    b.commit("g", "many", 0, 55, at(minutes=5, seconds=30))
    b.commit("g", "many", 0, 60, at(minutes=6))
    b.commit("g", "many", 0, 70, at(minutes=7))
    # more new intervals than a window: the oldest new ones are not kept
    for minute in range(2, 7):
        b.commit("g", "same-minute", 0, 10 + minute, at(minutes=minute))
    # "future" gets no commit: as_of passing minute 12 alone makes its oldest observation leave


def _expected(builders: list[BronzeBuilder], as_of: datetime) -> dict:
    """The rule, from every commit: per partition, the latest commit of each interval; kept are
    the latest WINDOW up to as_of, those after it, and the interval of commits without a time."""
    latest = {}
    for b in builders:
        for row in b.rows["offset_commit_records"]:
            if row["tombstone"]:
                continue
            when = row["commit_timestamp"] or row.get("source_timestamp")
            at_ms = ms(when) if when else None
            key = (row["group"], row["topic"], row["partition"],
                   UNTIMED if at_ms is None else at_ms // (MIN_DISTANCE_S * 1000))
            if key not in latest or latest[key][2] < row["source_offset"]:
                latest[key] = (row["offset"], at_ms, row["source_offset"])
    per_partition = defaultdict(list)
    for (group, topic, partition, interval), (offset, at_ms, source_offset) in latest.items():
        per_partition[(group, topic, partition)].append((interval, offset, at_ms, source_offset))
    kept = {}
    for key, rows in per_partition.items():
        timed = sorted((r for r in rows if r[2] is not None and r[2] <= ms(as_of)), key=lambda r: (r[2], r[3]))
        for interval, offset, at_ms, source_offset in timed[-WINDOW:] + [
                r for r in rows if r[2] is None or r[2] > ms(as_of)]:
            kept[(*key, interval)] = (offset, at_ms, source_offset)
    return kept


def _table(lake) -> dict:
    return {(r["group_id"], r["topic"], r["partition_id"], r["interval_id"]):
            (r["committed_offset"], r["observed_at_ms"], r["source_offset"])
            for r in lake.read_arrow("log_observations").to_pylist()}


def test_a_refresh_folds_in_the_new_commits_and_keeps_only_what_a_window_can_use(spark, tmp_path):
    first, second = BronzeBuilder(), BronzeBuilder()
    _round_one(first)
    second._next_offset = first._next_offset  # the log goes on where it stopped
    _round_two(second)
    first_as_of, second_as_of = at(minutes=10), at(minutes=20)

    lake = lake_for_models(tmp_path / "incremental")
    first.write(lake)
    run = ModelRunner(spark, lake, variables=_as_of(first_as_of), emit=lambda line: None).run("log_observations")
    assert run.mode == "full"
    assert _table(lake) == _expected([first], first_as_of)
    assert _table(lake)[("g", "future", 0, ms(at(minutes=12)) // 60_000)][0] == 99  # after as_of: kept
    kept_minutes = {topic: sorted(interval - ms(at()) // 60_000 for _g, t, _p, interval in _table(lake) if t == topic)
                    for topic in ("edge", "edge-later")}
    assert kept_minutes == {"edge": [7, 8, 10], "edge-later": [6, 7, 8, 10]}

    second.write(lake)
    run = ModelRunner(spark, lake, variables=_as_of(second_as_of), emit=lambda line: None).run("log_observations")
    assert (run.mode, run.new_files) == ("incremental", {"offset_commit_records": 1})
    expected = _expected([first, second], second_as_of)
    assert _table(lake) == expected
    # bounded: a window per partition, and the untimed partition's extra row
    rows_per_partition = defaultdict(int)
    for _group, topic, _partition, _interval in expected:
        rows_per_partition[topic] += 1
    assert rows_per_partition == {"many": WINDOW, "same-minute": WINDOW, "future": WINDOW, "untimed": 2,
                                  "edge": WINDOW, "edge-later": WINDOW}
    assert expected[("g", "many", 0, ms(at(minutes=5)) // 60_000)][0] == 55  # the later commit of minute 5 won

    # a full run over the whole log at the later as_of holds the same rows
    full = lake_for_models(tmp_path / "full")
    first.write(full)
    second.write(full)
    ModelRunner(spark, full, variables=_as_of(second_as_of), emit=lambda line: None).run("log_observations")
    assert _table(full) == expected


def test_a_batch_as_large_as_the_history_still_runs_incrementally(spark, tmp_path):
    # the run reads the kept state and the new commits, never more than a full run reads: the
    # runner's rule that runs a merging model full when much of its data is new does not apply
    first, second = BronzeBuilder(), BronzeBuilder()
    _round_one(first)
    second._next_offset = first._next_offset
    _round_two(second)
    lake = lake_for_models(tmp_path / "lake")
    first.write(lake)

    def refresh(as_of: datetime) -> str:
        # any share of new data, however small, is "much" for these settings
        return ModelRunner(spark, lake, variables=_as_of(as_of), emit=lambda line: None,
                           full_run_new_share=0.0, full_run_min_new_bytes=0).run("log_observations").mode

    assert refresh(at(minutes=10)) == "full"
    second.write(lake)
    assert refresh(at(minutes=20)) == "incremental"
    assert _table(lake) == _expected([first, second], at(minutes=20))


def test_a_changed_window_or_an_earlier_as_of_runs_in_full(spark, tmp_path):
    # rows kept for one window size or one as_of are not what another needs: such a run is full
    history = BronzeBuilder()
    _round_one(history)
    lake = lake_for_models(tmp_path / "lake")
    history.write(lake)

    def refresh(as_of: datetime, **variables) -> str:
        runner = ModelRunner(spark, lake, variables={**_as_of(as_of), **variables}, emit=lambda line: None)
        return runner.run("log_observations").mode

    assert refresh(at(minutes=10)) == "full"
    more = BronzeBuilder()
    more._next_offset = history._next_offset
    more.commit("g", "many", 0, 80, at(minutes=9))
    more.write(lake)
    assert refresh(at(minutes=11)) == "incremental"  # as_of moved forward
    assert refresh(at(minutes=11), consumer_status_window=WINDOW + 1) == "full"
    assert refresh(at(minutes=5), consumer_status_window=WINDOW + 1) == "full"  # as_of went back
    assert refresh(at(minutes=5), consumer_status_window=WINDOW + 1) == "unchanged"


@pytest.mark.fast
def test_the_window_is_read_from_the_kept_state_not_from_the_log():
    # consumer_observations runs on every refresh (it uses as_of): it reads log_observations'
    # kept rows, and log_observations reads only the commits new since its last run
    window_reads = default_project().model("consumer_observations")
    assert ("bronze", "offset_commit_records") not in window_reads.sources
    assert "log_observations" in window_reads.refs
    state = default_project().model("log_observations")
    assert state.materialized == "incremental"
    assert "ref('stg_kafka__offset_commits', new_only=true)" in state.sql
