"""The generated history obeys the group coordinator's rules (docs/kafka-semantics.md, "Offset
expiration")."""

from collections import defaultdict

import pytest

from proving_ground.workload import RETENTION_MS

pytestmark = pytest.mark.fast  # make test-fast


DAY = 86_400_000


def _group_records(decoded, group):
    return [(r, d) for r, d in decoded if d["group"] == group and d["record_type"] == "group_metadata"]


def _commits(decoded, group):
    return [(r, d) for r, d in decoded if d["group"] == group and d["record_type"] == "offset_commit"]


def test_changed_subscription_leaves_old_offsets_behind(decoded_20k):
    group = "search-changed-subscription"
    records = [(r, d) for r, d in _group_records(decoded_20k, group) if not d["tombstone"]]
    last_record, last = records[-1]
    subscribed = {t for m in last["members"] for t in m["subscription"]["topics"]}
    assert last["members"] and "search-clicks" not in subscribed and "search-queries" in subscribed
    assert any("search-clicks" in m["subscription"]["topics"] for m in records[0][1]["members"])
    clicks = [(r, d) for r, d in _commits(decoded_20k, group) if d["topic"] == "search-clicks"]
    written = [r.timestamp_ms for r, d in clicks if not d["tombstone"]]
    assert written and max(written) < last_record.timestamp_ms  # committed before, never after
    # KIP-496: a Stable consumer group's unsubscribed offsets expire 7 days after their last commit
    expired = [r.timestamp_ms for r, d in clicks if d["tombstone"]]
    assert expired and min(expired) >= max(written) + RETENTION_MS


def test_stopped_group_ends_empty_with_a_state_timestamp(decoded_20k):
    records = [(r, d) for r, d in _group_records(decoded_20k, "reports-stopped") if not d["tombstone"]]
    record, last = records[-1]
    assert last["members"] == [] and last["protocol"] is None and last["leader"] is None
    assert last["protocol_type"] == "consumer"
    assert last["current_state_timestamp"] == record.timestamp_ms
    assert last["generation"] == records[-2][1]["generation"] + 1


def test_empty_groups_lose_offsets_only_after_retention_or_deletion(decoded_20k):
    empty_since, deleted_at, checked = {}, defaultdict(set), 0
    for record, d in decoded_20k:
        if d["record_type"] == "group_metadata" and d["tombstone"]:
            deleted_at[d["group"]].add(record.timestamp_ms)
    for record, d in decoded_20k:
        group = d["group"]
        if d["record_type"] == "group_metadata":
            if not d["tombstone"] and not d["members"]:
                empty_since[group] = d["current_state_timestamp"]
            else:
                empty_since.pop(group, None)
        elif d["record_type"] == "offset_commit" and d["tombstone"] and group in empty_since:
            if record.timestamp_ms < empty_since[group] + RETENTION_MS:
                # only DeleteGroups removes an Empty group's offsets early, with the group record
                assert record.timestamp_ms in deleted_at[group], (group, record)
            else:
                checked += 1
    assert checked >= 2  # at least reports-stopped's two partitions expired by the rule


def test_expired_empty_group_record_is_tombstoned_after_its_offsets(decoded_20k):
    group = "reports-stopped"
    records = _group_records(decoded_20k, group)
    assert records[-1][1]["tombstone"]
    empty_at = records[-2][1]["current_state_timestamp"]
    offset_tombstones = [r.timestamp_ms for r, d in _commits(decoded_20k, group) if d["tombstone"]]
    assert len(offset_tombstones) == 2
    assert empty_at + RETENTION_MS <= min(offset_tombstones) <= records[-1][0].timestamp_ms
    # the coordinator's cleanup runs every 10 minutes
    assert records[-1][0].timestamp_ms - (empty_at + RETENTION_MS) < 10 * 60_000


def test_commit_timestamps_per_key_never_decrease(decoded_20k):
    last = {}
    for record, d in decoded_20k:
        if d["record_type"] == "offset_commit" and not d["tombstone"]:
            assert d["commit_timestamp"] == record.timestamp_ms
            key = (d["group"], d["topic"], d["partition"])
            assert d["commit_timestamp"] >= last.get(key, 0)
            last[key] = d["commit_timestamp"]


