"""Pruning the log offset snapshots, then the committed offset snapshots: every model answers the
same with and without the rows the prunes removed, refreshed incrementally after them and in full
(offsets_platform.models.snapshot_pruning, offsets_platform.models.committed_snapshot_pruning).

The history, one snapshot an hour from hour 1, pruned as of hour 8: every partition's log end
grows 100 messages an hour, and but for those of t-3 and t-6, retention moves the log start of
each partition of t from 0 to 450 at hour 6 (and on t-0, t-1, t-2 and t-5, to 750 at hour 10,
after the prune). With a log start of 450, the snapshots before hour 4 (the one before the first
whose log end, 500, passed 450) bracket no unread message; what else keeps them, or settles a loss
of a move they showed, is one case each:
- t-0: `reader` commits every 10 minutes, 30 messages behind, and loses messages when its log start
  moves earlier, to 150 at hour 2: the snapshots before hour 4 leave, and that loss is settled,
  its commit chain complete. It stays complete: ingest reads reader's partition of the log (its
  own, 1) to hour 10 with a gap after the prune (a record compacted away), which a check of the
  chain from the settled row alone, without the group's next commit, would count;
- t-1: `stopped` committed 40 at half past midnight and never again: its window goes back before
  every snapshot;
- t-2: `watcher` commits nothing the log shows (its offsets are the snapshots'): 10, then 20 from
  hour 3 and 30 from hour 9;
- t-3: `stuck` commits 100 every 10 minutes; its log start moves to 100 at hour 2, is not known at
  hour 4, is 300 from hour 5 and 650 from hour 8: the snapshots before hour 6 leave (the one
  before the first whose log end passed 650);
- t-4: `laggard` commits 100 every 10 minutes, below the log start: its snapshots before hour 4
  leave, and the one at hour 4 brackets its oldest unread message, 450;
- t-5: `slowpoke` committed at half past one and half past five: its window needs the snapshot at
  hour 1, before its first commit;
- t-6: retention deletes its whole log at hour 8 (log start 800), and no group held an offset
  there before: only the snapshot at hour 7 stays, the latest before the cutoff, because
  `latecomer` commits 500 at hour 8, after the prune, and so lost messages in that move;
- u-0: `auditor`, the group watched_groups lists for topic u, holds no offset, so it loses every
  move: retention deletes the whole log at hour 7 (log start 700) and at hour 8. The snapshots
  before hour 7 leave. After the prune, a snapshot of u alone at half past seven completes late:
  unconsumed_messages judges the moves from hour 7 on again, and must keep the settled loss at
  hour 7, whose move it no longer judges.
Every move seen through hour 7, the latest snapshot before the cutoff, is settled, also where the
log offset snapshots still show it: the losses at hour 6 of `stopped`, `watcher`, `laggard` and
`slowpoke` too.

Of the committed offsets, every group's latest run of one value keeps its first snapshot, and the
offsets of a partition stay from the latest snapshot the settled moves reach on (hour 7); the
offsets at the snapshots of the settled moves leave. Two more groups keep what no such rule would:
- `hopper` holds 7 on v-0 (a topic the log offset snapshots do not list), its OffsetFetch sent
  five minutes after each snapshot. Between the snapshot at hour 7 and its fetch it commits 5 on
  t-6 and deletes it: the fetch at hour 7 saw neither, so hopper held no offset while t-6's log
  start moved. Only its row on v-0 at hour 7 says when that fetch was sent;
- `audited` holds 3 on t-5 until the project's OffsetDelete at half past four, which the log does
  not show: coordinator_metrics counts it because the snapshot at hour 4 held the offset.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa

from offsets_platform.models import ModelRunner, default_project, lake_for_models
from offsets_platform.models.committed_snapshot_pruning import prune_committed_offset_snapshots
from offsets_platform.models.pruning import prune_cutoff
from offsets_platform.models.snapshot_pruning import (
    PRUNED_TABLE,
    SETTLED_MOVES_TABLE,
    SETTLED_TABLE,
    prune_log_offset_snapshots,
)
from proving_ground.lake_checks import model_differences
from tests.models.bronze_builder import BronzeBuilder, at

VARIABLES = {"as_of": "2026-01-05 00:00:00", "watched_groups": {"u": ["auditor"]}}
EVERY_REASON = {"consumer_lag", "consumer_status", "the latest before the cutoff"}
EVERY_COMMITTED_REASON = {"snapshot_offsets", "consumer_status", "unconsumed_messages", "coordinator_metrics"}
PARTITIONS = range(7)
# the project's OffsetDelete of audited's offset on t-5, at half past four
AUDIT = pa.Table.from_pylist([{
    "audit_id": "a0", "plan_id": None, "action_id": None, "origin": "cli", "action": "OffsetDelete", "group": "audited",
    "topic": "t", "partition": 5, "outcome": "deleted", "error": None, "detail": None, "bootstrap_servers": "b:9092",
    "requested_by": "ops", "at": at(minutes=270), "intent_id": None}])
# t-3's log start by hour: a move at hour 2, unknown at hour 4, a move at hour 8
T3_LOG_STARTS = {1: 0, 2: 100, 3: 100, 4: None, 5: 300, 6: 300, 7: 300, 8: 650}


def _log_start(hour: int, partition: int) -> int | None:
    if partition == 3:
        return T3_LOG_STARTS[min(hour, 8)]
    if partition == 0 and 2 <= hour < 6:
        return 150
    if partition == 6:
        return 800 if hour >= 8 else 0
    return 750 if hour >= 10 and partition != 4 else 450 if hour >= 6 else 0


def _u_log(hour: float) -> dict:
    """u-0's log at `hour`: emptied by retention at hours 7 and 8."""
    log_start = 800 if hour >= 8 else 700 if hour >= 7 else 0
    return {"topic": "u", "partition": 0, "log_start_offset": log_start,
            "log_end_offset": max(int(100 * hour), log_start)}


