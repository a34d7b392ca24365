"""Pruning the log offset snapshots: every model answers the same with and without the rows the
prune removed, refreshed incrementally after it and in full (offsets_platform.models.snapshot_pruning).

The history, one snapshot an hour from hour 1: every partition of t's log end grows 100 messages
an hour, and but for t-3's, retention moves its log start from 0 to 450 at hour 6 (and on t-0,
t-1, t-2 and t-5, to 750 at hour 10, after the prune). With a log start of 450, the snapshots
before hour 4 (the one before the first whose log end, 500, passed 450) bracket no unread message;
what else keeps them is one case each:
- t-0: `reader` commits every 10 minutes, 30 messages behind, and loses messages when its log start
  moves earlier, to 150 at hour 2: the snapshots around that move stay;
- t-1: `stopped` committed 40 at half past midnight and never again: its window goes back before
  every snapshot;
- t-2: `watcher` commits nothing the log shows (its offsets are the snapshots'): 10, then 20 from
  hour 3 and 30 from hour 9;
- t-3: `stuck` commits 100 every 10 minutes; its log start moves to 100 at hour 2, is not known at
  hour 4, is 300 from hour 5 and 650 from hour 8: the snapshot at hour 5 leaves, and the one at
  hour 4 stays, or the snapshots at 3 and 6 would show a move in which `stuck` lost messages;
- t-4: `laggard` commits 100 every 10 minutes, below the log start: its snapshots before hour 4
  leave, and the one at hour 4 brackets its oldest unread message, 450;
- t-5: `slowpoke` committed at half past one and half past five: its window needs the snapshot at
  hour 1, before its first commit.
"""

from __future__ import annotations

from datetime import timedelta

from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.snapshot_pruning import PRUNED_TABLE, prune_log_offset_snapshots
from proving_ground.lake_checks import model_differences
from tests.models.bronze_builder import BronzeBuilder, at

AS_OF = {"as_of": "2026-01-05 00:00:00"}
EVERY_REASON = {"log start moved", "log start unknown", "consumer_lag", "consumer_status"}
PARTITIONS = range(6)
# t-3's log start by hour: a move at hour 2, unknown at hour 4, a move at hour 8
T3_LOG_STARTS = {1: 0, 2: 100, 3: 100, 4: None, 5: 300, 6: 300, 7: 300, 8: 650}


def _log_start(hour: int, partition: int) -> int | None:
    if partition == 3:
        return T3_LOG_STARTS[min(hour, 8)]
    if partition == 0 and 2 <= hour < 6:
        return 150
    return 750 if hour >= 10 and partition != 4 else 450 if hour >= 6 else 0


def _snapshot(b: BronzeBuilder, hour: int, held: dict[tuple[str, int], int]) -> None:
    """The snapshot at `hour`, which sees the offsets the log shows committed by then (`held`)."""
    held = {**held, ("watcher", 2): 30 if hour >= 9 else 20 if hour >= 3 else 10}
    b.snapshot(at(hours=hour),
               groups=[{"group": g, "state": "Empty", "protocol_type": "consumer", "protocol": "", "member_count": 0}
                       for g in sorted({group for group, _ in held})],
               offsets=[{"group": g, "topic": "t", "partition": p, "committed_offset": offset}
                        for (g, p), offset in sorted(held.items())],
               logs=[{"topic": "t", "partition": p, "log_start_offset": _log_start(hour, p),
                      "log_end_offset": 100 * hour} for p in PARTITIONS],
               topics=[{"topic": "t", "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"}])


def _commits(minutes: int) -> dict[tuple[str, int], int]:
    """The offsets committed at `minutes` past midnight, by group and partition."""
    commits = {("reader", 0): max(10 * minutes // 6 - 30, 0), ("stuck", 3): 100, ("laggard", 4): 100}
    if minutes == 30:
        commits["stopped", 1] = 40
    if minutes in (90, 330):
        commits["slowpoke", 5] = 10 * minutes // 6 - 50
    return commits


def _history(b: BronzeBuilder, first_hour: int, last_hour: int) -> None:
    """The commits from `first_hour` up to `last_hour` and the snapshots in between, in time order."""
    held = {}
    for minutes in range(0, last_hour * 60, 10):
        if minutes >= first_hour * 60:
            if minutes % 60 == 0 and minutes:
                _snapshot(b, minutes // 60, held)
            for (group, partition), offset in _commits(minutes).items():
                b.commit(group, "t", partition, offset, at(minutes=minutes))
        held.update(_commits(minutes))
    _snapshot(b, last_hour, held)


def test_the_models_answer_the_same_after_a_prune_of_the_log_offset_snapshots(spark, tmp_path):
    first, second = BronzeBuilder(), BronzeBuilder()
    first.group_record("reader", at(hours=0), members={}, current_state_at=at(hours=0))
    _history(first, 0, 8)
    second._next_offset = first._next_offset  # the log goes on where it stopped
    _history(second, 8, 10)
    pruned = lake_for_models(tmp_path / "pruned")
    # unconsumed_messages incremental however little the data (it runs full on little by default)
    runner = ModelRunner(spark, pruned, variables=AS_OF, emit=lambda line: None, full_when_small_max_bytes=-1)
    first.write(pruned)
    runner.run_all()

    result = prune_log_offset_snapshots(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff == at(hours=8)  # never after the latest complete snapshot
    assert set(result.kept) == EVERY_REASON  # the history exercises every rule that keeps a row
    left = {(row["partition"], row["snapshot_at"]) for row in pruned.read_arrow(PRUNED_TABLE).to_pylist()}
    # t-3's snapshot at hour 5 and t-4's before hour 4 left
    gone = {(3, at(hours=5))} | {(4, at(hours=h)) for h in range(1, 4)}
    assert left == {(p, at(hours=h)) for p in PARTITIONS for h in range(1, 9)} - gone
    assert result.removed == 4 == result.rows_before - len(left)

    second.write(pruned)
    runs = {run.model: run.mode for run in runner.run_all()}
    # the prune's delete is read past like an append: the incremental model stays incremental
    assert runs["unconsumed_messages"] == "incremental"

    unpruned = lake_for_models(tmp_path / "unpruned")
    for part in (first, second):
        part.write(unpruned)
    ModelRunner(spark, unpruned, variables=AS_OF, emit=lambda line: None).run_all()
    assert model_differences(pruned.root, unpruned.root) == []
    runner.run_all(full_refresh=True)
    assert model_differences(pruned.root, unpruned.root) == []


def test_nothing_is_pruned_before_every_model_read_the_snapshots(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    history = BronzeBuilder()
    _history(history, 0, 8)
    history.write(lake)
    result = prune_log_offset_snapshots(spark, lake, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff is None and result.removed == 0
    assert "refresh first" in result.nothing_because
    assert lake.count(PRUNED_TABLE) == len(history.rows[PRUNED_TABLE])
