"""The alert conditions, on small hand-written gold rows (no Spark, no broker).

The rules behind the rows are the models' (tested with them); these tests pin which rows alert,
how they are grouped into one alert, and that the keys stay put while the numbers move.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest

from offsets_platform.views.alerts import (CONSUMER_STATUS, MESSAGES_AT_RISK, MESSAGES_LOST, OFFSETS_EXPIRING, changes,
                                     evaluate, messages_at_risk, offsets_expiring, payload)
from offsets_platform.settings import AlertSettings
from tests.test_summary import at, full_rows

pytestmark = pytest.mark.fast  # make test-fast


def write(lake, name: str, rows: list[dict]) -> None:
    lake.append(name, full_rows(lake, name, rows))


def forecast(group: str, partition: int, unread: int, hours_left: float, topic: str = "t") -> dict:
    return {"group_id": group, "topic": topic, "partition_id": partition, "unread_in_log": unread,
            "hours_left": hours_left, "deletion_expected_at": at(0) + timedelta(hours=hours_left)}


def expirable(group: str, partition: int, hours: float | None, rule: str = "empty_group", topic: str = "t",
              abandoned: bool = False) -> dict:
    return {"group_id": group, "topic": topic, "partition_id": partition, "rule": rule, "group_state": "Empty",
            "hours_until_expiry": hours, "is_expired": hours is not None and hours <= 0,
            "expires_at": None if hours is None else at(0) + timedelta(hours=hours), "is_abandoned": abandoned}


def status(group: str, partition: int, value: str, topic: str = "t", lag: int = 5) -> dict:
    group_status = "ERR" if value in ("STOP", "STALL", "REWIND") else "OK"
    return {"group_id": group, "topic": topic, "partition_id": partition, "status": value, "group_status": group_status,
            "current_lag": lag}


def test_unread_messages_due_within_the_horizon_alert_once_per_group_and_topic(lake):
    write(lake, "retention_forecast", [forecast("g", 0, 10, 2.0), forecast("g", 1, 5, -0.5),  # due now counts
                                       forecast("g", 2, 7, 30.0),  # beyond the horizon
                                       forecast("h", 0, 3, 24.0)])  # on the edge: within
    alerts = messages_at_risk(lake, within_hours=24)
    assert [(a.group_id, a.topic, [p["partition_id"] for p in a.partitions]) for a in alerts] == [("g", "t", [0, 1]),
                                                                                           ("h", "t", [0])]
    assert "15 unread messages" in alerts[0].summary and "due now" in alerts[0].summary
    assert [a.group_id for a in messages_at_risk(lake, within_hours=23.9)] == ["g"]


def test_a_group_catching_up_is_not_alerted_for_messages_it_will_read_in_time(lake):
    write(lake, "retention_forecast", [forecast(group, 0, 10, 2.0) for group in ("ok", "warn", "stop", "new")])
    write(lake, "consumer_status", [status("ok", 0, "OK"), status("warn", 0, "WARN"), status("stop", 0, "STOP")])
    alerts = messages_at_risk(lake, within_hours=24)
    # "new": not evaluated yet (no observations), so nobody can say it catches up
    assert [a.group_id for a in alerts] == ["new", "stop", "warn"]
    assert alerts[2].summary.endswith("and the group is not catching up (WARN on 1)")
    assert alerts[0].summary.endswith("(not evaluated on 1)")


def loss(group: str, partition: int, seen_at: datetime, most: int = 100, least: int = 90, topic: str = "t") -> dict:
    return {"group_id": group, "topic": topic, "partition_id": partition, "count_lost": most,
            "count_lost_at_least": least, "lost_from_offset": 0, "lost_to_offset": most, "observed_at": seen_at}


def test_a_loss_the_latest_snapshot_saw_alerts_once_and_clears_at_the_next_refresh(lake):
    snapshots = [at(0), at(15), at(30)]
    write(lake, "consumer_lag", [{"group_id": "g", "topic": "t", "partition_id": 0, "measured_at": snapshots[1]}])
    write(lake, "unconsumed_messages", [loss("g", 0, snapshots[0]),  # told at the refresh before
                                        loss("g", 0, snapshots[1]), loss("g", 1, snapshots[1], most=5, least=5),
                                        loss("h", 0, snapshots[1], topic="left")])
    write(lake, "expirable_offsets", [expirable("h", 0, 1.0, rule="unsubscribed_topic", topic="left",
                                                abandoned=True)])  # h left the topic on purpose
    first = [a for a in evaluate(lake, AlertSettings()) if a.kind == MESSAGES_LOST]
    assert [(a.key, [p["partition_id"] for p in a.partitions]) for a in first] == [
        (f"messages_lost/g/t/{quote(snapshots[1].isoformat(), safe='')}", [0, 1])]
    assert "retention deleted 95 to 105 messages it had not read" in first[0].summary
    told = changes({}, first, now=snapshots[1])

    # the next snapshot sees no new loss: the alert clears; a later loss is a new alert
    lake.overwrite("consumer_lag", full_rows(lake, "consumer_lag", [
        {"group_id": "g", "topic": "t", "partition_id": 0, "measured_at": snapshots[2]}]))
    later = changes(told.open, [a for a in evaluate(lake, AlertSettings()) if a.kind == MESSAGES_LOST])
    assert later.opened == [] and len(later.cleared) == 1
    write(lake, "unconsumed_messages", [loss("g", 0, snapshots[2], most=7, least=7)])
    again = [a for a in evaluate(lake, AlertSettings()) if a.kind == MESSAGES_LOST]
    assert [a.qualifier for a in again] == [snapshots[2].isoformat()]
    assert "retention deleted 7 messages" in again[0].summary


def test_abandoned_offsets_alert_neither_as_risk_nor_as_status_nor_expiry(lake):
    write(lake, "retention_forecast", [forecast("g", 0, 10, 1.0), forecast("g", 0, 10, 1.0, topic="left")])
    write(lake, "consumer_status", [status("g", 0, "STOP"), status("g", 0, "STOP", topic="left")])
    write(lake, "expirable_offsets", [expirable("g", 0, None, rule="not_eligible"),
                                      expirable("g", 0, 1.0, rule="unsubscribed_topic", topic="left",
                                                abandoned=True)])
    alerts = evaluate(lake, AlertSettings(watched_groups=("g",)))
    assert {(a.kind, a.topic) for a in alerts} == {(MESSAGES_AT_RISK, "t"), (CONSUMER_STATUS, "t")}


def test_only_a_watched_groups_expiring_offsets_alert(lake):
    write(lake, "expirable_offsets", [expirable("orders", 0, -1.0), expirable("orders", 1, 3.0),
                                      expirable("orders", 2, 30.0),  # beyond the horizon
                                      expirable("orders", 3, None, rule="not_eligible"),  # never
                                      expirable("pay-eu", 0, 1.0), expirable("pay-us", 0, 1.0, rule="standalone"),
                                      expirable("scratch", 0, 1.0)])
    assert offsets_expiring(lake, 24, watched_groups=()) == []  # nobody said which groups matter
    alerts = offsets_expiring(lake, 24, watched_groups=("orders", "pay-*"))
    assert [(a.group_id, a.qualifier, [p["partition_id"] for p in a.partitions]) for a in alerts] == [
        ("orders", "empty_group", [0, 1]), ("pay-eu", "empty_group", [0]), ("pay-us", "standalone", [0])]
    assert "within 24 h: 1 due now, the next in 3.0 h;" in alerts[0].summary
    assert "within 24 h: the first in 1.0 h;" in alerts[1].summary
    assert [len(a.partitions) for a in offsets_expiring(lake, 48, ("orders",))] == [3]


def test_stop_stall_and_rewind_alert_per_status_and_the_other_statuses_do_not(lake):
    write(lake, "consumer_status", [status("g", 0, "STOP"), status("g", 1, "STOP"), status("g", 2, "STALL"),
                                    status("h", 0, "REWIND"), status("ok", 0, "OK"), status("w", 0, "WARN"),
                                    status("i", 0, "INCOMPLETE"), status("a", 0, "ABANDONED")])
    alerts = evaluate(lake, AlertSettings())
    assert [(a.kind, a.group_id, a.qualifier, len(a.partitions)) for a in alerts] == [
        (CONSUMER_STATUS, "g", "STALL", 1), (CONSUMER_STATUS, "g", "STOP", 2), (CONSUMER_STATUS, "h", "REWIND", 1)]
    assert alerts[1].summary.startswith("group g is ERR: t partitions 0, 1 STOP")


def test_ignored_groups_never_alert(lake):
    write(lake, "consumer_status", [status("test-1", 0, "STOP"), status("real", 0, "STOP")])
    write(lake, "retention_forecast", [forecast("test-1", 0, 10, 1.0)])
    assert [a.group_id for a in evaluate(lake, AlertSettings(ignored_groups=("test-*",)))] == ["real"]


def test_keys_stay_while_the_numbers_move_and_changes_tell_opened_and_cleared_once(lake):
    write(lake, "retention_forecast", [forecast("g", 0, 10, 2.0)])
    write(lake, "consumer_status", [status("g", 0, "STOP")])
    first = evaluate(lake, AlertSettings())
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    opened = changes({}, first, now=t0)
    assert [a["key"] for a in opened.opened] == ["consumer_status/g/t/STOP", "messages_at_risk/g/t"]
    assert opened.cleared == []

    lake.overwrite("retention_forecast", full_rows(lake, "retention_forecast", [forecast("g", 0, 40, 1.0)]))
    lake.overwrite("consumer_status", full_rows(lake, "consumer_status", []))
    second = evaluate(lake, AlertSettings())
    assert [a.key for a in second] == ["messages_at_risk/g/t"]  # more messages, same alert
    later = changes(opened.open, second, now=t0 + timedelta(minutes=15))
    assert later.opened == [] and [a["key"] for a in later.cleared] == ["consumer_status/g/t/STOP"]
    assert later.open["messages_at_risk/g/t"]["opened_at"] == t0.isoformat()
    assert "40 unread" in later.open["messages_at_risk/g/t"]["summary"]
    assert not changes(later.open, second).any  # nothing new, nothing cleared: nothing to send

    body = payload(later, models_refreshed_at=t0)
    assert [a["status"] for a in body["cleared"]] == ["resolved"] and body["open"] == ["messages_at_risk/g/t"]
    assert body["text"].splitlines()[1].startswith("CLEARED group g is ERR")


def test_a_key_cannot_be_forged_by_a_group_name_with_a_slash():
    from offsets_platform.views.alerts import Alert

    assert Alert(OFFSETS_EXPIRING, "a/b", "t", "r", "").key != Alert(OFFSETS_EXPIRING, "a", "b/t", "r", "").key


def test_alert_settings_come_from_the_environment_and_name_a_bad_value():
    settings = AlertSettings.from_env({
        "OFFSETS_PLATFORM_ALERT_WEBHOOK_URL": "https://hooks.example.com/services/T0/B0/secret",
        "OFFSETS_PLATFORM_ALERT_WITHIN": "2d", "OFFSETS_PLATFORM_ALERT_EXPIRY_WITHIN": "90m",
        "OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS": " b, a ,,", "OFFSETS_PLATFORM_ALERT_IGNORED_GROUPS": "tmp-*"})
    assert (settings.loss_within_hours, settings.expiry_within_hours) == (48, 1.5)
    assert (settings.watched_groups, settings.ignored_groups) == (("a", "b"), ("tmp-*",))
    assert settings.webhook_target() == "https://hooks.example.com/..."  # the path is the secret
    assert "secret" not in repr(settings)
    assert AlertSettings.from_env({}) == AlertSettings()
    with pytest.raises(ValueError, match="OFFSETS_PLATFORM_ALERT_LOSS_WITHIN"):
        AlertSettings.from_env({"OFFSETS_PLATFORM_ALERT_LOSS_WITHIN": "soon"})
    with pytest.raises(ValueError, match="OFFSETS_PLATFORM_ALERT_WEBHOOK_URL must start") as refused:
        AlertSettings.from_env({"OFFSETS_PLATFORM_ALERT_WEBHOOK_URL": "hooks.example.com/secret"})
    assert "secret" not in str(refused.value)
