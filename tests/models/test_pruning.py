"""Pruning offset commit records: every model answers the same with and without the records it
removed, refreshed incrementally after the prune and in full (offsets_platform.models.pruning)."""

from __future__ import annotations

from datetime import timedelta

from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.pruning import PRUNED_TABLE, prune_offset_commits
from proving_ground.lake_checks import model_differences
from tests.models.bronze_builder import BronzeBuilder, at

AS_OF = {"as_of": "2026-01-05 00:00:00"}
EVERY_REASON = {"latest of its key", "tombstone", "removed by a tombstone", "status window", "log start moved"}


def _snapshot(b: BronzeBuilder, when, log_start: int, offsets: dict[str, int]) -> None:
    b.snapshot(when,
               groups=[{"group": g, "state": "Empty", "protocol_type": "consumer", "protocol": "", "member_count": 0}
                       for g in offsets],
               offsets=[{"group": g, "topic": "t", "partition": 0, "committed_offset": o} for g, o in offsets.items()],
               logs=[{"topic": "t", "partition": 0, "log_start_offset": log_start, "log_end_offset": 1000}],
               topics=[{"topic": "t", "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"}])


def _in_time_order(b: BronzeBuilder, events: list[tuple]) -> None:
    """Log records in the order of their times, as Kafka appends them: (time, method, args...)."""
    for when, method, *args in sorted(events, key=lambda event: event[0]):
        if method == "commit":
            b.commit(*args, when)
        elif method == "tombstone":
            b.offset_tombstone(*args, when)
        else:
            _snapshot(b, when, *args)


def _round_one(b: BronzeBuilder) -> None:
    b.group_record("g", at(hours=0), members={}, current_state_at=at(hours=0))
    events = [(at(minutes=10 * n), "commit", "g", "t", 0, 10 * n) for n in range(30)]  # most are history only
    events += [
        (at(minutes=15), "commit", "g", "x", 0, 1),
        (at(minutes=25), "commit", "g", "x", 0, 2),  # the commit the tombstone removes
        (at(minutes=35), "tombstone", "g", "x", 0),
        (at(minutes=45), "commit", "g", "x", 0, 3),
        # eleven commits later, x's window (consumer_status_window, 10) no longer holds the
        # commit the tombstone removed: only the tombstone rule keeps it
        *((at(minutes=46 + 2 * n), "commit", "g", "x", 0, 4 + n) for n in range(11)),
        (at(hours=1, minutes=30), "commit", "resetter", "t", 0, 40),
        (at(hours=2), "snapshot", 0, {"g": 120, "resetter": 40}),
        # the log start moves from 0 to 60 between the snapshots at 2 and 3 hours: what resetter
        # held meanwhile bounds what it lost, and the log shows it only in these commits
        (at(hours=2, minutes=10), "commit", "resetter", "t", 0, 45),
        (at(hours=2, minutes=20), "commit", "resetter", "t", 0, 120),
        (at(hours=2, minutes=50), "commit", "resetter", "t", 0, 130),
        (at(hours=3), "snapshot", 60, {"g": 180, "resetter": 130}),
        (at(hours=4), "snapshot", 60, {"g": 240, "resetter": 130}),
        # nor does resetter's window hold the commits of the move: only the move rule keeps them
        *((at(hours=4, minutes=2 + 5 * n), "commit", "resetter", "t", 0, 131 + n) for n in range(11)),
    ]
    _in_time_order(b, events)


def _round_two(b: BronzeBuilder) -> None:
    events = [(at(minutes=10 * n), "commit", "g", "t", 0, 10 * n) for n in range(30, 40)]
    events += [
        (at(hours=5, minutes=30), "tombstone", "g", "x", 0),  # removes x's latest commit
        (at(hours=5, minutes=40), "commit", "resetter", "t", 0, 150),
        (at(hours=6), "snapshot", 60, {"g": 390, "resetter": 150}),
    ]
    _in_time_order(b, events)


