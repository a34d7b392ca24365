"""Kafka's verdicts on offsets whose times the lake's timestamps cannot hold.

Kafka stores any int64 milliseconds: commit time + a client's retention as the legacy expire
timestamp (a retention of Long.MAX_VALUE wraps to about -9.2e18), an old client's own commit time,
any current state time. Ingest lands such a time with its timestamp column null and the
milliseconds in `<column>_out_of_range_ms` (offsets_platform.lake.timestamp_range); the models must
still say what OffsetExpirationConditionImpl.isOffsetExpired says, in Java's long arithmetic,
which `kafka_expired` below restates. One lake holds one group per case.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from offsets_platform.models import default_project
from offsets_platform.quality import specs_for_model, validate
from tests.models.bronze_builder import BronzeBuilder, at, ms
from tests.models.conftest import needed_for, rows_by, run_models

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
RETENTION_MS = 86_400_000  # offsets.retention.minutes = 1440, from the snapshot
AS_OF = at(days=3)
COMMITTED = ms(at(hours=1))


def java_long(value: int) -> int:
    """`value` as Java's long arithmetic leaves it (two's complement, 64 bits)."""
    return (value + 2**63) % 2**64 - 2**63


def kafka_expired(now_ms: int, expire_ms: int | None, base_ms: int | None) -> bool:
    """OffsetExpirationConditionImpl.isOffsetExpired, with Java's overflow."""
    if expire_ms is not None:
        return now_ms >= expire_ms
    return java_long(now_ms - base_ms) >= RETENTION_MS


# The expire timestamp Kafka 4.3 stores for a commit with retention Long.MAX_VALUE: it adds the
# retention to the commit time in a long (OffsetMetadataManager.expireTimestampMs).
WRAPPED_EXPIRE = java_long(COMMITTED + LONG_MAX)
FAR_FUTURE_EXPIRE = COMMITTED + 9_300_000_000_000_000  # past what microsecond timestamps hold
AFTER_YEAR_9999 = 300_000_000_000_000  # year 11476: microseconds hold it, Python's datetime does not


@pytest.fixture(scope="module")
def lake(spark, module_lake):
    b = BronzeBuilder()
    # Standalone committers (offsets only): legacy expire timestamps a client's retention made.
    b.commit_ms("legacy-wrapped", "orders", 0, 1, COMMITTED, expire_ms=WRAPPED_EXPIRE)
    b.commit_ms("legacy-far-future", "orders", 0, 2, COMMITTED, expire_ms=FAR_FUTURE_EXPIRE)
    b.commit_ms("legacy-after-9999", "orders", 0, 3, COMMITTED, expire_ms=AFTER_YEAR_9999)
    b.commit_ms("legacy-negative-retention", "orders", 0, 4, COMMITTED, expire_ms=COMMITTED - 2)
    # Commit times an old client chose (no expire timestamp: base = commit time).
    b.commit_ms("commit-far-past", "orders", 0, 5, -9_000_000_000_000_000_000, written_at=at(hours=1))
    b.commit_ms("commit-long-min", "orders", 0, 6, LONG_MIN, written_at=at(hours=1))
    b.commit_ms("commit-long-max", "orders", 0, 7, LONG_MAX, written_at=at(hours=1))
    # An Empty classic group whose current state time is far in the past: its base, not the commit.
    b.group_record("empty-state-far-past", at(hours=1), members={}, current_state_ms=-(2**62))
    b.commit_ms("empty-state-far-past", "orders", 0, 8, ms(at(days=2, hours=23)))
    # A far-future commit time the latest snapshot also shows: the log's time still holds.
    b.commit_ms("both-far-future", "orders", 0, 9, FAR_FUTURE_EXPIRE, written_at=at(hours=1))
    # A record whose own timestamp (a mirror's producer chose it) is out of range.
    b.commit_ms("record-time-out-of-range", "orders", 0, 10, COMMITTED, record_ms=-9_300_000_000_000_000)
    # Offsets removed by a tombstone: Kafka expired the wrapped one, not the far-future one.
    b.commit_ms("removed-wrapped", "orders", 0, 11, COMMITTED, expire_ms=WRAPPED_EXPIRE)
    b.offset_tombstone("removed-wrapped", "orders", 0, at(hours=2))
    b.commit_ms("removed-far-future", "orders", 0, 12, COMMITTED, expire_ms=FAR_FUTURE_EXPIRE)
    b.offset_tombstone("removed-far-future", "orders", 0, at(hours=2))
    b.snapshot(at(days=2), retention_minutes=RETENTION_MS // 60_000,
               groups=[{"group": "both-far-future", "state": "Empty", "protocol_type": "", "protocol": "",
                        "member_count": 0}],
               offsets=[{"group": "both-far-future", "topic": "orders", "partition": 0, "committed_offset": 9}])
    b.write(module_lake)
    run_models(spark, module_lake, AS_OF, select=needed_for("coordinator_metrics", "expirable_offsets"))
    return module_lake


@pytest.fixture(scope="module")
def expirable(lake):
    return {group: row for (group, _, _), row in rows_by(lake, "expirable_offsets", "group_id", "topic", "partition_id").items()}


