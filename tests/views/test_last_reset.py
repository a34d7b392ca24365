"""A group's last offset reset, one answer in describe, the summary, the report's headline and the
metrics, on hand-written plan and audit rows (no Spark, no broker)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from offsets_platform.cli import main
from offsets_platform.views.metrics import exposition
from offsets_platform.views.summary import headline, models_summary
from offsets_platform.views.from_lake import describe_group, last_resets
from tests.metrics.helpers import key, samples
from tests.test_summary import at, full_rows

pytestmark = pytest.mark.fast  # make test-fast

P = "offsets_platform_"


def write(lake, name: str, rows: list[dict]) -> None:
    lake.append(name, full_rows(lake, name, rows))


def planned(plan_id: str, partition: int, specifier: str, read_again: int, skipped: int) -> dict:
    return {"plan_id": plan_id, "action_id": f"{plan_id}-{partition}", "action": "AlterConsumerGroupOffsets",
            "group": "busy", "topic": "t", "partition": partition, "reason": "reset",
            "facts": json.dumps({"specifier": specifier, "messages_read_again": read_again,
                                 "messages_skipped": skipped, "target_offset": 0}), "created_at": at(0)}


def audited(plan_id: str, partition: int, outcome: str, minute: int, by: str = "alice") -> dict:
    return {"audit_id": f"{plan_id}-{partition}-{outcome}", "plan_id": plan_id, "action_id": f"{plan_id}-{partition}",
            "origin": "plan", "action": "AlterConsumerGroupOffsets", "group": "busy", "topic": "t",
            "partition": partition, "outcome": outcome, "requested_by": by, "at": at(minute)}


@pytest.fixture
def reset(lake):
    """busy: reset --to-latest on one partition by bob, then --to-earliest on three, of which the
    broker took two (the third failed); idle: never reset."""
    write(lake, "group_state", [{"group_id": "busy", "state": "Empty", "classification": "consumer"},
                                {"group_id": "idle", "state": "Empty", "classification": "consumer"}])
    write(lake, "cleanup_plans", [planned("older", 0, "--to-latest", 0, 9)]
          + [planned("newer", p, "--to-earliest", 3 + p, 0) for p in (0, 1, 2)])
    write(lake, "cleanup_audit", [audited("older", 0, "sending", 1, "bob"), audited("older", 0, "committed", 1, "bob"),
                                  *(audited("newer", p, "sending", 5) for p in (0, 1, 2)),
                                  audited("newer", 0, "committed", 6), audited("newer", 1, "committed", 7),
                                  audited("newer", 2, "failed", 7)])
    return lake


def test_the_last_reset_is_the_last_plan_the_broker_took_counted_on_what_it_took(reset):
    assert last_resets(reset) == [{
        "group_id": "busy", "reset_at": at(7), "reset_by": "alice", "plan_id": "newer", "specifier": "--to-earliest",
        "partitions": 2, "messages_read_again": 3 + 4, "messages_skipped": 0}]
    assert last_resets(reset, "idle") == []


def test_describe_the_summary_the_headline_and_the_metrics_say_the_same_reset(reset, capsys):
    words = "--to-earliest on 2 partitions at 2026-01-01 00:07 UTC by alice (plan newer; 7 messages read again, 0 skipped)"
    assert describe_group(reset, "busy").last_reset == last_resets(reset)[0]
    assert describe_group(reset, "idle").last_reset is None
    assert main(["describe", "busy", "--home", str(reset.root.parent)]) == 0
    assert f"last offset reset: {words}" in capsys.readouterr().out
    assert f"  offsets of busy last reset {words}" in models_summary(reset)
    assert f"Offsets reset by this tool: 1 group; the latest, busy, {words}." in headline(reset)
    found = samples(exposition(reset))
    assert found[key(P + "group_last_offset_reset_timestamp_seconds", group_id="busy")] == \
        (at(0) + timedelta(minutes=7)).timestamp()
    assert found[key(P + "group_last_offset_reset_partitions", group_id="busy")] == 2
    assert not [name for name, labels in found if "offset_reset" in name and "idle" in labels]