def test_the_models_answer_the_same_after_a_prune_incrementally_and_in_full(spark, tmp_path):
    first, second = BronzeBuilder(), BronzeBuilder()
    _round_one(first)
    second._next_offset = first._next_offset  # the log goes on where it stopped
    _round_two(second)
    pruned = lake_for_models(tmp_path / "pruned")
    runner = ModelRunner(spark, pruned, variables=AS_OF, emit=lambda line: None)
    first.write(pruned)
    runner.run_all()

    result = prune_offset_commits(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff == at(hours=4)  # never after the latest complete snapshot
    assert result.removed > 0
    assert set(result.kept) == EVERY_REASON  # the history exercises every rule that keeps a record
    assert pruned.count(PRUNED_TABLE) == result.records_before - result.removed
    assert result.commits_counted == sum(1 for row in first.rows[PRUNED_TABLE]
                                         if not row["tombstone"] and row["source_timestamp"] < at(hours=4))

    second.write(pruned)
    runs = {run.model: run.mode for run in runner.run_all()}
    # the prune's delete is read past like an append: the incremental models stay incremental
    for model in ("log_offset_state", "log_observations", "offset_commit_counts", "offset_removals"):
        assert runs[model] == "incremental", (model, runs[model])

    unpruned = lake_for_models(tmp_path / "unpruned")
    for part in (first, second):
        part.write(unpruned)
    ModelRunner(spark, unpruned, variables=AS_OF, emit=lambda line: None).run_all()
    assert model_differences(pruned.root, unpruned.root) == []

    # a second prune, through Dagster's prune job, counts from where the first stopped; a full
    # refresh then counts each commit once
    again = _pruned_by_the_dagster_job(pruned)
    assert again["cutoff"] == at(hours=6).isoformat() and again["records_removed"] > 0
    # the same run first prunes the log offset snapshots: the log end passed the log start (60) at
    # the first snapshot already, so consumer_lag can still read each; but it settles the move
    assert (again["snapshot_cutoff"], again["snapshot_rows_before"], again["snapshot_rows_removed"]) == \
        (at(hours=6).isoformat(), 4, 0)
    assert (again["moves_settled_through"], again["losses_settled"]) == (at(hours=4).isoformat(), 1)
    # so the commits of the move's interval leave (resetter's loss is settled), and of the
    # committed offset snapshots, those at the move: only the latest before the cutoff stays
    assert "records kept: log start moved" not in again
    assert (again["committed_rows_before"], again["committed_rows_removed"]) == (8, 4)
    # and the group and topic config snapshots: the Empty groups keep their first row, t's configs
    # stay from the move's latest snapshot before the cutoff on
    assert [again[f"{table}: rows {what}"] for table in ("group_snapshots", "topic_configs")
            for what in ("before", "removed")] == [8, 4, 4, 2]
    assert again["commits_counted"] == sum(1 for part in (first, second) for row in part.rows[PRUNED_TABLE]
                                           if not row["tombstone"] and at(hours=4) <= row["source_timestamp"] < at(hours=6))
    runs = {run.model: run.mode for run in runner.run_all()}
    assert runs["offset_commit_counts"] == "incremental"  # the counts were appended, the records pruned
    assert model_differences(pruned.root, unpruned.root) == []
    runner.run_all(full_refresh=True)
    assert model_differences(pruned.root, unpruned.root) == []


def _pruned_by_the_dagster_job(lake) -> dict:
    """The metadata of a run of Dagster's prune job (horizon 0) on the lake."""
    from dagster import DagsterInstance

    from offsets_platform_dagster.maintenance import prune_job
    from offsets_platform_dagster.resources import LakeResource, SparkResource

    with DagsterInstance.ephemeral() as instance:
        outcome = prune_job.execute_in_process(
            run_config={"ops": {"prune_lake": {"config": {"horizon": "0s"}}}},
            resources={"lake": LakeResource(root=str(lake.root)), "spark": SparkResource()}, instance=instance)
    (output,) = [event for event in outcome.all_node_events if event.is_successful_output]
    return {name: value.value for name, value in output.step_output_data.metadata.items()}


def test_nothing_is_pruned_before_every_model_read_the_records(spark, tmp_path):
    lake = lake_for_models(tmp_path / "lake")
    history = BronzeBuilder()
    _round_one(history)
    history.write(lake)
    result = prune_offset_commits(spark, lake, horizon=timedelta(0), emit=lambda line: None)
    assert result.cutoff is None and result.removed == 0
    assert "refresh first" in result.nothing_because
    assert lake.count(PRUNED_TABLE) == len(history.rows[PRUNED_TABLE])
