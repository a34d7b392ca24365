"""The key numbers of a run, on a small hand-built lake run through the real models on Spark.

Retention of offsets is Kafka's default (7 days); the models run "now" = day 10:
- `soon` became Empty on day 3 at 12:00: its two offsets on `orders` expire on day 10 at 12:00,
  12 hours after the run: the only offsets expiring within 24 h;
- `later` became Empty on day 5 (expires on day 12, 48 h away); `expired` on day 1 (expired on day 8);
- `stable` is Stable and subscribed, so its offset never expires; `gone` was deleted (Dead);
- three snapshots of topic `events` move its log start 0 -> 60 -> 150 while `slow` stays at 40:
  retention deleted [40, 60) and [60, 150) before `slow` consumed them, 110 messages; `fast` keeps up.
  Both are known only from the snapshots' committed offsets (standalone, Empty).
- `stuck` (standalone) commits offset 5 of topic `audit` three times, ten minutes apart, just before
  each snapshot, while the snapshots see `audit`'s log end at 50: 45 messages behind since before
  the first snapshot (20 minutes at least), silent for almost a day: STOP.
"""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from dagster import AssetKey, DagsterInstance, MarkdownMetadataValue

from offsets_platform_dagster.definitions import defs
from offsets_platform_dagster.key_numbers import (KEY_NUMBER_INPUTS, KEY_NUMBERS, consumer_lag_numbers, consumer_status_numbers,
                                expirable_offsets_numbers, group_state_numbers, key_numbers, markdown_table,
                                unconsumed_messages_numbers)
from offsets_platform.lake import Lake
from offsets_platform.models.project import default_project, lake_for_models
from tests.models.bronze_builder import BronzeBuilder, at
from tests.models.conftest import run_models

