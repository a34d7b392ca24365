"""The key numbers of a run, as metadata on the model assets that hold them.

One function per model, each returning the metadata to add to that model's materialization:
plain numbers (Dagster plots numeric metadata across materializations) and a Markdown table where
a person would rather look than read. The numbers come from offsets_platform.views.attention, which the
command line, the report and the notebooks read too, so the UI shows the same answers.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Callable, Sequence

from dagster import MetadataValue

from offsets_platform.views import attention
from offsets_platform.durations import age_text, time_left_text
from offsets_platform.lake import Lake

# Rows shown in a Markdown table; the rest are counted in a last line.
MAX_ROWS = 20
# Rows of a "top groups" table.
TOP_ROWS = 10

_CLASSIFICATIONS = (("consumer", "consumer"), ("standalone", "standalone"), ("kip848_consumer", "KIP-848 consumer"),
                    ("other_protocol", "other protocol"))


def key_numbers(lake: Lake, model: str) -> dict:
    """The key-number metadata of `model` ({} for a model without key numbers or without a table:
    a table that was never written would read as empty, and "0 groups" would not be true)."""
    function = KEY_NUMBERS.get(model)
    if function is None or not lake.exists(model):
        return {}
    return function(lake)


def group_state_numbers(lake: Lake) -> dict:
    """Groups by state, and by kind of group within each state."""
    rows = attention.groups_by_state(lake)
    by_state: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        by_state[row["state"]][row["classification"]] += row["groups"]
    totals = attention.state_totals(rows)
    table = markdown_table(["state", "groups", *(label for _, label in _CLASSIFICATIONS)],
                           [[state, total, *(by_state[state][value] for value, _ in _CLASSIFICATIONS)]
                            for state, total in totals.items()],
                           empty="No groups known.")
    return {
        "groups": sum(totals.values()),
        "groups_stable": totals.get("Stable", 0),
        "groups_empty": totals.get("Empty", 0),
        "groups_dead": totals.get("Dead", 0),
        "groups_by_state": MetadataValue.md(table),
    }


def expirable_offsets_numbers(lake: Lake) -> dict:
    """Committed offsets Kafka expires within 24 hours of the run (or already due), by group and topic."""
    hours = attention.DEFAULT_WITHIN_HOURS
    by_rule = attention.expiration_by_rule(lake, hours)
    soon = attention.expiring_by_topic(lake, hours)
    table = markdown_table(["group", "topic", "rule", "partitions", "of them due now", "first expires at",
                            "time left"],
                           [[row["group_id"], row["topic"], row["rule"], row["partitions"], row["due_now"],
                             _time(row["first_expires_at"]), time_left_text(row["hours_until_first"])] for row in soon],
                           empty=f"No committed offset expires within {hours} h.")
    abandoned = attention.abandoned_offsets(lake)
    return {
        "offsets_expiring_within_24h": sum(row["due_within"] for row in by_rule),
        "offsets_expired_now": sum(row["due_now"] for row in by_rule),
        "offsets_eligible_for_expiration": sum(row["offsets"] for row in by_rule if row["rule"] != "not_eligible"),
        "expiring_within_24h": MetadataValue.md(table),
        "abandoned_offsets": sum(row["partitions"] for row in abandoned),
    }


def unconsumed_messages_numbers(lake: Lake) -> dict:
    """Messages retention deleted before a watched group consumed them (KIP-490), by group and topic."""
    losses = [row for row in attention.retention_losses(lake) if row["messages_lost"]]
    table = markdown_table(["group", "topic", "partitions", "messages lost (at most)", "at least", "last seen"],
                           [[r["group_id"], r["topic"], r["partitions_lost"], f"{r['messages_lost']:,}",
                             f"{r['messages_lost_at_least']:,}", _time(r["last_loss_at"])]
                            for r in losses],
                           empty="Retention has not deleted any message before a watched group consumed it.")
    return {
        "messages_lost_to_retention": sum(row["messages_lost"] for row in losses),
        "groups_that_lost_messages": len({row["group_id"] for row in losses}),
        "lost_by_group": MetadataValue.md(table),
    }


def consumer_lag_numbers(lake: Lake) -> dict:
    """Lag in messages and in time, in all and for the groups furthest behind each way (abandoned
    offsets left out, as everywhere a lag is shown)."""
    by_messages = attention.lag_by_group(lake)
    by_time = sorted((row for row in by_messages if row["lag_ms"] is not None), key=lambda row: -row["lag_ms"])

    def top(rows: list[dict]) -> MetadataValue:
        return MetadataValue.md(markdown_table(
            ["group", "lag (messages)", "oldest unread message"],
            [[row["group_id"], f"{row['lag_messages']:,}", _age(row["lag_ms"])] for row in rows],
            empty="No group lags.", max_rows=TOP_ROWS))

    return {
        "lag_messages": sum(row["lag_messages"] for row in by_messages),
        "groups_lagging": len(by_messages),
        "max_lag_seconds": by_time[0]["lag_ms"] / 1000 if by_time else 0.0,
        "top_groups_by_lag": top(by_messages),
        "top_groups_by_time_behind": top(by_time),
    }


def consumer_status_numbers(lake: Lake) -> dict:
    """Groups by Burrow's status, and the groups that are not OK with their partitions' statuses."""
    groups = attention.groups_by_status(lake)
    counts = {status: sum(1 for group in groups if group["status"] == status) for status in attention.GROUP_STATUSES}
    not_ok = [[group["group_id"], group["status"], group["partitions"],
               ", ".join(f"{status} {count}" for status, count in sorted(group["partition_statuses"].items()))]
              for group in groups if group["status"] != "OK"]
    return {
        **{f"groups_{status.lower()}": count for status, count in counts.items()},
        "groups_not_ok": MetadataValue.md(markdown_table(
            ["group", "status", "partitions", "partitions by status"], not_ok,
            empty="Every group judged is OK." if groups else "No group judged yet (consumer_status is empty).")),
    }


KEY_NUMBERS: dict[str, Callable[[Lake], dict]] = {
    "group_state": group_state_numbers,
    "consumer_lag": consumer_lag_numbers,
    "consumer_status": consumer_status_numbers,
    "expirable_offsets": expirable_offsets_numbers,
    "unconsumed_messages": unconsumed_messages_numbers,
}

# The tables each model's key numbers read (offsets_platform.views.attention's queries): a refresh
# materializes the model once all of them are written.
KEY_NUMBER_INPUTS: dict[str, set[str]] = {
    "group_state": {"group_state"},
    "consumer_lag": {"consumer_lag", "expirable_offsets"},
    "consumer_status": {"consumer_status"},
    "expirable_offsets": {"expirable_offsets", "consumer_lag"},
    "unconsumed_messages": {"unconsumed_messages", "retention_forecast", "expirable_offsets"},
}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], empty: str, max_rows: int = MAX_ROWS) -> str:
    """A Markdown table of the first `max_rows` rows (a line counts the rest); `empty` when no rows."""
    if not rows:
        return empty
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows[:max_rows]]
    if len(rows) > max_rows:
        lines.append(f"\n… and {len(rows) - max_rows:,} more rows.")
    return "\n".join(lines)


def _cell(value) -> str:
    if value is None:
        return ""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _age(milliseconds: int | None) -> str:
    return "" if milliseconds is None else age_text(milliseconds / 1000)


def _time(value: datetime | None) -> str:
    return "" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"
