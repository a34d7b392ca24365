"""Tombstone classification and the KIP-496 counters, on a hand-built log.

offsets.retention.minutes is 60 (the fallback variable, and the one snapshot's too). Each
tombstone's expected class follows the rule: an expiration when the offset was a candidate by its
group's state at that moment and had expired by the tombstone's time, otherwise a deletion; what
the project deleted itself (cleanup_audit) counts as Kafka's meters count it. The models run once;
each scenario lives on its own day, one bucket of the daily counters.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.models.bronze_builder import BronzeBuilder, at, ms
from tests.models.conftest import needed_for, rows_by, run_models

RULES, AUDIT, BACK_TO_CLASSIC, REBALANCES = (at(days=day) for day in range(4))


def _rules(b: BronzeBuilder) -> None:
    """Day 0: 4 expirations and 3 deletions by the rules, 7 commits, 3 completed rebalances."""
    # standalone: 2 h after the commit is past 60 min -> expiration; 10 min -> deletion
    b.commit("solo", "t", 0, 1, at(hours=1))
    b.offset_tombstone("solo", "t", 0, at(hours=3))
    b.commit("solo", "t", 1, 1, at(hours=1))
    b.offset_tombstone("solo", "t", 1, at(hours=1, minutes=10))
    # legacy expire timestamp reached after 5 min -> expiration although retention is 60 min
    b.commit("solo", "t", 2, 1, at(hours=1), expire_at=at(hours=1, minutes=5))
    b.offset_tombstone("solo", "t", 2, at(hours=1, minutes=10))
    # Stable consumer group subscribed to `a`: an old offset of `a` removed -> deletion;
    # of unsubscribed `b` -> expiration
    b.group_record("stable", at(hours=1), members={"m1": ["a"]}, current_state_at=at(hours=1))
    b.group_record("stable", at(hours=1, minutes=30), members={"m1": ["a"], "m2": ["a"]}, generation=2)
    # a static member rejoining with a new member id: Kafka writes the group record again in the
    # same generation, without a rebalance
    b.group_record("stable", at(hours=1, minutes=40), members={"m1": ["a"], "m2-new": ["a"]}, generation=2)
    b.commit("stable", "a", 0, 5, at(hours=1))
    b.commit("stable", "b", 0, 5, at(hours=1))
    b.offset_tombstone("stable", "a", 0, at(hours=4))
    b.offset_tombstone("stable", "b", 0, at(hours=4))
    # Empty group from 2 h on: base = current_state_timestamp, not the commit time
    b.group_record("gone", at(hours=0), members={"m1": ["c"]}, current_state_at=at(hours=0))
    b.commit("gone", "c", 0, 5, at(hours=0, minutes=5))
    b.commit("gone", "c", 1, 5, at(hours=0, minutes=5))
    b.group_record("gone", at(hours=2), members={}, current_state_at=at(hours=2), generation=2)
    b.offset_tombstone("gone", "c", 0, at(hours=2, minutes=30))
    b.offset_tombstone("gone", "c", 1, at(hours=3, minutes=1))


def _audited(b: BronzeBuilder) -> list[dict]:
    """Day 1: the project's own OffsetDeletes and DeleteGroups; returns their cleanup_audit rows."""
    deletes = []

    def audited(action: str, group: str, partition: int | None, minutes: float) -> None:
        deletes.append({"audit_id": f"a{len(deletes)}", "plan_id": None, "action_id": None, "origin": "cli",
                        "action": action, "group": group, "topic": None if partition is None else "t",
                        "partition": partition, "outcome": "deleted", "error": None, "detail": None,
                        "bootstrap_servers": "b:9092", "requested_by": "ops",
                        "at": at(days=1, minutes=minutes), "intent_id": None})

    # its tombstone would pass for an expiration (2 h > 60 min), but the audit shows the project
    # sent an OffsetDelete: a deletion
    b.commit("audited", "t", 0, 1, at(days=1, hours=1))
    b.offset_tombstone("audited", "t", 0, at(days=1, hours=3))
    audited("OffsetDelete", "audited", 0, 3 * 60 + 1)
    # the offset had expired 3 h before the OffsetDelete: Kafka wrote no tombstone and counted 0
    b.commit("audited", "t", 1, 1, at(days=1))
    b.offset_tombstone("audited", "t", 1, at(days=1, hours=2))
    audited("OffsetDelete", "audited", 1, 5 * 60)
    # a tombstone of a pending transactional offset (no committed one before it): deleteOffsets
    # counts every tombstone it writes
    b.offset_tombstone("audited", "t", 2, at(days=1, hours=6))
    audited("OffsetDelete", "audited", 2, 6 * 60 + 1)
    # a partition the log never showed: the snapshot before the request held an offset there
    # (a cluster seen only through the admin API) -> counts; another one it did not hold -> 0
    b.snapshot(at(days=1, hours=4), retention_minutes=60,
               offsets=[{"group": "audited", "topic": "t", "partition": 7, "committed_offset": 3}])
    audited("OffsetDelete", "audited", 7, 5 * 60)
    audited("OffsetDelete", "audited", 9, 6 * 60 + 30)
    # the project's DeleteGroups: its tombstone (an expiration by the rules alone) counts in
    # neither meter
    b.commit("wiped", "t", 0, 1, at(days=1))
    b.offset_tombstone("wiped", "t", 0, at(days=1, hours=4))
    audited("DeleteGroups", "wiped", None, 4 * 60 + 1)
    return deletes


