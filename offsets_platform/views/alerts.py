"""Alerts: the conditions a person must hear about, from the models' gold tables (docs/alerts.md).

Four conditions, each read with delta-rs's SQL engine (`Lake.query`, no Spark):

- `messages_at_risk`: unread messages still in the log whose deletion by retention is due within
  the loss horizon (`retention_forecast.hours_left`, due-now ones included), on partitions where
  the group is not catching up: Burrow's rules do not call the partition OK (its lag did not fall
  across the window; `consumer_status`). A group reading down its lag is not alerted for
  messages it will read in time; one that has not been evaluated yet is.
- `messages_lost`: messages retention deleted before the group read them, seen by the latest
  snapshot (`unconsumed_messages.observed_at` = `consumer_lag.measured_at`): one alert per group,
  topic and snapshot that saw a loss, so each loss is told once when it is seen and cleared at the
  next refresh that sees none.
- `offsets_expiring`: committed offsets of a watched group that Kafka expires within the expiry
  horizon (`expirable_offsets.hours_until_expiry`, due-now ones included). Only watched groups:
  expiry is how Kafka forgets groups that are gone, and only a person knows which stopped group
  will come back and must find its position.
- `consumer_status`: partitions Burrow's rules call STOP, STALL or REWIND, the statuses that
  make the group ERR (`consumer_status`).

Offsets a group left behind (`expirable_offsets.is_abandoned`) never alert: their lag is no
one's backlog (see `offsets_platform.views.attention`). Groups matching an ignored pattern never alert.

One alert covers a group and a topic (and, for expiry, Kafka's rule; for status, the status),
with its partitions listed, so a topic of 50 partitions that stops is one message, not 50. Its
`key` is built from those fields only, never from the numbers, so it stays the same from one
evaluation to the next while the condition holds: `changes` compares the keys open before with
the ones open now, and a sender tells each alert once when it opens and once when it clears.
"""

from __future__ import annotations

import json
import urllib.error
from collections import Counter
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from typing import Iterable, Mapping
from urllib.parse import quote

from offsets_platform.views.attention import due_for_deletion, not_abandoned  # the rules the report counts by
from offsets_platform.lake import Lake
from offsets_platform.settings import AlertSettings

MESSAGES_AT_RISK = "messages_at_risk"
MESSAGES_LOST = "messages_lost"
OFFSETS_EXPIRING = "offsets_expiring"
CONSUMER_STATUS = "consumer_status"
KINDS = (MESSAGES_AT_RISK, MESSAGES_LOST, OFFSETS_EXPIRING, CONSUMER_STATUS)
# The partition statuses that make a group ERR in Burrow's rules (docs/consumer-status.md).
ERR_STATUSES = ("STOP", "STALL", "REWIND")
SOURCE = "offsets_platform"



@dataclass(frozen=True)
class Alert:
    """One open condition of one group and topic."""

    kind: str
    group_id: str
    topic: str
    qualifier: str
    """Kafka's expiration rule (offsets_expiring), the partition status (consumer_status), the
    snapshot that saw the loss (messages_lost, its time in ISO 8601), or ""."""
    summary: str
    partitions: tuple[dict, ...] = field(default=(), compare=False)
    """The partitions the condition holds for, each with the numbers behind it."""

    @property
    def key(self) -> str:
        """kind/group_id/topic[/qualifier], each part percent-encoded so that no two alerts share one.
        The same string as before the group's field was named `group_id` (0.2.0), so an alert open
        across an upgrade keeps its key and is not told again."""
        parts = [self.kind, self.group_id, self.topic] + ([self.qualifier] if self.qualifier else [])
        return "/".join(quote(part, safe="") for part in parts)

    def as_dict(self) -> dict:
        return {"key": self.key, "kind": self.kind, "group_id": self.group_id, "topic": self.topic,
                "qualifier": self.qualifier, "summary": self.summary,
                "partitions": [_jsonable(p) for p in self.partitions]}