@pytest.mark.parametrize("group,expire_ms", [
    ("legacy-wrapped", WRAPPED_EXPIRE), ("legacy-far-future", FAR_FUTURE_EXPIRE),
    ("legacy-after-9999", AFTER_YEAR_9999), ("legacy-negative-retention", COMMITTED - 2)])
def test_a_legacy_expire_timestamp_gets_kafkas_verdict_whatever_its_value(expirable, group, expire_ms):
    row = expirable[group]
    assert row["rule"] == "legacy_expire_timestamp"
    assert row["is_expired"] is kafka_expired(ms(AS_OF), expire_ms, None)
    assert row["expires_at_ms"] == expire_ms
    in_range = group == "legacy-negative-retention"
    assert row["expires_at"] == (at(hours=1) - timedelta(milliseconds=2) if in_range else None)
    # a legacy expire timestamp replaces base + retention: no base time (and none after expires_at)
    assert row["base_at"] is None and row["base_at_ms"] is None


def test_the_wrapped_expire_timestamp_is_expired_and_the_far_future_one_is_not(expirable):
    assert expirable["legacy-wrapped"]["is_expired"] is True
    assert expirable["legacy-wrapped"]["hours_until_expiry"] < 0
    assert expirable["legacy-far-future"]["is_expired"] is False
    assert expirable["legacy-far-future"]["hours_until_expiry"] > 0
    assert expirable["legacy-after-9999"]["is_expired"] is False


@pytest.mark.parametrize("group,commit_ms", [
    ("commit-far-past", -9_000_000_000_000_000_000), ("commit-long-min", LONG_MIN), ("commit-long-max", LONG_MAX)])
def test_an_old_clients_commit_time_is_the_base_with_javas_arithmetic(expirable, group, commit_ms):
    row = expirable[group]
    assert (row["rule"], row["is_expired"]) == ("standalone", kafka_expired(ms(AS_OF), None, commit_ms))
    assert (row["committed_at"], row["estimated_committed_at"], row["base_at"]) == (None, None, None)
    assert row["estimated_committed_at_ms"] == row["base_at_ms"] == commit_ms


def test_commit_times_beyond_javas_arithmetic_never_expire(expirable):
    far_past = expirable["commit-far-past"]
    assert far_past["is_expired"] is True
    assert far_past["expires_at_ms"] == -9_000_000_000_000_000_000 + RETENTION_MS
    # now - Long.MIN_VALUE overflows to a negative number in Java: never >= the retention
    assert expirable["commit-long-min"]["is_expired"] is False
    assert expirable["commit-long-min"]["expires_at_ms"] is None
    # Long.MAX_VALUE + retention is past any long: never
    assert expirable["commit-long-max"]["is_expired"] is False
    assert expirable["commit-long-max"]["expires_at_ms"] is None


def test_an_empty_groups_state_time_out_of_range_is_still_its_base(expirable):
    row = expirable["empty-state-far-past"]
    assert (row["rule"], row["group_state"]) == ("empty_group", "Empty")
    # from the commit (a day before as_of, minus an hour) it would not have expired yet
    assert row["is_expired"] is kafka_expired(ms(AS_OF), None, -(2**62)) is True
    assert row["base_at_ms"] == -(2**62) and row["base_at"] is None


def test_a_log_commit_time_out_of_range_is_not_replaced_by_the_snapshots_bound(expirable):
    row = expirable["both-far-future"]
    assert row["commit_time_source"] == "log"
    assert row["is_expired"] is False, "the snapshot's time (a day before as_of) would have expired it"
    assert row["estimated_committed_at"] is None and row["estimated_committed_at_ms"] == FAR_FUTURE_EXPIRE


def test_a_record_timestamp_out_of_range_leaves_the_verdict_to_the_commit_time(expirable):
    row = expirable["record-time-out-of-range"]
    assert row["rule"] == "standalone" and row["estimated_committed_at_ms"] == COMMITTED
    assert row["is_expired"] is kafka_expired(ms(AS_OF), None, COMMITTED) is True


def test_tombstones_are_classified_with_the_removed_commits_milliseconds(lake):
    (bucket,) = [row for row in lake.read_arrow("coordinator_metrics").to_pylist()
                 if row["bucket_start_at"] == at(hours=2)]
    # Kafka expired the wrapped one (its check holds at the tombstone's time); the other was deleted
    assert (bucket["count_offset_expirations"], bucket["count_offset_deletions"]) == (1, 1)
    removals = rows_by(lake, "offset_removals", "group_id")
    assert removals["removed-wrapped"]["legacy_expires_at_ms"] == WRAPPED_EXPIRE
    assert removals["removed-wrapped"]["legacy_expires_at"] is None
    assert removals["removed-far-future"]["legacy_expires_at_ms"] == FAR_FUTURE_EXPIRE


# the models these times flow through (the others never read them)
MODELS_WITH_KAFKA_TIMES = ("log_offset_state", "offset_removals", "committed_offsets", "group_state_history",
                           "group_state", "expirable_offsets", "coordinator_metrics")


def test_no_blocking_check_fails_on_these_times(spark, lake):
    failed = {}
    for name in MODELS_WITH_KAFKA_TIMES:
        model = default_project().model(name)
        result = validate(lake.spark_read(spark, model.name), model.name, specs_for_model(model))
        if result.failed_errors:
            failed[model.name] = result.summary()
    assert failed == {}