AS_OF = at(days=10)
# `switched` reads on, but only `orders`: it left its offset on `events` behind (abandoned), so
# what retention deleted past it is no loss of its own
SWITCHED = {"group": "switched", "state": "Stable", "protocol_type": "consumer", "protocol": "range", "member_count": 1}
SNAPSHOTS = [(at(days=9), 0, 100, 40, 100), (at(days=9, minutes=10), 60, 200, 40, 200),
             (at(days=9, minutes=20), 150, 300, 40, 300)]


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> Lake:
    b = BronzeBuilder()

    def empty_group(name, empty_at, partitions=(0,)):
        b.group_record(name, at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
        for partition in partitions:
            b.commit(name, "orders", partition, 10 + partition, at(hours=2))
        b.group_record(name, empty_at, members={}, current_state_at=empty_at, generation=2)

    empty_group("soon", at(days=3, hours=12), partitions=(0, 1))
    empty_group("later", at(days=5))
    empty_group("expired", at(days=1))
    b.group_record("stable", at(hours=1), members={"m1": ["orders"]}, current_state_at=at(hours=1))
    b.commit("stable", "orders", 0, 5, at(days=9))
    b.group_record("gone", at(hours=1), members={})
    b.group_tombstone("gone", at(hours=2))
    for when, start, end, slow, fast in SNAPSHOTS:
        b.commit("stuck", "audit", 0, 5, when - timedelta(minutes=1))
        b.snapshot(when, topics=[{"topic": topic, "retention_ms": 3_600_000, "retention_bytes": -1,
                                  "cleanup_policy": "delete"} for topic in ("events", "audit")],
                   logs=[{"topic": "events", "partition": 0, "log_start_offset": start, "log_end_offset": end},
                         {"topic": "audit", "partition": 0, "log_start_offset": 0, "log_end_offset": 50}],
                   groups=[SWITCHED],
                   members=[{"group": "switched", "member_id": "m1", "subscribed_topics": ["orders"]}],
                   offsets=[{"group": g, "topic": "events", "partition": 0, "committed_offset": o}
                            for g, o in (("slow", slow), ("fast", fast), ("switched", slow))])
    the_lake = lake_for_models(tmp_path_factory.mktemp("key_numbers") / "lake")
    b.write(the_lake)
    run_models(spark, the_lake, AS_OF)
    return the_lake


def test_groups_by_state(lake):
    numbers = group_state_numbers(lake)
    # soon, later, expired + the standalone slow, fast and stuck are Empty; stable, switched; gone is Dead.
    assert {k: numbers[k] for k in ("groups", "groups_stable", "groups_empty", "groups_dead")} == {
        "groups": 9, "groups_stable": 2, "groups_empty": 6, "groups_dead": 1}
    table = numbers["groups_by_state"]
    assert isinstance(table, MarkdownMetadataValue)
    lines = table.value.splitlines()
    assert lines[0] == "| state | groups | consumer | standalone | KIP-848 consumer | other protocol |"
    assert lines[2:] == ["| Empty | 6 | 3 | 3 | 0 | 0 |", "| Stable | 2 | 2 | 0 | 0 | 0 |",
                         "| Dead | 1 | 0 | 0 | 0 | 0 |"]


def test_offsets_expiring_within_24_hours(lake):
    numbers = expirable_offsets_numbers(lake)
    assert numbers["offsets_expiring_within_24h"] == 2
    assert numbers["offsets_expired_now"] == 1
    # soon (2), later, expired, the standalone slow, fast and stuck, and the offset switched left
    # behind; stable's is not eligible.
    assert numbers["offsets_eligible_for_expiration"] == 8
    assert numbers["abandoned_offsets"] == 1
    assert numbers["expiring_within_24h"].value.splitlines()[2:] == [
        "| expired | orders | empty_group | 1 | 1 | 2026-01-09 00:00 UTC | due now |",
        "| soon | orders | empty_group | 2 | 0 | 2026-01-11 12:00 UTC | 12h 0m |"]
    # The same count as the model's rows say, read independently.
    rows = lake.read_arrow("expirable_offsets").to_pylist()
    assert sum(1 for r in rows if not r["is_expired"] and r["hours_until_expiry"] is not None
               and r["hours_until_expiry"] <= 24) == 2


def test_messages_lost_to_retention(lake):
    numbers = unconsumed_messages_numbers(lake)
    assert (numbers["messages_lost_to_retention"], numbers["groups_that_lost_messages"]) == (20 + 90, 1)
    assert numbers["lost_by_group"].value.splitlines()[2:] == ["| slow | events | 1 | 110 | 110 | 2026-01-10 00:20 UTC |"]


def test_lag_by_messages_and_by_time(lake):
    numbers = consumer_lag_numbers(lake)
    # slow: log end 300 - committed 40; stuck: 50 - 5; fast is caught up; switched's lag is on the
    # topic it left (abandoned), so it is no lag of its own
    assert (numbers["lag_messages"], numbers["groups_lagging"]) == (260 + 45, 2)
    # stuck's oldest unread message (offset 5) was in the log at the first snapshot: at least 20
    # minutes old at the last one. slow's (the log start, 150) was written between the snapshots
    # that saw the log end at 100 and 200, at 51% of those 10 minutes: 894 s before the last.
    assert numbers["max_lag_seconds"] == 1200.0
    assert numbers["top_groups_by_lag"].value.splitlines() == [
        "| group | lag (messages) | oldest unread message |", "|---|---|---|",
        "| slow | 260 | 14m 54s |", "| stuck | 45 | 20m 0s |"]
    assert numbers["top_groups_by_time_behind"].value.splitlines()[2:] == [
        "| stuck | 45 | 20m 0s |", "| slow | 260 | 14m 54s |"]


def test_groups_by_burrows_status(lake):
    numbers = consumer_status_numbers(lake)
    # stuck: silent for almost a day, longer than its window spans (STOP, so ERR); slow: one
    # observation (its offset never moved in the snapshots); fast caught up; switched's only
    # judged partition is abandoned, which leaves its status OK
    assert {k: numbers[k] for k in ("groups_err", "groups_warn", "groups_incomplete", "groups_ok")} == {
        "groups_err": 1, "groups_warn": 0, "groups_incomplete": 1, "groups_ok": 2}
    assert numbers["groups_not_ok"].value.splitlines() == [
        "| group | status | partitions | partitions by status |", "|---|---|---|---|",
        "| stuck | ERR | 1 | STOP 1 |", "| slow | INCOMPLETE | 1 | INCOMPLETE 1 |"]


def test_only_the_five_models_have_key_numbers_and_a_missing_table_has_none(lake, tmp_path):
    assert set(KEY_NUMBERS) == set(KEY_NUMBER_INPUTS) == {
        "group_state", "consumer_lag", "consumer_status", "expirable_offsets", "unconsumed_messages"}
    assert key_numbers(lake, "committed_offsets") == {}
    assert key_numbers(lake_for_models(tmp_path / "empty"), "group_state") == {}
    assert key_numbers(lake, "unconsumed_messages") == unconsumed_messages_numbers(lake)


def test_empty_tables_say_so_in_words(tmp_path):
    empty = lake_for_models(tmp_path / "lake")
    for name in KEY_NUMBERS:
        empty.append(name, empty.spec(name).schema.empty_table())
    assert group_state_numbers(empty)["groups"] == 0
    assert group_state_numbers(empty)["groups_by_state"].value == "No groups known."
    expiring = expirable_offsets_numbers(empty)
    assert (expiring["offsets_expiring_within_24h"], expiring["offsets_expired_now"]) == (0, 0)
    assert expiring["expiring_within_24h"].value.startswith("No committed offset expires within 24 h")
    lag = consumer_lag_numbers(empty)
    assert (lag["lag_messages"], lag["groups_lagging"], lag["max_lag_seconds"]) == (0, 0, 0.0)
    assert lag["top_groups_by_lag"].value == lag["top_groups_by_time_behind"].value == "No group lags."
    statuses = consumer_status_numbers(empty)
    assert sum(statuses[f"groups_{status}"] for status in ("err", "warn", "incomplete", "ok")) == 0
    assert statuses["groups_not_ok"].value.startswith("No group judged yet")
    lost = unconsumed_messages_numbers(empty)
    assert (lost["messages_lost_to_retention"], lost["groups_that_lost_messages"]) == (0, 0)
    assert lost["lost_by_group"].value.startswith("Retention has not deleted")


def test_markdown_tables_escape_cells_and_count_what_they_leave_out():
    table = markdown_table(["group", "n"], [["a|b", 1], [None, 2], ["c", 3]], empty="none", max_rows=2)
    assert table.splitlines() == ["| group | n |", "|---|---|", "| a\\|b | 1 |", "|  | 2 |", "",
                                  "… and 1 more rows."]
    assert markdown_table(["x"], [], empty="nothing here") == "nothing here"


def test_the_model_assets_put_their_key_numbers_on_the_materialization(lake, tmp_path):
    # On a copy of the bronze tables alone: the first refresh, which Dagster's run evaluates "now",
    # not on day 10. The key numbers are read once every model of the step is written: read as
    # unconsumed_messages was written, before expirable_offsets, they would count what retention
    # deleted past switched's abandoned offset as a loss of its own.
    copy = lake_for_models(tmp_path / "lake")
    shutil.copytree(lake.path("offset_commit_records").parent, copy.path("offset_commit_records").parent)
    keys = {AssetKey(model.name) for model in default_project().models}
    job = defs.resolve_job_def("refresh").get_subset(asset_selection=keys, asset_check_selection=set())
    with DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance, run_config={
            "resources": {"lake": {"config": {"root": str(copy.root)}}, "spark": {"config": {"master": "local[2]"}}}})
        assert result.success
        for name in KEY_NUMBERS:
            metadata = instance.get_latest_materialization_event(AssetKey(name)).asset_materialization.metadata
            expected = key_numbers(copy, name)
            assert expected
            assert {k: metadata[k].value for k in expected} == {k: getattr(v, "value", v) for k, v in expected.items()}
            assert metadata["dagster/row_count"].value == copy.count(name)