def evaluate(lake: Lake, settings: AlertSettings) -> list[Alert]:
    """Every alert the gold tables hold now, by key. Tables no model has written read as empty."""
    alerts = [*messages_at_risk(lake, settings.loss_within_hours), *messages_lost(lake),
              *offsets_expiring(lake, settings.expiry_within_hours, settings.watched_groups),
              *consumer_status(lake)]
    return sorted((a for a in alerts if not matches(a.group_id, settings.ignored_groups)), key=lambda a: a.key)


def matches(group: str, patterns: Iterable[str]) -> bool:
    """Whether `group` is one of `patterns`: names, or shell-style patterns (`payments-*`)."""
    return any(fnmatchcase(group, pattern) for pattern in patterns)


def messages_at_risk(lake: Lake, within_hours: float) -> list[Alert]:
    """Per group and topic, the unread messages still in the log that retention deletes within
    `within_hours` (those due now included), on partitions the group is not catching up on."""
    rows = lake.query(f"""
        select f.group_id, f.topic, f.partition_id, f.unread_in_log, f.hours_left,
               f.deletion_expected_at, f.is_time_lag_lower_bound, s.status
        from retention_forecast f
        left join consumer_status s
          on s.group_id = f.group_id and s.topic = f.topic and s.partition_id = f.partition_id
        where f.unread_in_log > 0 and {due_for_deletion("f", within_hours)}
          and coalesce(s.status, '') <> 'OK'
        order by f.group_id, f.topic, f.partition_id
        """, "retention_forecast", "expirable_offsets", "consumer_status").to_pylist()
    alerts = []
    for (group, topic), partitions in _by_group_and_topic(rows).items():
        messages = sum(p["unread_in_log"] for p in partitions)
        soonest = min(partitions, key=lambda p: p["hours_left"])
        alerts.append(Alert(
            MESSAGES_AT_RISK, group, topic, "",
            f"group {group}: {messages:,} unread messages of {topic} ({_count(partitions, 'partition')}) are due for "
            f"deletion by retention within {_hours(within_hours)}, the first {_when(soonest['hours_left'])}, "
            f"and the group is not catching up ({_statuses(partitions)})",
            tuple(partitions)))
    return alerts


def _statuses(partitions: list[dict]) -> str:
    """"STOP on 2, WARN on 1": the partitions' statuses, not evaluated ones as such."""
    counts = Counter(partition["status"] or "not evaluated" for partition in partitions)
    return ", ".join(f"{status} on {count}" for status, count in sorted(counts.items()))


def messages_lost(lake: Lake) -> list[Alert]:
    """Per group and topic, the messages retention deleted before the group read them that the
    latest snapshot saw deleted (abandoned offsets left out, as everywhere)."""
    rows = lake.query(f"""
        select u.group_id, u.topic, u.partition_id, u.count_lost, u.count_lost_at_least,
               u.lost_from_offset, u.lost_to_offset, u.observed_at
        from unconsumed_messages u
        where u.observed_at = (select max(measured_at) from consumer_lag) and {not_abandoned("unconsumed_messages", "u")}
        order by u.group_id, u.topic, u.partition_id
        """, "unconsumed_messages", "consumer_lag", "expirable_offsets").to_pylist()
    alerts = []
    for (group, topic), partitions in _by_group_and_topic(rows).items():  # all seen by one snapshot
        most = sum(p["count_lost"] for p in partitions)
        least = sum(p["count_lost_at_least"] for p in partitions)
        alerts.append(Alert(
            MESSAGES_LOST, group, topic, partitions[0]["observed_at"].isoformat(),
            f"group {group} lost messages of {topic} ({_count(partitions, 'partition')}): retention deleted "
            + (f"{most:,}" if least == most else f"{least:,} to {most:,}")
            + f" messages it had not read, seen by the snapshot of {partitions[0]['observed_at']:%Y-%m-%d %H:%M:%S} UTC",
            tuple(partitions)))
    return alerts


