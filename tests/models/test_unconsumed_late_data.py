"""unconsumed_messages counts data that arrives late, and refreshed round after round it equals
one refresh of the whole history.

Topic `events` (one partition, cleanup.policy=delete) over five rounds of ingest and snapshots,
each refreshed as it arrives:
1. snapshots S1 and S2, between which the log start moves 0 -> 60: `steady` (at 40, records in
   partition 0 of __consumer_offsets) and `dead` (at 10, partition 2) lose messages; `late`
   (at 80, partition 1) does not, as far as the lake knows yet. Ingest read partitions 0 and 2
   just before S1; in partition 2 the log cleaner had removed a record before that.
2. partition 1 arrives late, with no new snapshot: `late` had committed 30, then 80 again,
   between S1 and S2, so it lost messages at S2 too.
3. `steady` commits 70 after S2, then S3 sees the log start at 100.
4. a snapshot S1b taken between S1 and S2 completes only now, already seeing the log start at
   60: the move is S1b's, and S2 no longer shows one, so the losses at S2 are withdrawn.
5. another group commits in partition 2 after S3: ingest has read `dead`'s partition past the
   intervals, so the commit chains of its losses are complete now.

Topic `payments`, two rounds: a snapshot that comes next judges the move before it again.
1. `payer` (records in partition 3) loses messages at S2 and commits again after S2; records of
   another group follow in partition 3, one of them compacted away. The move at S2 has no next
   snapshot yet, so the log is read past its interval only at the partition's latest record,
   beyond that gap: the chain is not complete.
2. S3 arrives, with no new record: payer's commit after S2 is now within the move's reach (up to
   the next snapshot's read of the log start), the log is read past the interval before the gap,
   and the chain is complete, as one refresh of both rounds finds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple

import pytest

from offsets_platform.models import ModelRunner, lake_for_models
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import needed_for, rows_by

S1, S1B, S2, S3 = at(days=1), at(days=1, minutes=5), at(days=1, minutes=10), at(days=1, minutes=20)
AS_OF = {"as_of": "2026-01-05 00:00:00"}
MODELS = needed_for("unconsumed_messages")
KEY = ("topic", "partition_id", "group_id", "observed_at")


def _snapshot(b: BronzeBuilder, when, log_start: int, log_end: int, offsets: dict[str, int]) -> None:
    b.snapshot(when, topics=[{"topic": "events", "retention_ms": 3_600_000, "retention_bytes": -1,
                              "cleanup_policy": "delete"}],
               logs=[{"topic": "events", "partition": 0, "log_start_offset": log_start, "log_end_offset": log_end}],
               offsets=[{"group": g, "topic": "events", "partition": 0, "committed_offset": o}
                        for g, o in offsets.items()])


def _rounds() -> list[BronzeBuilder]:
    first = BronzeBuilder()
    first.commit("steady", "events", 0, 40, S1 - timedelta(minutes=1))
    first.commit("dead", "events", 0, 10, S1 - timedelta(minutes=1), source_partition=2)
    first.compacted_away(source_partition=2)  # before the intervals: the chains lack nothing of theirs
    first.ingest_checkpoints(S1 - timedelta(seconds=30))
    _snapshot(first, S1, 0, 100, {"steady": 40, "late": 80, "dead": 10})
    _snapshot(first, S2, 60, 200, {"steady": 40, "late": 80, "dead": 10})
    first.ingest_checkpoints(S2 + timedelta(minutes=1))

    second = first.next_round()
    second.commit("late", "events", 0, 30, S1 + timedelta(minutes=3), source_partition=1)
    second.commit("late", "events", 0, 80, S1 + timedelta(minutes=4), source_partition=1)
    second.ingest_checkpoints(S2 + timedelta(minutes=2))

    third = second.next_round()
    third.commit("steady", "events", 0, 70, S2 + timedelta(minutes=2))
    _snapshot(third, S3, 100, 300, {"steady": 70, "late": 80, "dead": 10})
    third.ingest_checkpoints(S3 + timedelta(minutes=1))

    fourth = third.next_round()
    _snapshot(fourth, S1B, 60, 150, {"steady": 40, "late": 80, "dead": 10})

    fifth = fourth.next_round()
    fifth.commit("neighbour", "other", 0, 1, S3 + timedelta(minutes=5), source_partition=2)
    fifth.ingest_checkpoints(S3 + timedelta(minutes=6))
    return [first, second, third, fourth, fifth]


class Rounds(NamedTuple):
    tables: list[dict]  # the table after each round's refresh
    at_once: dict  # the table after one refresh of all rounds, on another lake
    written: list[int]  # the rows each round's refresh wrote to the table


def _refresh_round_by_round(spark, tmp_path_factory, parts: list[BronzeBuilder]) -> tuple[Rounds, list]:
    """Each part written to two lakes: one refreshed after each part, the other once after all;
    and the unconsumed_messages run of each refresh of the first."""
    each_round = lake_for_models(tmp_path_factory.mktemp("each-round"))
    at_once = lake_for_models(tmp_path_factory.mktemp("at-once"))
    # judged incrementally even on these few rows (full_when_small would run them full)
    runner = ModelRunner(spark, each_round, variables=AS_OF, emit=lambda line: None, full_when_small_max_bytes=-1)
    tables, runs = [], []
    for part in parts:
        part.write(each_round)
        part.write(at_once)
        (run,) = [run for run in runner.run_all(MODELS) if run.model == "unconsumed_messages"]
        tables.append(rows_by(each_round, "unconsumed_messages", *KEY))
        runs.append(run)
    ModelRunner(spark, at_once, variables=AS_OF, emit=lambda line: None).run_all(MODELS)
    return Rounds(tables, rows_by(at_once, "unconsumed_messages", *KEY), [run.rows_written for run in runs]), runs


@pytest.fixture(scope="module")
def refreshed_rounds(spark, tmp_path_factory) -> Rounds:
    return _refresh_round_by_round(spark, tmp_path_factory, _rounds())[0]


def _losses(rows: dict) -> dict:
    return {(group, observed): row["count_lost"] for (_, _, group, observed), row in rows.items()}


def test_refreshed_round_after_round_it_equals_one_refresh_of_everything(refreshed_rounds):
    assert refreshed_rounds.tables[-1] == refreshed_rounds.at_once


def test_late_commits_add_a_loss_to_a_move_judged_before(refreshed_rounds):
    first, second, third = refreshed_rounds[0][:3]
    assert _losses(first) == {("steady", S2): 20, ("dead", S2): 50}
    # late's commit of 30 between S1 and S2 arrived in round 2: [30, 60) lost, at most
    assert _losses(second) == {("steady", S2): 20, ("dead", S2): 50, ("late", S2): 30}
    assert _losses(third) == {**_losses(second), ("steady", S3): 40, ("dead", S3): 40, ("late", S3): 20}


def test_a_snapshot_completed_late_moves_the_losses_and_withdraws_the_old_ones(refreshed_rounds):
    fourth = refreshed_rounds[0][3]
    assert _losses(fourth) == {("steady", S1B): 20, ("dead", S1B): 50, ("late", S1B): 30,
                               ("steady", S3): 40, ("dead", S3): 40, ("late", S3): 20}


def test_a_commit_chain_is_complete_once_ingest_read_the_partition_past_the_interval(refreshed_rounds):
    fourth, fifth = refreshed_rounds[0][3:]
    assert not fourth[("events", 0, "dead", S3)]["is_commit_chain_complete"]
    # partition 2 is now read past both of dead's intervals (its gap came before them, in a batch
    # read before the intervals began); partition 0 was read past S1b's
    # already (steady's commit of 70), and never past S3's; partition 1 never past either
    assert {key[2:]: row["is_commit_chain_complete"] for key, row in fifth.items()} == {
        ("dead", S1B): True, ("dead", S3): True, ("steady", S1B): True,
        ("steady", S3): False, ("late", S1B): False, ("late", S3): False}


def test_a_chain_rechecked_and_still_not_complete_is_not_written_again(refreshed_rounds):
    # the fifth round judges no move again (its commit is on another topic) and rechecks the
    # five chains not complete: the two now complete are written, the three others left as they are
    fourth, fifth = refreshed_rounds.tables[3:]
    became_complete = [key for key, row in fifth.items()
                       if row["is_commit_chain_complete"] and not fourth[key]["is_commit_chain_complete"]]
    assert len(became_complete) == 2
    assert refreshed_rounds.written[4] == len(became_complete)


def _payments_snapshot(b: BronzeBuilder, when, log_start: int, log_end: int, offset: int) -> None:
    b.snapshot(when, topics=[{"topic": "payments", "retention_ms": 3_600_000, "retention_bytes": -1,
                              "cleanup_policy": "delete"}],
               logs=[{"topic": "payments", "partition": 0, "log_start_offset": log_start, "log_end_offset": log_end}],
               offsets=[{"group": "payer", "topic": "payments", "partition": 0, "committed_offset": offset}])


@pytest.fixture(scope="module")
def next_snapshot_rounds(spark, tmp_path_factory) -> tuple[list[dict], dict]:
    first = BronzeBuilder()
    first.commit("payer", "payments", 0, 40, S1 - timedelta(minutes=1), source_partition=3)
    first.ingest_checkpoints(S1 - timedelta(seconds=30))
    _payments_snapshot(first, S1, 0, 100, 40)
    _payments_snapshot(first, S2, 60, 200, 40)
    first.commit("payer", "payments", 0, 45, S2 + timedelta(minutes=1), source_partition=3)
    first.ingest_checkpoints(S2 + timedelta(seconds=90))
    first.commit("payee", "other", 0, 1, S2 + timedelta(minutes=2), source_partition=3)
    first.compacted_away(source_partition=3)
    first.commit("payee", "other", 0, 2, S2 + timedelta(minutes=2), source_partition=3)
    first.ingest_checkpoints(S2 + timedelta(minutes=3))
    second = first.next_round()
    _payments_snapshot(second, S3, 60, 300, 45)
    rounds, runs = _refresh_round_by_round(spark, tmp_path_factory, [first, second])
    assert runs[-1].mode == "incremental"
    return rounds.tables, rounds.at_once


def test_a_new_snapshot_judges_the_move_before_it_again(next_snapshot_rounds):
    (first, second), at_once = next_snapshot_rounds
    assert _losses(first) == _losses(second) == {("payer", S2): 20}
    assert not first[("payments", 0, "payer", S2)]["is_commit_chain_complete"]
    assert second[("payments", 0, "payer", S2)]["is_commit_chain_complete"]
    assert second == at_once


def test_on_little_data_the_refresh_after_a_new_snapshot_is_full(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    said: list[str] = []
    runner = ModelRunner(spark, lake, variables=AS_OF, emit=said.append)
    first, second = _rounds()[:2]
    first.write(lake)
    runner.run_all(MODELS)
    second.write(lake)
    assert {run.model: run.mode for run in runner.run_all(MODELS)}["unconsumed_messages"] == "full"
    assert any("unconsumed_messages: its sources hold" in line for line in said)
