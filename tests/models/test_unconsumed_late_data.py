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
"""

from __future__ import annotations

from datetime import timedelta

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


@pytest.fixture(scope="module")
def refreshed_rounds(spark, tmp_path_factory) -> tuple[list[dict], dict]:
    """The table after each round's refresh, and after one refresh of all rounds on another lake."""
    each_round = lake_for_models(tmp_path_factory.mktemp("each-round"))
    at_once = lake_for_models(tmp_path_factory.mktemp("at-once"))
    runner = ModelRunner(spark, each_round, variables=AS_OF, emit=lambda line: None)
    tables = []
    for part in _rounds():
        part.write(each_round)
        part.write(at_once)
        runner.run_all(MODELS)
        tables.append(rows_by(each_round, "unconsumed_messages", *KEY))
    ModelRunner(spark, at_once, variables=AS_OF, emit=lambda line: None).run_all(MODELS)
    return tables, rows_by(at_once, "unconsumed_messages", *KEY)


def _losses(rows: dict) -> dict:
    return {(group, observed): row["count_lost"] for (_, _, group, observed), row in rows.items()}


def test_refreshed_round_after_round_it_equals_one_refresh_of_everything(refreshed_rounds):
    tables, at_once = refreshed_rounds
    assert tables[-1] == at_once


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