def _back_to_classic(b: BronzeBuilder) -> None:
    """Day 2: groups that were KIP-848 groups, then classic again (GroupMetadataManager
    convertToClassicGroup writes the KIP-848 group's tombstones, then the classic record)."""
    # Stable classic group subscribed to `a` when `a` is deleted: not a candidate -> deletion
    b.kip848_group("reverted", at(days=2), epoch=4)
    b.commit("reverted", "a", 0, 5, at(days=2))
    b.kip848_group("reverted", at(days=2, hours=1), tombstone=True)
    b.group_record("reverted", at(days=2, hours=1), members={"m1": ["a"]}, current_state_at=at(days=2, hours=1),
                   generation=5)
    b.offset_tombstone("reverted", "a", 0, at(days=2, hours=3))
    # Empty classic group from 2 h on, deleted 10 min later: base = when it became Empty -> deletion
    b.kip848_group("reverted_empty", at(days=2), epoch=2)
    b.commit("reverted_empty", "b", 0, 5, at(days=2))
    b.kip848_group("reverted_empty", at(days=2, hours=1), tombstone=True)
    b.group_record("reverted_empty", at(days=2, hours=1), members={"m1": ["b"]}, current_state_at=at(days=2, hours=1),
                   generation=3)
    b.group_record("reverted_empty", at(days=2, hours=2), members={}, current_state_at=at(days=2, hours=2),
                   generation=4)
    b.offset_tombstone("reverted_empty", "b", 0, at(days=2, hours=2, minutes=10))
    # still a KIP-848 group: candidates with base = commit time -> expiration
    b.kip848_group("modern", at(days=2), epoch=1)
    b.commit("modern", "c", 0, 5, at(days=2))
    b.offset_tombstone("modern", "c", 0, at(days=2, hours=2))


def _rebalances(b: BronzeBuilder) -> None:
    """Day 3: completed rebalances around conversions between the classic and KIP-848 protocols."""
    # a rebalance (generation 1); upgraded; downgraded (the record convertToClassicGroup writes
    # with the KIP-848 tombstones, not a rebalance); the rebalance after it (generation 3)
    b.group_record("downgraded", at(days=3), members={"m1": ["a"]}, generation=1)
    b.group_tombstone("downgraded", at(days=3, hours=1))
    b.kip848_group("downgraded", at(days=3, hours=1), epoch=2)
    b.kip848_group("downgraded", at(days=3, hours=2), tombstone=True)
    b.group_record("downgraded", at(days=3, hours=2), members={"m1": ["a"], "m2": ["a"]}, generation=2)
    b.group_record("downgraded", at(days=3, hours=2, minutes=5), members={"m1": ["a"], "m2": ["a"]}, generation=3)
    # a rebalance (generation 7); upgraded; the empty KIP-848 group deleted when a classic member
    # joins (maybeDeleteEmptyConsumerGroup), whose SyncGroup completes generation 1 of a new group
    b.group_record("recreated", at(days=3), members={"m1": ["a"]}, generation=7)
    b.group_tombstone("recreated", at(days=3, hours=1))
    b.kip848_group("recreated", at(days=3, hours=1), epoch=8)
    b.kip848_group("recreated", at(days=3, hours=3), tombstone=True)
    b.group_record("recreated", at(days=3, hours=3, minutes=1), members={"m1": ["a"]}, generation=1)


@pytest.fixture(scope="module")
def lake(spark, module_lake):
    b = BronzeBuilder()
    _rules(b)
    audit = _audited(b)
    _back_to_classic(b)
    _rebalances(b)
    b.write(module_lake)
    module_lake.append("cleanup_audit", pa.Table.from_pylist(audit))
    run_models(spark, module_lake, at(days=5), select=needed_for("coordinator_metrics"),
               offsets_retention_minutes_fallback=60, metrics_bucket_minutes=1440)
    return module_lake


@pytest.fixture(scope="module")
def days(lake):
    return rows_by(lake, "coordinator_metrics", "bucket_start_at")


def test_tombstones_are_classified_by_the_rules(days):
    row = days[RULES]
    assert (row["count_offset_expirations"], row["count_offset_deletions"]) == (4, 3)


def test_commits_and_completed_rebalances_are_counted(days):
    row = days[RULES]
    assert row["count_offset_commits"] == 3 + 2 + 2  # solo, stable, gone
    # a new generation with members: stable 1 and 2, gone 1 (not the static rejoin, not Empty)
    assert row["count_group_completed_rebalances"] == 3
    assert row["bucket_minutes"] == 1440


def test_deletions_the_project_performed_count_as_kafka_counts_them(days):
    """Its OffsetDeletes count per tombstone written (deleteOffsets), an audited OffsetDelete the
    log does not show only where the partition had an offset, its DeleteGroups in neither meter;
    the offset that had expired before the OffsetDelete stays an expiration."""
    row = days[AUDIT]
    assert (row["count_offset_expirations"], row["count_offset_deletions"]) == (1, 1 + 1 + 1)


def test_a_group_back_on_the_classic_protocol_is_judged_by_the_classic_rules(lake, days):
    removals = rows_by(lake, "offset_removals", "group_id")
    assert removals["reverted"]["base_at_ms"] is None  # Stable, subscribed: not a candidate
    assert removals["reverted_empty"]["base_at_ms"] == ms(at(days=2, hours=2))
    assert removals["modern"]["base_at_ms"] == ms(BACK_TO_CLASSIC)  # the commit time
    row = days[BACK_TO_CLASSIC]
    assert (row["count_offset_expirations"], row["count_offset_deletions"]) == (1, 2)
    # the records the downgrades wrote are not completed rebalances, nor is going Empty
    assert row["count_group_completed_rebalances"] == 0


def test_a_downgrade_to_classic_is_not_a_completed_rebalance(days):
    # downgraded: generations 1 and 3; recreated: generation 7, then 1 of the new group
    assert days[REBALANCES]["count_group_completed_rebalances"] == 2 + 2