def test_stable_subscribed_groups_never_lose_offsets(decoded_20k):
    for group in ("orders-active", "billing-slow", "connect-sink", "payments-kip848"):
        commits = _commits(decoded_20k, group)
        assert commits and not any(d["tombstone"] for _, d in commits), group


def test_orders_active_rebalances_with_increasing_generations(decoded_20k):
    records = [d for _, d in _group_records(decoded_20k, "orders-active")]
    generations = [d["generation"] for d in records]
    assert generations == list(range(1, len(records) + 1)) and len(records) >= 5
    for d in records:
        assert d["protocol"] == "range" and d["leader"] in {m["member_id"] for m in d["members"]}
        for m in d["members"]:
            assert m["subscription"]["version"] == 3 and m["subscription"]["rack_id"]
            assert m["client_id"].startswith("consumer-orders-active-") and m["client_host"].startswith("/10.")
        assigned = sorted((t, p) for m in d["members"] for t, ps in m["assignment"]["partitions"].items()
                          for p in ps)
        assert assigned == [("orders", p) for p in range(4)] + [("orders-retry", 0)]
        assert d["current_state_timestamp"] is not None


def test_standalone_group_has_offsets_but_no_group_record(decoded_20k):
    assert not _group_records(decoded_20k, "ledger-standalone")
    commits = _commits(decoded_20k, "ledger-standalone")
    last_commit = max(r.timestamp_ms for r, d in commits if d["partition"] == 2 and not d["tombstone"])
    tombstones = [(r, d) for r, d in commits if d["tombstone"]]
    assert [d["partition"] for _, d in tombstones] == [2]
    assert tombstones[0][0].timestamp_ms >= last_commit + RETENTION_MS


def test_legacy_commits_and_expiry_by_expire_timestamp(decoded_20k):
    commits = _commits(decoded_20k, "inventory-legacy")
    kinds = {(d["key_version"], d["value_version"]) for _, d in commits if not d["tombstone"]}
    assert kinds == {(0, 0), (1, 2), (1, 1)}  # a legacy key (type 0) only ever with value v0
    v1 = [d for _, d in commits if d["value_version"] == 1]
    assert all(d["expire_timestamp"] == d["commit_timestamp"] + DAY for d in v1)
    tombstones = [r.timestamp_ms for r, d in commits if d["tombstone"]]
    assert len(tombstones) == 2 and min(tombstones) >= max(d["expire_timestamp"] for d in v1)


def test_connect_group_has_opaque_member_bytes(decoded_20k):
    records = [d for _, d in _group_records(decoded_20k, "connect-sink")]
    assert [len(d["members"]) for d in records] == [2, 3]
    for d in records:
        assert d["protocol_type"] == "connect" and d["protocol"] == "sessioned"
        for m in d["members"]:
            assert m["subscription"] is None and m["subscription_bytes"] and m["assignment_bytes"]


def test_kip848_group_records_and_member_tombstones(decoded_20k):
    records = [(r, d) for r, d in decoded_20k if d["group"] == "payments-kip848"
               and d["record_type"] != "offset_commit"]
    by_type = defaultdict(list)
    for _, d in records:
        by_type[d["key_version"]].append(d)
    assert set(by_type) == {3, 4, 5, 6, 7, 8}
    epochs = [d["epoch"] for d in by_type[3]]
    assert epochs == sorted(epochs) and len(epochs) == 4
    joined = [d["member_id"] for d in by_type[5] if not d["tombstone"]]
    left = {d["key_version"]: d["member_id"] for _, d in records if d["tombstone"]}
    assert set(left) == {5, 7, 8} and len(set(left.values())) == 1 and left[5] == joined[0]
    assert all(d["subscribed_topic_names"] == ["payments"] for d in by_type[5] if not d["tombstone"])
    states = {d["state"] for d in by_type[8] if not d["tombstone"]}
    assert 0 in states and states <= {0, 1, 2}
    topic_ids = {t["topic_id"] for d in by_type[4] for t in d["topics"]}
    assigned = {tp["topic_id"] for d in by_type[8] if not d["tombstone"] for tp in d["assigned_partitions"]}
    assert assigned == topic_ids and len(topic_ids) == 1