def offsets_expiring(lake: Lake, within_hours: float, watched_groups: Iterable[str]) -> list[Alert]:
    """Per watched group, topic and rule, the committed offsets Kafka expires within
    `within_hours` (those due now included). No watched groups: none."""
    watched = tuple(watched_groups)
    if not watched:
        return []
    rows = lake.query(f"""
        select group_id, topic, partition_id, rule, group_state, committed_offset,
               hours_until_expiry, expires_at, is_expired
        from expirable_offsets
        where (hours_until_expiry <= {float(within_hours)} or is_expired) and not coalesce(is_abandoned, false)
        order by group_id, topic, rule, partition_id
        """, "expirable_offsets").to_pylist()
    rows = [row for row in rows if matches(row["group_id"], watched)]
    alerts = []
    for (group, topic, rule), partitions in _by_group_and_topic(rows, "rule").items():
        due_now = sum(1 for p in partitions if p["is_expired"])
        later = [p["hours_until_expiry"] for p in partitions if not p["is_expired"]]
        when = ", ".join(([f"{due_now} due now"] if due_now else [])
                         + ([f"{'the next' if due_now else 'the first'} {_when(min(later))}"] if later else []))
        alerts.append(Alert(
            OFFSETS_EXPIRING, group, topic, rule,
            f"watched group {group} ({partitions[0]['group_state']}): Kafka expires its committed offsets on {topic} "
            f"({_count(partitions, 'partition')}, rule {rule}) within {_hours(within_hours)}: {when}; "
            "the group would then start over from its auto.offset.reset",
            tuple(partitions)))
    return alerts


def consumer_status(lake: Lake) -> list[Alert]:
    """Per group, topic and status, the partitions that are STOP, STALL or REWIND (the group is ERR)."""
    statuses = ", ".join(f"'{status}'" for status in ERR_STATUSES)
    rows = lake.query(f"""
        select s.group_id, s.topic, s.partition_id, s.status, s.rule, s.group_status,
               s.current_lag, s.silent_seconds, s.last_offset, s.rewound_from_offset, s.rewound_to_offset,
               s.evaluated_at
        from consumer_status s
        where s.status in ({statuses}) and {not_abandoned("consumer_status", "s")}
        order by s.group_id, s.topic, s.status, s.partition_id
        """, "consumer_status", "expirable_offsets").to_pylist()
    alerts = []
    for (group, topic, status), partitions in _by_group_and_topic(rows, "status").items():
        lag = sum(p["current_lag"] or 0 for p in partitions)
        alerts.append(Alert(
            CONSUMER_STATUS, group, topic, status,
            f"group {group} is {partitions[0]['group_status']}: {topic} {_count(partitions, 'partition')} "
            f"{status} ({_STATUS_WORDS[status]}), {lag:,} messages behind",
            tuple(partitions)))
    return alerts


_STATUS_WORDS = {"STOP": "no commit for longer than its window spans, with lag",
                 "STALL": "committing the same offset, with lag",
                 "REWIND": "its committed offset went back"}


@dataclass(frozen=True)
class Changes:
    """What one evaluation changed against the alerts open before it."""

    opened: list[dict]
    """Alerts open now and not before (as `Alert.as_dict()`, with `opened_at`)."""
    cleared: list[dict]
    """Alerts open before and not now (as they were stored, with `cleared_at`)."""
    open: dict[str, dict]
    """Every alert open now, by key: what to remember for the next evaluation."""

    @property
    def any(self) -> bool:
        return bool(self.opened or self.cleared)


