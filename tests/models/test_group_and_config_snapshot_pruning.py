"""Pruning the group, member, topic config and error snapshots: every model answers the same with
and without the rows the prune removed, refreshed incrementally after it and in full
(offsets_platform.models.group_and_config_snapshot_pruning).

The history, one snapshot an hour from hour 1, pruned as of hour 8 (the moves seen through hour 7
settled first): the log start of t-0 moves from 0 to 100 at hour 4 and to 300 at hour 8, after
the latest snapshot before the cutoff. One case per rule:
- `flipper` is Stable at hours 1-3, Empty at 4-5 and Stable from 6; its log record at half past
  four says Stable. Its rows at 1, 4 and 6 start a state (group_state_history). Its row at 5, the
  last that saw another state than now, says the snapshots saw it Empty after that record, so the
  record's time of the state does not hold (group_state): without it, the last would be hour 4;
- `quitter` holds 50 on t-0 (the snapshots' only) while its members subscribe to `other` only: it
  lost messages at both moves, and the loss at hour 8 is abandoned because its members at hours 7
  and 8 named no t. Its member rows at hour 7, the earlier snapshot of a move not settled, stay;
  those before leave;
- t's configs stay at hours 7 and 8 (the snapshots of the move not settled), `other`'s leave;
- the errors of the snapshots before the cutoff leave, one of them about no group or topic.
"""

from __future__ import annotations

from datetime import timedelta

from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.group_and_config_snapshot_pruning import prune_group_and_config_snapshots
from offsets_platform.models.snapshot_pruning import prune_log_offset_snapshots
from proving_ground.lake_checks import model_differences
from tests.models.bronze_builder import BronzeBuilder, at

AS_OF = {"as_of": "2026-01-05 00:00:00"}
FLIPPER_STATES = {1: "Stable", 2: "Stable", 3: "Stable", 4: "Empty", 5: "Empty"}  # Stable from hour 6


def _snapshot(b: BronzeBuilder, hour: int) -> None:
    flipper = FLIPPER_STATES.get(hour, "Stable")
    groups = [{"group": "flipper", "state": flipper, "protocol_type": "consumer", "protocol": "range",
               "member_count": int(flipper == "Stable")},
              {"group": "quitter", "state": "Stable", "protocol_type": "consumer", "protocol": "range",
               "member_count": 1}]
    members = [{"group": "quitter", "member_id": "q1", "client_id": "q1", "subscribed_topics": ["other"]}]
    if flipper == "Stable":
        members.append({"group": "flipper", "member_id": "f1", "client_id": "f1", "subscribed_topics": ["t"]})
    errors = {2: [{"scope": "broker", "name": None, "operation": "DescribeConfigs", "error": "UNKNOWN_SERVER_ERROR"}],
              3: [{"scope": "group", "name": "ghost", "operation": "DescribeGroups", "error": "GROUP_ID_NOT_FOUND"}]}
    b.snapshot(at(hours=hour), groups=groups, members=members,
               offsets=[{"group": "quitter", "topic": "t", "partition": 0, "committed_offset": 50}],
               logs=[{"topic": "t", "partition": 0, "log_start_offset": 300 if hour >= 8 else 100 if hour >= 4 else 0,
                      "log_end_offset": 100 * hour}],
               topics=[{"topic": name, "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"}
                       for name in ("other", "t")],
               errors=errors.get(hour, []))


def _left(lake, table: str, *key: str) -> dict[tuple, set[int]]:
    left = {}
    for row in lake.read_arrow(table).to_pylist():
        left.setdefault(tuple(row[name] for name in key), set()).add(row["snapshot_at"].hour)
    return left


def test_the_models_answer_the_same_after_a_prune_of_the_group_and_config_snapshots(spark, tmp_path):
    first = BronzeBuilder()
    first.group_record("flipper", at(hours=4, minutes=30), members={"f1": ["t"]},
                       current_state_at=at(hours=4, minutes=30))
    for hour in range(1, 9):
        _snapshot(first, hour)
    first.ingest_checkpoints(at(hours=8))
    second = first.next_round()
    for hour in (9, 10):
        _snapshot(second, hour)
    second.ingest_checkpoints(at(hours=10))
    pruned = lake_for_models(tmp_path / "pruned")
    runner = ModelRunner(spark, pruned, variables=AS_OF, emit=lambda line: None, full_when_small_max_bytes=-1)
    first.write(pruned)
    runner.run_all()

    settling = prune_log_offset_snapshots(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert settling.settled_through == at(hours=7)
    results = prune_group_and_config_snapshots(spark, pruned, horizon=timedelta(0), emit=lambda line: None)
    assert {table: result.cutoff for table, result in results.items()} == dict.fromkeys(results, at(hours=8))
    assert {table: set(result.kept) for table, result in results.items()} == {
        "group_snapshots": {"group_state_history", "group_state"}, "group_member_snapshots": {"unconsumed_messages"},
        "topic_configs": {"unconsumed_messages"}, "snapshot_errors": set()}
    assert _left(pruned, "group_snapshots", "group") == {("flipper",): {1, 4, 5, 6, 8}, ("quitter",): {1, 8}}
    assert _left(pruned, "group_member_snapshots", "group") == {("flipper",): {7, 8}, ("quitter",): {7, 8}}
    assert _left(pruned, "topic_configs", "topic") == {("other",): {8}, ("t",): {7, 8}}
    assert pruned.count("snapshot_errors") == 0
    for table, result in results.items():
        assert result.removed == result.rows_before - pruned.count(table), table

    second.write(pruned)
    runner.run_all()
    unpruned = lake_for_models(tmp_path / "unpruned")
    for part in (first, second):
        part.write(unpruned)
    ModelRunner(spark, unpruned, variables=AS_OF, emit=lambda line: None).run_all()
    # the cases the rules keep rows for are in the answers
    abandoned = {(row["observed_at"].hour, row["is_abandoned"])
                 for row in unpruned.read_arrow("unconsumed_messages").to_pylist() if row["group_id"] == "quitter"}
    assert abandoned == {(4, True), (8, True)}
    (flipper,) = [row for row in unpruned.read_arrow("group_state").to_pylist() if row["group_id"] == "flipper"]
    assert (flipper["state"], flipper["current_state_at"], flipper["state_entered_at"]) == \
        ("Stable", None, at(hours=6))
    assert model_differences(pruned.root, unpruned.root) == []
    runner.run_all(full_refresh=True)
    assert model_differences(pruned.root, unpruned.root) == []
