"""The key numbers of a run, as metadata on the model assets that hold them.

One function per model, each returning the metadata to add to that model's materialization:
plain numbers (Dagster plots numeric metadata across materializations) and a Markdown table where
a person would rather look than read. The tables are read with delta-rs's SQL engine
(`Lake.query`), after the model has written them; `group` and `partition` are quoted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Sequence

from dagster import MetadataValue

from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string

# Rows shown in a Markdown table; the rest are counted in a last line.
MAX_ROWS = 20

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
    columns = ", ".join(f"sum(case when classification = {lake_string(value)} then 1 else 0 end) as {value}"
                        for value, _ in _CLASSIFICATIONS)
    rows = lake.query(f"select state, count(*) as groups, {columns} from group_state group by state "
                      "order by groups desc, state", "group_state").to_pylist()
    by_state = {row["state"]: row["groups"] for row in rows}
    table = markdown_table(["state", "groups", *(label for _, label in _CLASSIFICATIONS)],
                           [[row["state"], row["groups"], *(row[value] for value, _ in _CLASSIFICATIONS)]
                            for row in rows],
                           empty="No groups known.")
    return {
        "groups": sum(by_state.values()),
        "groups_stable": by_state.get("Stable", 0),
        "groups_empty": by_state.get("Empty", 0),
        "groups_dead": by_state.get("Dead", 0),
        "groups_by_state": MetadataValue.md(table),
    }


def expirable_offsets_numbers(lake: Lake) -> dict:
    """Committed offsets that Kafka's rules expire within 24 hours of the run, by group and topic."""
    (totals,) = lake.query("""
        select count(*) as offsets,
               coalesce(sum(case when rule <> 'not_eligible' then 1 else 0 end), 0) as eligible,
               coalesce(sum(case when expired_now then 1 else 0 end), 0) as expired_now,
               coalesce(sum(case when not expired_now and hours_until_expiry <= 24 then 1 else 0 end), 0) as within_24h,
               max(evaluated_at) as evaluated_at
        from expirable_offsets""", "expirable_offsets").to_pylist()
    rows = lake.query("""
        select "group", topic, rule, count(*) as partitions, min(expires_at) as first_expires_at,
               min(hours_until_expiry) as hours_left
        from expirable_offsets
        where not expired_now and hours_until_expiry <= 24
        group by "group", topic, rule
        order by first_expires_at, "group", topic""", "expirable_offsets").to_pylist()
    table = markdown_table(["group", "topic", "rule", "partitions", "first expires at", "hours left"],
                           [[r["group"], r["topic"], r["rule"], r["partitions"], _time(r["first_expires_at"]),
                             f"{r['hours_left']:.1f}"] for r in rows],
                           empty="No committed offset expires within 24 h"
                                 + (f" of {_time(totals['evaluated_at'])}." if totals["evaluated_at"] else "."))
    return {
        "offsets_expiring_within_24h": totals["within_24h"],
        "offsets_expired_now": totals["expired_now"],
        "offsets_eligible_for_expiration": totals["eligible"],
        "expiring_within_24h": MetadataValue.md(table),
    }


def unconsumed_messages_numbers(lake: Lake) -> dict:
    """Messages retention deleted before a watched group consumed them (KIP-490), by group and topic."""
    (totals,) = lake.query("""
        select coalesce(sum(lost_count), 0) as lost, count(distinct "group") as groups
        from unconsumed_messages""", "unconsumed_messages").to_pylist()
    rows = lake.query("""
        select "group", topic, count(distinct "partition") as partitions, sum(lost_count) as lost,
               sum(lost_count_at_least) as at_least, max(observed_at) as last_seen
        from unconsumed_messages
        group by "group", topic
        order by lost desc, "group", topic""", "unconsumed_messages").to_pylist()
    table = markdown_table(["group", "topic", "partitions", "messages lost (at most)", "at least", "last seen"],
                           [[r["group"], r["topic"], r["partitions"], f"{r['lost']:,}", f"{r['at_least']:,}",
                             _time(r["last_seen"])]
                            for r in rows],
                           empty="Retention has not deleted any message before a watched group consumed it.")
    return {
        "messages_lost_to_retention": totals["lost"],
        "groups_that_lost_messages": totals["groups"],
        "lost_by_group": MetadataValue.md(table),
    }


KEY_NUMBERS: dict[str, Callable[[Lake], dict]] = {
    "group_state": group_state_numbers,
    "expirable_offsets": expirable_offsets_numbers,
    "unconsumed_messages": unconsumed_messages_numbers,
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


def _time(value: datetime | None) -> str:
    return "" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"