def changes(open_before: Mapping[str, dict], current: Iterable[Alert], now: datetime | None = None) -> Changes:
    """Compare the alerts open now with those open before, by key. An alert still open keeps its
    `opened_at` and takes its current summary, so the next message says the numbers of now.

    `open_before` may have been kept by a version before 0.2.0, whose entries name the group
    `group`: the keys are the same strings, so those alerts are not told again, and one that
    clears is told with `group_id` like the rest."""
    now = now or datetime.now(timezone.utc)
    stamp = now.isoformat()
    opened, still = [], {}
    for alert in current:
        before = open_before.get(alert.key)
        entry = {"key": alert.key, "kind": alert.kind, "group_id": alert.group_id, "topic": alert.topic,
                 "qualifier": alert.qualifier, "summary": alert.summary,
                 "opened_at": before["opened_at"] if before else stamp}
        still[alert.key] = entry
        if before is None:
            opened.append({**alert.as_dict(), "opened_at": stamp})
    cleared = [{**_current_names(entry), "cleared_at": stamp}
               for key, entry in sorted(open_before.items()) if key not in still]
    return Changes(opened=opened, cleared=cleared, open=still)


def _current_names(entry: dict) -> dict:
    """An open alert as kept before 0.2.0 (`group`) with the group under its name of now, `group_id`."""
    if "group" not in entry or "group_id" in entry:
        return dict(entry)
    return {("group_id" if name == "group" else name): value for name, value in entry.items()}


def payload(change: Changes, models_refreshed_at: datetime | None, now: datetime | None = None) -> dict:
    """The JSON a webhook receives (docs/alerts.md): the new alerts, the cleared ones, the keys
    still open, and `text`, the same in a few lines for receivers that show only a text field."""
    now = now or datetime.now(timezone.utc)
    return {
        "source": SOURCE,
        "sent_at": now.isoformat(),
        "models_refreshed_at": models_refreshed_at.isoformat() if models_refreshed_at else None,
        "opened": [{**alert, "status": "firing"} for alert in change.opened],
        "cleared": [{**alert, "status": "resolved"} for alert in change.cleared],
        "open": sorted(change.open),
        "text": text(change),
    }


def text(change: Changes) -> str:
    """The changes in a few lines: what opened, what cleared, how many stay open."""
    lines = [f"{len(change.opened)} new, {len(change.cleared)} cleared, {len(change.open)} open "
             f"(offsets_platform alerts)"]
    lines += [f"ALERT {alert['summary']}" for alert in change.opened]
    lines += [f"CLEARED {alert['summary']}" for alert in change.cleared]
    return "\n".join(lines)


class WebhookError(RuntimeError):
    """The receiver could not be reached, or did not answer 2xx."""


def post_json(url: str, body: dict, timeout_s: float, target: str = "the webhook") -> None:
    """POST `body` as JSON to `url`; WebhookError (naming `target`, not the URL, whose path can be
    a secret) when it does not answer 2xx within `timeout_s`."""
    data = json.dumps(body, default=_json_default).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": SOURCE})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
    except urllib.error.HTTPError as error:
        raise WebhookError(f"{target} answered HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:  # refused, unknown host, timed out
        reason = getattr(error, "reason", error)
        raise WebhookError(f"{target} could not be reached: {reason}") from None


def _by_group_and_topic(rows: list[dict], *more: str) -> dict[tuple, list[dict]]:
    grouped: dict[tuple, list[dict]] = {}
    for row in rows:
        key = (row["group_id"], row["topic"], *(row[name] for name in more))
        grouped.setdefault(key, []).append({k: v for k, v in row.items() if k not in ("group_id", "topic", *more)})
    return grouped


def _count(partitions: list[dict], noun: str) -> str:
    numbers = ", ".join(str(p["partition_id"]) for p in partitions[:10]) + (", ..." if len(partitions) > 10 else "")
    return f"{noun}{'s' if len(partitions) != 1 else ''} {numbers}"


def _hours(hours: float) -> str:
    return f"{hours:g} h"


def _when(hours_left: float | None) -> str:
    if hours_left is None:
        return "at an unknown time"
    return "due now" if hours_left <= 0 else f"in {hours_left:.1f} h"


def _json_default(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _jsonable(row: dict) -> dict:
    return {key: _json_default(value) if isinstance(value, datetime) else value for key, value in row.items()}
