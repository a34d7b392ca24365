"""Tombstone classification and the KIP-496 counters, on a hand-built log.

offsets.retention.minutes is 60 (no snapshot: the fallback variable). Each tombstone's expected
class follows the rule: an expiration when the offset was a candidate by its group's state at
that moment and had expired by the tombstone's time, otherwise a deletion.
"""

from __future__ import annotations

import pytest

from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import run_models

pytestmark = pytest.mark.fast  # make test-fast


@pytest.fixture(scope="module")
def metrics(spark, module_lake):
    b = BronzeBuilder()
    expirations = deletions = 0
    # standalone: 2 h after the commit is past 60 min -> expiration; 10 min -> deletion
    b.commit("solo", "t", 0, 1, at(hours=1))
    b.offset_tombstone("solo", "t", 0, at(hours=3))
    expirations += 1
    b.commit("solo", "t", 1, 1, at(hours=1))
    b.offset_tombstone("solo", "t", 1, at(hours=1, minutes=10))
    deletions += 1
    # legacy expire timestamp reached after 5 min -> expiration although retention is 60 min
    b.commit("solo", "t", 2, 1, at(hours=1), expire_at=at(hours=1, minutes=5))
    b.offset_tombstone("solo", "t", 2, at(hours=1, minutes=10))
    expirations += 1
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
    deletions += 1
    b.offset_tombstone("stable", "b", 0, at(hours=4))
    expirations += 1
    # Empty group from 2 h on: base = current_state_timestamp, not the commit time
    b.group_record("gone", at(hours=0), members={"m1": ["c"]}, current_state_at=at(hours=0))
    b.commit("gone", "c", 0, 5, at(hours=0, minutes=5))
    b.commit("gone", "c", 1, 5, at(hours=0, minutes=5))
    b.group_record("gone", at(hours=2), members={}, current_state_at=at(hours=2), generation=2)
    b.offset_tombstone("gone", "c", 0, at(hours=2, minutes=30))
    deletions += 1
    b.offset_tombstone("gone", "c", 1, at(hours=3, minutes=1))
    expirations += 1
    b.write(module_lake)
    run_models(spark, module_lake, at(days=1), offsets_retention_minutes_fallback=60, metrics_bucket_minutes=1440)
    (row,) = module_lake.read_arrow("coordinator_metrics").to_pylist()
    return row, expirations, deletions


def test_tombstones_are_classified_by_the_rules(metrics):
    row, expirations, deletions = metrics
    assert (row["count_offset_expirations"], row["count_offset_deletions"]) == (expirations, deletions) == (4, 3)


def test_commits_and_completed_rebalances_are_counted(metrics):
    row, _, _ = metrics
    assert row["count_offset_commits"] == 3 + 2 + 2  # solo, stable, gone
    # a new generation with members: stable 1 and 2, gone 1 (not the static rejoin, not Empty)
    assert row["count_group_completed_rebalances"] == 3
    assert row["bucket_start_at"] == at() and row["bucket_minutes"] == 1440


def test_deletions_the_project_performed_are_known_from_the_audit(spark, tmp_path):
    """A tombstone that would pass for an expiration is a deletion when the audit shows the project
    sent it, and an audited OffsetDelete the log does not show still counts."""
    import pyarrow as pa

    from offsets_platform.models.project import lake_for_models

    lake = lake_for_models(tmp_path / "lake")
    b = BronzeBuilder()
    b.commit("solo", "t", 0, 1, at(hours=1))
    b.offset_tombstone("solo", "t", 0, at(hours=3))  # 2 h > 60 min: an expiration by the rules alone
    b.write(lake)
    audit = [{"audit_id": name, "plan_id": None, "action_id": None, "origin": "cli", "action": "OffsetDelete",
              "group": "solo", "topic": "t", "partition": partition, "outcome": "deleted", "error": None,
              "detail": None, "bootstrap_servers": "b:9092", "requested_by": "ops", "at": when, "intent_id": None}
             for name, partition, when in (("a1", 0, at(hours=3, minutes=1)), ("a2", 7, at(hours=5)))]
    lake.append("cleanup_audit", pa.Table.from_pylist(audit))
    run_models(spark, lake, at(days=1), offsets_retention_minutes_fallback=60, metrics_bucket_minutes=1440)
    (row,) = lake.read_arrow("coordinator_metrics").to_pylist()
    assert (row["count_offset_expirations"], row["count_offset_deletions"]) == (0, 2)
