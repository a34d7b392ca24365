"""consumer_status's observations from offset_commit_minutes, an incremental model: a minute
whose commits arrive in two ingests is observed at its last commit, merged in two runs or built
in one (tests/models/test_consumer_status.py has the rules; this one runs them twice)."""

from __future__ import annotations

from datetime import timedelta

from offsets_platform.models import ModelRunner, lake_for_models
from tests.models.bronze_builder import BronzeBuilder
from tests.models.test_consumer_status import AS_OF, _statuses, _statuses_and_runs


def _minute_split_rounds() -> tuple[BronzeBuilder, BronzeBuilder]:
    """Two ingests (two bronze files): the second goes on in the minute the first ended in, with
    a commit below the one before it (the consumer rewound within that minute), and holds a
    minute of two commits, the later one lower."""
    start = AS_OF - timedelta(minutes=3)
    first, second = BronzeBuilder(), BronzeBuilder()
    for when in (start, AS_OF):
        first.snapshot(when, logs=[{"topic": "t", "partition": 0, "log_start_offset": 0, "log_end_offset": 200}])
    first.commit("g", "t", 0, 100, start + timedelta(seconds=10))
    first.commit("g", "t", 0, 120, start + timedelta(minutes=1, seconds=10))
    second._next_offset = first._next_offset  # the log goes on where it stopped
    second.commit("g", "t", 0, 60, start + timedelta(minutes=1, seconds=40))  # later in the same minute
    second.commit("g", "t", 0, 75, start + timedelta(minutes=2, seconds=5))
    second.commit("g", "t", 0, 70, start + timedelta(minutes=2, seconds=10))  # that minute's last
    return first, second


def test_a_minute_whose_commits_span_two_ingests_is_observed_at_its_last_commit(spark, tmp_path):
    # offset_commit_minutes keeps a row per file and minute; consumer_status must take a minute's
    # last commit in the log (60, then 70), not its highest offset (120, 75) nor the first
    # file's, whether the minute table was merged in two runs or built in one.
    first, second = _minute_split_rounds()
    incremental = lake_for_models(tmp_path / "incremental")
    first.write(incremental)
    ModelRunner(spark, incremental, emit=lambda line: None).run_all(select=["offset_commit_minutes"])
    second.write(incremental)
    merged, modes = _statuses_and_runs(spark, incremental)
    assert modes["offset_commit_minutes"] == "incremental"
    assert len(incremental.read_arrow("offset_commit_minutes")) == 4  # minute 1 once per file

    full = lake_for_models(tmp_path / "full")
    for part in (first, second):
        part.write(full)
    for row in (merged[("g", 0)], _statuses(spark, full)[("g", 0)]):
        assert (row["count_observations"], row["first_offset"], row["last_offset"]) == (3, 100, 70)
        assert (row["rewound_from_offset"], row["rewound_to_offset"], row["status"]) == (100, 60, "REWIND")
