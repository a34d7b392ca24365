"""One answer before and after a cleanup, on the real broker.

The demo approves and applies its plan: OffsetDeletes of the offsets a group left behind when it
changed its subscription. Kafka writes a tombstone for each, and the next refresh reads them
(`cleaned_demo`: the demo's broker started again on its data, then the `refresh` job). The
tables before are the demo's own, as its last refresh left them.

The deleted offsets were abandoned, so no surface ever counted them as lag or loss: removing
them changes no group's lag, and the losses seen while the group had left the topic stay out
once the offsets are gone. test_one_answer.py checks that the surfaces agree on both lakes.
"""

from __future__ import annotations

from collections import defaultdict

from offsets_platform.views import attention
from offsets_platform.views.metrics import exposition
from offsets_platform.views.from_lake import describe_group, lost
from tests.metrics.helpers import samples


def keys(lake, table: str) -> set[tuple]:
    return {(r["group_id"], r["topic"], r["partition_id"]) for r in lake.read_arrow(table).to_pylist()}


def test_the_deleted_offsets_leave_the_tables_at_the_next_refresh(cleaned_demo):
    assert cleaned_demo.deleted, "the demo deleted offsets: without them this test would prove nothing"
    abandoned_before = {(r["group_id"], r["topic"], r["partition_id"])
                        for r in cleaned_demo.before.read_arrow("expirable_offsets").to_pylist() if r["is_abandoned"]}
    assert cleaned_demo.deleted <= abandoned_before, "the demo's plan deletes abandoned offsets only"
    assert cleaned_demo.deleted <= keys(cleaned_demo.before, "committed_offsets")
    for table in ("committed_offsets", "expirable_offsets", "consumer_lag", "retention_forecast"):
        assert not cleaned_demo.deleted & keys(cleaned_demo.after, table), table


def test_no_groups_lag_changes_when_offsets_nobody_counted_are_deleted(cleaned_demo):
    def lag(lake) -> dict[str, int]:
        return {row["group_id"]: row["lag_messages"] for row in attention.lag_by_group(lake, lagging_only=False)}

    before, after = lag(cleaned_demo.before), lag(cleaned_demo.after)
    assert any(before.values()), "the demo's slow groups lag"
    assert after == before


def test_losses_seen_while_the_group_had_left_the_topic_stay_out_once_the_offsets_are_gone(cleaned_demo):
    (group,) = {group for group, _, _ in cleaned_demo.deleted}
    losses = [r for r in cleaned_demo.after.read_arrow("unconsumed_messages").to_pylist() if r["group_id"] == group]
    marked = sum(r["count_lost"] for r in losses if r["is_abandoned"])
    assert marked > 0, "the demo's group lost messages of the topic it had left"
    shown = sum(row["messages_lost"] for row in lost(cleaned_demo.after) if row["group_id"] == group)
    # what shows is what the group lost while it still read the topic (docs/models.md says why
    # those show only once the offset is gone), never what it lost after leaving it
    assert shown == sum(r["count_lost"] for r in losses if not r["is_abandoned"])


def test_every_other_groups_losses_are_those_before_and_any_new_ones(cleaned_demo):
    def by_group(lake) -> dict[str, int]:
        totals: dict[str, int] = defaultdict(int)
        for row in lost(lake):
            totals[row["group_id"]] += row["messages_lost"]
        return dict(totals)

    (cleaned,) = {group for group, _, _ in cleaned_demo.deleted}
    before, after = by_group(cleaned_demo.before), by_group(cleaned_demo.after)
    assert before.get("billing-slow"), "the demo's slow group lost messages"
    for group, messages in before.items():
        if group != cleaned:
            assert after.get(group, 0) >= messages, group


def test_a_deleted_offset_names_the_plan_that_deleted_it(cleaned_demo):
    (group,) = {group for group, _, _ in cleaned_demo.deleted}
    view = describe_group(cleaned_demo.after, group)
    removed = {(group, row["topic"], row["partition_id"]): row["removed_by"] for row in view.removed}
    assert set(removed) >= cleaned_demo.deleted
    for key in cleaned_demo.deleted:
        assert removed[key] == f"plan {cleaned_demo.plan_id} (OffsetDelete, applied by demo)", key
    # before the refresh read the tombstones, the offsets are still the group's
    assert not describe_group(cleaned_demo.before, group).removed


def test_the_deletion_meter_counts_the_applied_deletions(cleaned_demo):
    def deletions(lake) -> float:
        return sum(value for (name, _), value in samples(exposition(lake, openmetrics=False)).items()
                   if name == "offsets_platform_offset_deletions_total")

    assert deletions(cleaned_demo.after) - deletions(cleaned_demo.before) == len(cleaned_demo.deleted)
