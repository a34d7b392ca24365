"""The models end to end on the embedded broker: the live workload's real groups, snapshotted
every second or so while it runs, then every model run on Spark.

Only snapshots are taken here, never ingest, so every fact comes from the admin API as on a
managed cluster that hides `__consumer_offsets` (commit times and "Empty since" are the
snapshots' bounds).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.ingest.snapshots import snapshot_cluster
from proving_ground.workload.live import run_live_workload
from tests.models.conftest import rows_by, run_models

RETENTION = timedelta(minutes=10080)  # Kafka's default offsets.retention.minutes, which the broker reports


def in_ms(moment: datetime) -> datetime:
    """A time at Kafka's precision: the rules compute in milliseconds, snapshot times have micros."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@pytest.fixture(scope="module")
def live(spark, broker, connection, module_lake):
    outcome = {}

    def workload():
        outcome["workload"] = run_live_workload(broker.bootstrap_servers, seed=11, scale=0.2, emit=lambda line: None)

    snapshot_cluster(connection, module_lake, emit=lambda line: None)  # before anything is produced
    thread = threading.Thread(target=workload)
    thread.start()
    while thread.is_alive():
        time.sleep(1.0)
        snapshot_cluster(connection, module_lake, emit=lambda line: None)
    thread.join()
    workload = outcome["workload"]
    try:
        snapshot_cluster(connection, module_lake, emit=lambda line: None)
        run_models(spark, module_lake, as_of=datetime.now(timezone.utc))
        yield workload, module_lake
    finally:
        workload.stop()


def _snapshot_rows(lake, group: str) -> tuple[list[tuple], dict[tuple, int | None]]:
    """The snapshots' log starts, (snapshot time, topic, partition, log start) in time order, and
    the group's committed offsets by (snapshot time, topic, partition)."""
    at = {r["snapshot_id"]: r["snapshot_at"] for r in lake.read_arrow("broker_configs").to_pylist()}
    starts = sorted((at[r["snapshot_id"]], r["topic"], r["partition"], r["log_start_offset"])
                    for r in lake.read_arrow("log_offset_snapshots").to_pylist() if r["snapshot_id"] in at)
    snapshot_offsets = {(at[r["snapshot_id"]], r["topic"], r["partition"]): r["committed_offset"]
                        for r in lake.read_arrow("committed_offset_snapshots").to_pylist()
                        if r["group"] == group and r["snapshot_id"] in at}
    return starts, snapshot_offsets


def _expected_losses(lake, group: str) -> dict[tuple[str, int], int]:
    """KIP-490 worked out in Python from the snapshot tables and the log, at most: at each move of
    a partition's log start between two snapshots, [max(previous start, lowest offset the group
    held meanwhile), new start) may have been lost. The offsets it held are the earlier
    snapshot's, every commit the log shows in between and the later snapshot's; the group watches
    the partitions where it held one."""
    starts, snapshot_offsets = _snapshot_rows(lake, group)
    commits = [(r["source_timestamp"], r["topic"], r["partition"], r["offset"])
               for r in lake.read_arrow("offset_commit_records").to_pylist()
               if r["group"] == group and not r["tombstone"]]
    previous, lost = {}, {}
    for when, topic, partition, start in starts:
        key = (topic, partition)
        if key in previous and start > previous[key][1]:
            since, before = previous[key]
            held = [snapshot_offsets.get((since, *key)), snapshot_offsets.get((when, *key))]
            held += [offset for t, *k, offset in commits if tuple(k) == key and since < t <= when]
            held = [offset for offset in held if offset is not None]
            if held:
                lost[key] = lost.get(key, 0) + max(0, start - max(before, min(held)))
        previous[key] = (when, start)
    return {key: count for key, count in lost.items() if count}


def _first_log_start_seen_with_an_offset(lake, group: str) -> dict[tuple[str, int], int]:
    """Per partition, its log start in the first snapshot that also holds the group's offset there."""
    starts, snapshot_offsets = _snapshot_rows(lake, group)
    first = {}
    for when, topic, partition, start in starts:
        if (topic, partition) not in first and snapshot_offsets.get((when, topic, partition)) is not None:
            first[(topic, partition)] = start
    return first