def _u_config() -> dict:
    return {"topic": "u", "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"}


def _snapshot(b: BronzeBuilder, hour: int, held: dict[tuple[str, int], int]) -> None:
    """The snapshot at `hour`, which sees the offsets the log shows committed by then (`held`)."""
    held = {**held, ("watcher", 2): 30 if hour >= 9 else 20 if hour >= 3 else 10}
    if hour <= 4:
        held["audited", 5] = 3
    offsets = [{"group": g, "topic": "t", "partition": p, "committed_offset": offset}
               for (g, p), offset in sorted(held.items())]
    offsets.append({"group": "hopper", "topic": "v", "partition": 0, "committed_offset": 7,
                    "fetched_at": at(hours=hour, minutes=5)})
    b.snapshot(at(hours=hour),
               groups=[{"group": g, "state": "Empty", "protocol_type": "consumer", "protocol": "", "member_count": 0}
                       for g in sorted({row["group"] for row in offsets})],
               offsets=offsets,
               logs=[{"topic": "t", "partition": p, "log_start_offset": _log_start(hour, p),
                      "log_end_offset": 100 * hour} for p in PARTITIONS] + [_u_log(hour)],
               topics=[{"topic": "t", "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"},
                       _u_config()])


def _commits(minutes: int) -> dict[tuple[str, int], int]:
    """The offsets committed at `minutes` past midnight, by group and partition."""
    commits = {("reader", 0): max(10 * minutes // 6 - 30, 0), ("stuck", 3): 100, ("laggard", 4): 100}
    if minutes == 30:
        commits["stopped", 1] = 40
    if minutes in (90, 330):
        commits["slowpoke", 5] = 10 * minutes // 6 - 50
    if minutes == 480:
        commits["latecomer", 6] = 500
    return commits


def _history(b: BronzeBuilder, first_hour: int, last_hour: int) -> None:
    """The commits from `first_hour` up to `last_hour` and the snapshots in between, in time order."""
    held = {}
    for minutes in range(0, last_hour * 60, 10):
        if minutes >= first_hour * 60:
            if minutes % 60 == 0 and minutes > first_hour * 60:  # the snapshot at first_hour is the last part's
                _snapshot(b, minutes // 60, held)
            for (group, partition), offset in _commits(minutes).items():
                b.commit(group, "t", partition, offset, at(minutes=minutes), source_partition=int(group == "reader"))
            if minutes == 420:  # before the fetch of the snapshot at hour 7
                b.commit("hopper", "t", 6, 5, at(minutes=422))
                b.offset_tombstone("hopper", "t", 6, at(minutes=423))
        held.update(_commits(minutes))
    _snapshot(b, last_hour, held)


def test_the_models_answer_the_same_after_a_prune_of_the_log_and_committed_offset_snapshots(spark, tmp_path):
    first = BronzeBuilder()
    first.group_record("reader", at(hours=0), members={}, current_state_at=at(hours=0))
    _history(first, 0, 8)
    first.ingest_checkpoints(at(hours=8))
    second = first.next_round()
    second.snapshot(at(minutes=450), logs=[_u_log(7.5)], topics=[_u_config()])  # completed late
    _history(second, 8, 10)
    second.compacted_away(source_partition=1)
    second.ingest_checkpoints(at(hours=10))
    pruned = lake_for_models(tmp_path / "pruned")
    # unconsumed_messages incremental however little the data (it runs full on little by default)
    runner = ModelRunner(spark, pruned, variables=VARIABLES, emit=lambda line: None, full_when_small_max_bytes=-1)
    first.write(pruned)
    pruned.append("cleanup_audit", AUDIT)
    runner.run_all()

    result = prune_log_offset_snapshots(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff == at(hours=8)  # never after the latest complete snapshot
    assert set(result.kept) == EVERY_REASON  # the history exercises every rule that keeps a row
    left = {(row["topic"], row["partition"], row["snapshot_at"])
            for row in pruned.read_arrow(PRUNED_TABLE).to_pylist()}
    first_left = {("t", 0): 4, ("t", 3): 6, ("t", 4): 4, ("t", 6): 7, ("u", 0): 7}
    every = [("t", p) for p in PARTITIONS] + [("u", 0)]
    assert left == {(*key, at(hours=h)) for key in every for h in range(first_left.get(key, 1), 9)}
    assert result.removed == 23 == result.rows_before - len(left)
    assert result.settled_through == at(hours=7)
    assert pruned.read_arrow(SETTLED_MOVES_TABLE).column("settled_through_at").to_pylist() == [at(hours=7)]
    settled = {(row["topic"], row["group_id"], row["observed_at"])
               for row in pruned.read_arrow(SETTLED_TABLE).to_pylist()}
    assert settled == {("t", "reader", at(hours=2)), ("u", "auditor", at(hours=7))} | {
        ("t", group, at(hours=6)) for group in ("stopped", "watcher", "laggard", "slowpoke")}
    assert result.losses_settled == 6

    result = prune_committed_offset_snapshots(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff == at(hours=8)
    assert set(result.kept) == EVERY_COMMITTED_REASON
    left = {}
    for row in pruned.read_arrow("committed_offset_snapshots").to_pylist():
        left.setdefault((row["group"], row["topic"], row["partition"]), set()).add(row["snapshot_at"].hour)
    assert left == {
        ("reader", "t", 0): {7, 8},  # only at the latest snapshot before the cutoff: the log has it
        ("stopped", "t", 1): {1, 7, 8},  # its run's first snapshot; t-1's move at hour 6 is settled
        ("watcher", "t", 2): {1, 3, 7, 8},  # the log has none: both values for its window
        ("stuck", "t", 3): {1, 7, 8},
        ("laggard", "t", 4): {1, 7, 8},
        ("slowpoke", "t", 5): {6, 7, 8},  # its first value (hours 2-5) no longer bounds a move it judges
        ("audited", "t", 5): {1, 4},
        ("hopper", "v", 0): {1, 7, 8},
    }
    assert result.removed == 36 == result.rows_before - sum(map(len, left.values()))

    second.write(pruned)
    # no prune now would pass the snapshot that completed late: no model has judged its moves yet
    assert prune_cutoff(pruned, default_project(), now=at(hours=10), horizon=timedelta(0)) == at(minutes=450)
    runs = {run.model: run.mode for run in runner.run_all()}
    # the prune's delete is read past like an append: the incremental model stays incremental
    assert runs["unconsumed_messages"] == "incremental"

    unpruned = lake_for_models(tmp_path / "unpruned")
    for part in (first, second):
        part.write(unpruned)
    unpruned.append("cleanup_audit", AUDIT)
    ModelRunner(spark, unpruned, variables=VARIABLES, emit=lambda line: None).run_all()
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
