"""consumer_status: each of Burrow's evaluation rules (docs/consumer-status.md) on a hand-built
input, run by the real runner on Spark.

One lake holds one case per rule: its own group and topic (group = topic = the case's name), so
the cases do not see each other. A case is written on its own clock in minutes, ending at its
`as_of`; the lake places every case so that its `as_of` is the run's. Snapshots give the log end
offsets (a final snapshot at as_of repeats each topic's last one, as the latest snapshot must know
every topic), the log the commits. The lag of a commit is the log end interpolated between the
snapshots around it, minus the offset. Each case is built so that the rule just after it in the
order would give another status: the test passes with the right rule and fails with a wrong or
reordered one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from offsets_platform.models import ModelRunner
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import needed_for

AS_OF = at(days=1)
# consumer_status and what it reads; the other models are not needed here and cost minutes
MODELS = needed_for("consumer_status")


@dataclass
class Case:
    """commits: (minute, offset[, partition]); log_ends: (minute, log end) of partition 0;
    other_log_ends: partition -> a constant log end; snapshot_offsets: (minute, committed
    offset of partition 0 in that snapshot), observations for a group the log does not know only
    (the log's commits are a known group's); subscribed_to:
    the topics of the one member of a classic group record written before everything else."""
    name: str
    as_of: float
    commits: list[tuple] = field(default_factory=list)
    log_ends: list[tuple[float, int]] = field(default_factory=list)
    other_log_ends: dict[int, int] = field(default_factory=dict)
    snapshot_offsets: dict[float, int] = field(default_factory=dict)
    subscribed_to: list[str] | None = None  # a group record with one member subscribed to these

    def when(self, minute: float) -> datetime:
        # whole milliseconds: a float minute must not put a commit a microsecond before a
        # minute boundary (the min-distance intervals are whole minutes of the epoch)
        return AS_OF - timedelta(milliseconds=round((self.as_of - minute) * 60_000))


CASES = [
    # Burrow's most reported false positive: the consumer read everything, no message came for two
    # hours, so it committed nothing new. Lag now is 0: OK, although its last commit is far older
    # than its window is long (the stopped rule alone would say STOP).
    Case("quiet", as_of=120, commits=[(0, 100), (1, 100)], log_ends=[(0, 100), (60, 100)]),
    # one commit, lag 50 now: a window with no span and no direction judges nothing (the stopped
    # rule would hold at once: a minute of silence exceeds a span of 0)
    Case("single", as_of=1, commits=[(0, 50)], log_ends=[(0, 100)]),
    # commits every minute for 4 minutes, always behind; then nothing for 26 minutes while
    # messages keep coming. The snapshot at minute 20 saw its last offset: an observation there,
    # were it one, would leave it silent for 10 minutes only, not STOP
    Case("stopped", as_of=30, commits=[(m, 10 * (m + 1)) for m in range(5)], log_ends=[(0, 100), (30, 200)],
         snapshot_offsets={20: 50}),
    # Burrow's other STOP false positive: the consumer reached the log end with its last commit
    # (minute 4) and the snapshot at minute 10 still saw nothing newer; messages came after that.
    # Silent since minute 10: 2 minutes at minute 12, less than the window's 4; 3 minutes later,
    # 5: STOP. Counted from the last commit it would be STOP at minute 12 already.
    Case("caught-up-then-quiet", as_of=12, commits=[(m, 20 * (m + 1)) for m in range(5)],
         log_ends=[(0, 60), (10, 100), (12, 150)]),
    Case("caught-up-then-silent", as_of=15, commits=[(m, 20 * (m + 1)) for m in range(5)],
         log_ends=[(0, 60), (10, 100), (12, 150)]),
    # caught up at 100 and 120 (lag 0), then back to 60 and 70: the lag-0 observations would make
    # the window OK; the rewind is judged first, as in Burrow
    Case("rewound", as_of=4, commits=[(0, 100), (1, 120), (2, 60), (3, 70)],
         log_ends=[(0, 100), (1, 120), (4, 130)]),
    # it fell from 120 to 50 but reached 130 later in the window; the lag (log end 1000
    # throughout) went 900, 880, 950, 870
    Case("rewound-and-recovered", as_of=4, commits=[(0, 100), (1, 120), (2, 50), (3, 130)],
         log_ends=[(0, 1000), (4, 1000)]),
    # the same offset four times; at the first commit it was the log end (lag 0), then messages
    # came (50 by minute 4). Without the lag-zero rule: STALL.
    Case("lag-zero-once", as_of=4, commits=[(m, 100) for m in range(4)], log_ends=[(0, 100), (4, 150)]),
    # partition 0 commits 100 four times with 50 messages waiting; partition 1 is caught up
    Case("stalled", as_of=4, commits=[(m, 100) for m in range(4)] + [(0, 7, 1), (1, 7, 1)],
         log_ends=[(0, 150), (4, 150)], other_log_ends={1: 7}),
    # the log grows 50 a minute, the consumer 40: lags 100, 110, 120, 130
    Case("falling-behind", as_of=4, commits=[(0, 100), (1, 140), (2, 180), (3, 220)],
         log_ends=[(0, 200), (4, 400)]),
    # the stopped case again, but the group has a member and subscribes to another topic only
    # (a subscription changed): nobody is meant to read this topic, so not STOP and not ERR
    Case("unsubscribed", as_of=30, commits=[(m, 10 * (m + 1)) for m in range(5)], log_ends=[(0, 100), (30, 200)],
         subscribed_to=["another-topic"]),
    # the falling-behind consumer, but the first snapshot of its topic comes at minute 2.5: the lags
    # of the commits before it are unknown, the last one's is 333 - 220 = 113. One known lag shows
    # no fall: WARN, as Burrow's checkIfLagNotDecreasing, which holds when it has nothing to compare
    Case("one-known-lag", as_of=4, commits=[(0, 100), (1, 140), (2, 180), (3, 220)],
         log_ends=[(2.5, 300), (4, 400)]),
    # the same log, the consumer 60 a minute: lags 100, 90, 80, 70
    Case("catching-up", as_of=4, commits=[(0, 100), (1, 160), (2, 220), (3, 280)],
         log_ends=[(0, 200), (4, 400)]),
    # no log commits: each new value at the first snapshot that saw it (10 at minute 0, 20 at
    # minute 10) is an observation, so the window spans 10 minutes; silent for 21: STOP
    Case("snapshots-only", as_of=31, log_ends=[(0, 100), (10, 100), (20, 100), (30, 100)],
         snapshot_offsets={0: 10, 10: 20, 20: 20, 30: 20}),
    # Auto-commit every 5 s for 10 minutes (commits at 0 s .. 595 s), gaining on the log (1.67 a
    # second, the consumer 2: lag 4100 falling to 3902); evaluated 65 s after the last commit.
    # One observation per minute (the last commit in each): 10 spanning 9 minutes, OK. With every
    # commit an observation (and a window of 3) the window spans 10 s and the silence exceeds it:
    # the STOP Burrow's users get for consumers that commit often.
    Case("frequent-commits", as_of=11, commits=[(s / 60, 900 + 2 * s) for s in range(0, 600, 5)],
         log_ends=[(0, 5000), (11, 6100)]),
    # lag 0 at the first commit only (lags 0, 10, 20, 30, 40): in a window of 10 it makes the
    # partition OK; in a window of 3 it has aged out, and the same offset with lag is STALL
    Case("window", as_of=5, commits=[(m, 100) for m in range(5)], log_ends=[(0, 100), (5, 150)]),
]


def _bronze() -> BronzeBuilder:
    b = BronzeBuilder()
    snapshots: dict[datetime, dict[str, list]] = defaultdict(lambda: {"logs": [], "offsets": []})
    for case in CASES:
        if case.subscribed_to is not None:
            b.group_record(case.name, case.when(-1), members={"m1": case.subscribed_to})
        for when, offset, *partition in case.commits:  # in time order, as Kafka appends them
            b.commit(case.name, case.name, partition[0] if partition else 0, offset, case.when(when))
        last_end = case.log_ends[-1][1]
        for when, log_end in case.log_ends + [(case.as_of, last_end)]:
            snapshot = snapshots[case.when(when)]
            if any(row["topic"] == case.name for row in snapshot["logs"]):
                continue  # the case's own snapshot at as_of already
            for p, end in {0: log_end, **case.other_log_ends}.items():
                snapshot["logs"].append({"topic": case.name, "partition": p, "log_start_offset": 0,
                                         "log_end_offset": end})
        last_offset = list(case.snapshot_offsets.values())[-1] if case.snapshot_offsets else None
        for when, committed in {**case.snapshot_offsets, **({case.as_of: last_offset} if last_offset else {})}.items():
            snapshots[case.when(when)]["offsets"].append({"group": case.name, "topic": case.name, "partition": 0,
                                                          "committed_offset": committed})
    for when in sorted(snapshots):  # cases sharing a time share one snapshot
        b.snapshot(when, logs=snapshots[when]["logs"], offsets=snapshots[when]["offsets"])
    return b


def _statuses(spark, lake, **variables) -> dict[tuple[str, int], dict]:
    ModelRunner(spark, lake, variables={"as_of": AS_OF.strftime("%Y-%m-%d %H:%M:%S"), **variables},
                emit=lambda line: None).run_all(select=MODELS)
    return {(r["group_id"], r["partition_id"]): r for r in lake.read_arrow("consumer_status").to_pylist()}


@pytest.fixture(scope="module")
def runs(spark, module_lake):
    """consumer_status with the default variables, then with a window of 3 and no min distance."""
    _bronze().write(module_lake)
    default = _statuses(spark, module_lake)
    variant = _statuses(spark, module_lake, consumer_status_window=3, consumer_status_min_distance_seconds=0)
    return default, variant


@pytest.fixture(scope="module")
def rows(runs):
    return runs[0]


def _minutes(case: str, minute: float) -> datetime:
    return next(c for c in CASES if c.name == case).when(minute)


def test_a_quiet_partition_is_ok_not_stopped(rows):
    row = rows[("quiet", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("OK", "caught_up", "OK")
    assert row["current_lag"] == 0
    assert row["seconds_since_last_commit"] == 119 * 60 > row["window_seconds"] == 60


def test_too_few_observations_is_incomplete(rows):
    row = rows[("single", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("INCOMPLETE", "too_few_observations", "INCOMPLETE")
    assert (row["count_observations"], row["count_group_partitions_incomplete"]) == (1, 1)


def test_silent_for_longer_than_the_window_spans_is_stop(rows):
    row = rows[("stopped", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("STOP", "stopped", "ERR")
    assert (row["window_seconds"], row["seconds_since_last_commit"], row["silent_seconds"]) == (240, 26 * 60, 26 * 60)
    # lag at the first commit: log end 100 at minute 0, minus 10; at the last (minute 4) the
    # log end interpolated to 100 + 100 * 4/30 = 113, minus 50
    assert (row["first_lag"], row["last_lag"], row["current_lag"]) == (90, 63, 150)


def test_caught_up_after_its_last_commit_is_not_stopped_until_silent_for_the_window(rows):
    quiet, silent = rows[("caught-up-then-quiet", 0)], rows[("caught-up-then-silent", 0)]
    assert quiet["caught_up_at"] == _minutes("caught-up-then-quiet", 10) and quiet["silent_seconds"] == 120
    # the log end at minute 4 interpolates to 60 + 40 * 4/10 = 76, below the offset 100: lag 0
    assert (quiet["status"], quiet["rule"], quiet["last_lag"]) == ("OK", "lag_zero_in_window", 0)
    assert quiet["seconds_since_last_commit"] == 8 * 60 > quiet["window_seconds"] == 240
    assert (silent["status"], silent["rule"], silent["silent_seconds"]) == ("STOP", "stopped", 300)


def test_an_offset_that_falls_and_stays_below_is_rewind_even_after_lag_zero(rows):
    row = rows[("rewound", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("REWIND", "rewound", "ERR")
    assert (row["rewound_from_offset"], row["rewound_to_offset"], row["min_lag"]) == (120, 60, 0)


def test_a_rewind_the_consumer_recovered_from_is_judged_by_the_other_rules(rows):
    row = rows[("rewound-and-recovered", 0)]
    assert (row["status"], row["rule"], row["rewound_from_offset"]) == ("OK", "progressing", 120)


def test_lag_zero_in_the_window_is_ok_though_the_offset_did_not_move(rows):
    row = rows[("lag-zero-once", 0)]
    assert (row["status"], row["rule"], row["first_lag"], row["current_lag"]) == ("OK", "lag_zero_in_window", 0, 50)


def test_the_same_offset_committed_with_lag_throughout_is_stall_and_the_group_err(rows):
    stalled, caught_up = rows[("stalled", 0)], rows[("stalled", 1)]
    assert (stalled["status"], stalled["rule"], stalled["min_lag"]) == ("STALL", "offsets_unchanged", 50)
    assert (caught_up["status"], caught_up["rule"]) == ("OK", "caught_up")
    # the group is its worst partition's state, STALL counting as ERR
    assert stalled["group_status"] == caught_up["group_status"] == "ERR"
    assert stalled["count_group_partitions"] == 2


def test_lag_on_a_topic_the_group_no_longer_subscribes_to_is_abandoned_not_stop(rows):
    row, stopped = rows[("unsubscribed", 0)], rows[("stopped", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("ABANDONED", "not_subscribed", "OK")
    # the same numbers as the stopped case, which has no members (nothing says it should not read)
    assert (row["window_seconds"], row["silent_seconds"], row["current_lag"]) == (
        stopped["window_seconds"], stopped["silent_seconds"], stopped["current_lag"])


def test_moving_offsets_whose_lag_never_falls_is_warn(rows):
    row = rows[("falling-behind", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("WARN", "lag_not_decreasing", "WARN")
    assert (row["first_lag"], row["last_lag"]) == (100, 130)


def test_moving_offsets_with_fewer_than_two_known_lags_are_warn_as_in_burrow(rows):
    row = rows[("one-known-lag", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("WARN", "lag_not_decreasing", "WARN")
    assert (row["count_observations"], row["first_lag"], row["last_lag"]) == (4, None, 113)


def test_lag_that_falls_is_ok(rows):
    row = rows[("catching-up", 0)]
    assert (row["status"], row["rule"], row["group_status"]) == ("OK", "progressing", "OK")
    assert (row["first_lag"], row["last_lag"], row["min_lag"]) == (100, 70, 70)


def test_a_group_known_only_from_snapshots_is_judged_on_the_values_they_saw(rows):
    row = rows[("snapshots-only", 0)]
    assert (row["observations_from"], row["count_observations"], row["window_seconds"]) == ("snapshot", 2, 600)
    assert (row["status"], row["rule"], row["first_lag"], row["last_lag"]) == ("STOP", "stopped", 90, 80)


def test_frequent_commits_fill_the_window_at_most_once_per_min_distance(runs):
    default, every_commit = runs[0][("frequent-commits", 0)], runs[1][("frequent-commits", 0)]
    assert (default["count_observations"], default["window_seconds"], default["observations_from"]) == (10, 540, "log")
    assert (default["status"], default["rule"]) == ("OK", "progressing")
    assert (every_commit["count_observations"], every_commit["window_seconds"]) == (3, 10)
    assert (every_commit["status"], every_commit["rule"]) == ("STOP", "stopped")


def test_the_window_holds_the_last_n_observations(runs):
    default, three = runs[0][("window", 0)], runs[1][("window", 0)]
    assert (default["count_observations"], default["status"], default["rule"]) == (5, "OK", "lag_zero_in_window")
    assert (three["count_observations"], three["status"], three["rule"]) == (3, "STALL", "offsets_unchanged")
    assert (three["first_lag"], three["last_lag"]) == (20, 40)


def test_every_partition_with_lag_known_has_a_status(rows, module_lake):
    # the grain: consumer_lag's rows, no more, no fewer
    lag = {(r["group_id"], r["partition_id"]) for r in module_lake.read_arrow("consumer_lag").to_pylist()}
    assert lag == set(rows)


def test_the_models_own_checks_pass_on_these_rows(spark, rows, module_lake):
    # the Great Expectations checks the Dagster assets run (gold.yml's tests), on real output
    from offsets_platform.models import default_project
    from offsets_platform.quality import specs_for_model, validate

    for name in ("consumer_observations", "consumer_status"):
        model = default_project().model(name)
        lake = module_lake.with_model_tables({model.name: model.table_spec()})
        result = validate(lake.spark_read(spark, model.name), model.name, specs_for_model(model))
        assert result.passed, result.summary()