def test_slow_group_appears_in_unconsumed_messages_with_the_right_count(live):
    workload, lake = live
    slow = workload.groups["billing-slow"]
    facts = [r for r in lake.read_arrow("unconsumed_messages").to_pylist() if r["group_id"] == slow.group]
    assert facts, "retention deleted messages the slow group never read"
    by_partition = {}
    for row in facts:
        key = (row["topic"], row["partition_id"])
        by_partition[key] = by_partition.get(key, 0) + row["count_lost"]
    assert by_partition == _expected_losses(lake, slow.group)
    # at least what lies between its final committed offsets and the final log start, from where
    # the snapshots first saw both: a log start that moved before any snapshot saw the group's offset
    # on that partition (retention.ms is 3 s there; a snapshot takes seconds on a loaded machine)
    # moved unseen
    lag = rows_by(lake, "consumer_lag", "group_id", "topic", "partition_id")
    first_seen = _first_log_start_seen_with_an_offset(lake, slow.group)
    for (topic, partition), committed in slow.committed.items():
        from_offset = max(committed, first_seen.get((topic, partition), committed))
        below = max(0, lag[(slow.group, topic, partition)]["log_start_offset"] - from_offset)
        assert by_partition.get((topic, partition), 0) >= below
    assert any(lag[(slow.group, t, p)]["is_below_log_start"] for t, p in slow.committed)


def test_changed_subscription_leaves_eligible_stale_offsets(live):
    workload, lake = live
    changed = workload.changed_subscription
    rows = [r for r in lake.read_arrow("expirable_offsets").to_pylist() if r["group_id"] == changed["group"]]
    stale = [r for r in rows if r["topic"] == changed["left_behind_topic"]]
    kept = [r for r in rows if r["topic"] == changed["kept_topic"]]
    assert stale and kept
    assert {(r["group_state"], r["rule"]) for r in stale} == {("Stable", "unsubscribed_topic")}
    for row in stale:
        assert row["expires_at"] == in_ms(row["estimated_committed_at"]) + RETENTION
    assert {r["rule"] for r in kept} == {"not_eligible"}


def test_stopped_group_is_empty_and_expires_retention_after_it_went_empty(live):
    workload, lake = live
    group = workload.groups["reports-stopped"].group
    state = rows_by(lake, "group_state", "group_id")[group]
    assert (state["state"], state["classification"]) == ("Empty", "consumer")
    # the first snapshot that saw it Empty after it last was not
    seen = sorted((r["snapshot_at"], r["state"]) for r in lake.read_arrow("group_snapshots").to_pylist()
                  if r["group"] == group)
    last_not_empty = max((at for at, s in seen if s != "Empty"), default=None)
    empty_since = min(at for at, s in seen if s == "Empty" and (last_not_empty is None or at > last_not_empty))
    rows = [r for r in lake.read_arrow("expirable_offsets").to_pylist() if r["group_id"] == group]
    assert rows
    for row in rows:
        assert (row["rule"], row["base_at"]) == ("empty_group", in_ms(empty_since))
        assert row["expires_at"] == in_ms(empty_since) + RETENTION


def test_other_groups_get_their_rules(live):
    workload, lake = live
    rules = {}
    for row in lake.read_arrow("expirable_offsets").to_pylist():
        rules.setdefault(row["group_id"], set()).add(row["rule"])
    assert rules[workload.groups["orders-active"].group] == {"not_eligible"}
    assert rules[workload.groups["ledger-standalone"].group] == {"standalone"}
    assert rules[workload.groups["connect-sink"].group] == {"not_eligible"}
    subscriptions = {(r["group_id"], r["topic"]) for r in lake.read_arrow("group_subscriptions").to_pylist()}
    active = workload.groups["orders-active"]
    assert {(active.group, t) for t in active.subscribed_topics} <= subscriptions


def test_consumer_status_leaves_a_changed_subscription_out_and_judges_a_stopped_group(live):
    # On the real groups: the topic the changed subscription left behind still has lag, but the
    # group has members that subscribe elsewhere, so those partitions are ABANDONED (Burrow would
    # say STOP and make the group ERR). The stopped group is Empty: it has no subscriptions, so
    # its partitions are judged by the lag rules, never set aside.
    workload, lake = live
    status = rows_by(lake, "consumer_status", "group_id", "topic", "partition_id")
    changed = workload.changed_subscription
    left = [r for (g, t, _), r in status.items() if g == changed["group"] and t == changed["left_behind_topic"]]
    assert [r for r in left if r["current_lag"] > 0], "the left-behind topic has lag"
    assert {(r["status"], r["rule"]) for r in left if r["current_lag"] > 0} == {("ABANDONED", "not_subscribed")}
    stopped = [r for (g, _, _), r in status.items() if g == workload.groups["reports-stopped"].group]
    assert stopped and not [r for r in stopped if r["rule"] == "not_subscribed"]
