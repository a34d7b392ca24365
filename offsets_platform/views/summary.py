"""Short human summaries of the lake, for the demo, the CLI and the report's headline.

They state facts (rows, what the latest snapshot reported) and the models' answers through
offsets_platform.views.attention; no rule of Kafka's is worked out here a second time, so the summary
cannot disagree with the models, the UI or the report.
"""

from __future__ import annotations

from offsets_platform.views import attention
from offsets_platform.durations import age_text
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.views.candidates import DEFAULT_IDLE_HOURS
from offsets_platform.views.from_lake import last_resets, reset_text

# Rows of a list a summary shows before "and N more".
SHOWN = 5


def bronze_summary(lake: Lake) -> list[str]:
    """Lines describing bronze: rows per table (states, lag and expirations come from the models)."""
    return [f"{name:<26} {lake.count(name):>12,} rows   {lake.path(name)}" for name in RECORD_TABLES]


# The latest complete snapshot: `broker_configs` is written last, one row per snapshot, and
# tables without rows are not written at all, so every table is read at this one snapshot.
_LATEST_SNAPSHOT = "(select snapshot_id from broker_configs order by snapshot_at desc limit 1)"

_GROUPS_BY_STATE = """
select state, count(*) as groups from group_snapshots
where snapshot_id = {snapshot} group by state order by state
"""

_SNAPSHOT_OFFSETS = f"""
select count(*) as offsets, count(distinct "group") as groups, count(distinct topic) as topics
from committed_offset_snapshots where snapshot_id = {_LATEST_SNAPSHOT}
"""


def groups_by_state(lake: Lake, snapshot_id: str | None = None) -> list[dict]:
    """[{"state", "groups"}] in one snapshot (default: the latest complete one)."""
    snapshot = lake_string(snapshot_id) if snapshot_id else _LATEST_SNAPSHOT
    return lake.query(_GROUPS_BY_STATE.format(snapshot=snapshot), "group_snapshots", "broker_configs").to_pylist()


def snapshot_summary(lake: Lake) -> list[str]:
    """Lines describing the latest complete admin-API snapshot: group states as the cluster
    reported them, and how many committed offsets it holds."""
    if lake.count("broker_configs") == 0:
        return ["no admin-API snapshot yet"]
    states = ", ".join(f"{row['state']} {row['groups']}" for row in groups_by_state(lake))
    (offsets,) = lake.query(_SNAPSHOT_OFFSETS, "committed_offset_snapshots", "broker_configs").to_pylist()
    return [f"live groups by state (latest snapshot): {states or 'no groups'}",
            f"committed offsets in it: {offsets['offsets']:,} of {offsets['groups']:,} groups on "
            f"{offsets['topics']:,} topics (lag and retention losses: the models)"]


def models_summary(lake: Lake, within_hours: int = attention.DEFAULT_WITHIN_HOURS) -> list[str]:
    """Lines from the models' tables: group states, lag, retention loss, expirations, cleanup."""
    if not lake.exists("group_state"):
        return ["the models have not run yet"]
    offset_deletes, group_deletes = attention.cleanup_rows(lake)
    states = attention.groups_by_state(lake)
    lines = ["groups by state: " + ", ".join(" ".join(str(part) for part in (r["state"], r["classification"], r["groups"])
                                                          if part is not None) for r in states)]
    lagging = attention.lag_by_group(lake)
    for row in lagging[:SHOWN]:
        lines.append(f"  lag {row['group_id']}: {row['lag_messages']:,} messages, {_oldest_unread(row)}")
    lines += _more(lagging, "lagging groups")
    for row in attention.retention_losses(lake, within_hours):
        if row["messages_lost"]:
            lines.append(f"  lost to retention (KIP-490): {row['group_id']} never consumed {_lost_count(row)} "
                         f"of {row['topic']} that retention deleted")
    abandoned = attention.abandoned_offsets(lake)
    for row in abandoned[:SHOWN]:
        lines.append(f"  abandoned: {row['group_id']} no longer subscribes to {row['topic']} and left "
                     f"{row['partitions']:,} offsets there ({row['lag_messages'] or 0:,} messages unread; "
                     "not counted as lag or loss)")
    lines += _more(abandoned, "groups' abandoned offsets")
    lines.append("offset expiration by rule (offsets: already due / within "
                 f"{within_hours} h / next expiry):")
    for row in attention.expiration_by_rule(lake, within_hours):
        next_at = f"{row['next_expiry_at']:%Y-%m-%d %H:%M} UTC" if row["next_expiry_at"] else "-"
        lines.append(f"  {row['rule']:<26} {row['offsets']:>7,}: {row['due_now']:,} / {row['due_within']:,} / "
                     f"{next_at}")
    offset_groups = {row["group_id"] for row in offset_deletes}
    lines.append(f"a cleanup would: OffsetDelete {len(offset_deletes):,} stale offsets of unsubscribed topics in "
                 f"{len(offset_groups):,} groups; DeleteGroups for {len(group_deletes):,} groups Empty longer "
                 f"than {DEFAULT_IDLE_HOURS} h")
    for row in offset_deletes[:SHOWN]:
        lines.append(f"  OffsetDelete {row['group_id']} {row['topic']}-{row['partition_id']} (offset {row['committed_offset']})")
    lines += _more(offset_deletes, "stale offsets")
    for row in group_deletes[:SHOWN]:
        lines.append(f"  DeleteGroups {row['group_id']} (Empty since {row['state_entered_at']:%Y-%m-%d %H:%M} UTC)")
    lines += _more(group_deletes, "groups")
    resets = last_resets(lake)
    for row in resets[:SHOWN]:
        lines.append(f"  offsets of {row['group_id']} last reset {reset_text(row)}")
    lines += _more(resets, "groups' last offset resets")
    return lines


def headline(lake: Lake, within_hours: int = attention.DEFAULT_WITHIN_HOURS) -> list[str]:
    """The report's headline: the models' answers in a few sentences (groups, lag, losses, messages
    at risk, expirations, abandoned offsets, cleanup), from the same queries as every other surface."""
    if not lake.exists("group_state"):
        return ["The models have not run yet."]
    totals = attention.state_totals(attention.groups_by_state(lake))
    sentences = [f"{_count(sum(totals.values()), 'group')}: "
                 + ", ".join(f"{count:,} {state}" for state, count in totals.items()) + "."
                 if totals else "No groups known yet."]
    lagging = attention.lag_by_group(lake)
    sentences.append(
        f"{_count(len(lagging), 'group')} {'lags' if len(lagging) == 1 else 'lag'}, "
        f"{_count(sum(r['lag_messages'] for r in lagging), 'message')} in all; furthest behind: "
        + "; ".join(f"{r['group_id']}, {_count(r['lag_messages'], 'message')} ({_oldest_unread(r)})"
                    for r in lagging[:3]) + "."
        if lagging else "No group lags.")
    losses = attention.retention_losses(lake, within_hours)
    lost = [r for r in losses if r["messages_lost"]]
    sentences.append(
        f"Retention deleted messages before {_count(len({r['group_id'] for r in lost}), 'group')} read them: "
        + "; ".join(f"{r['group_id']} lost {_lost_count(r)} of {r['topic']}" for r in lost[:3])
        + (f"; and {len(lost) - 3:,} more" if len(lost) > 3 else "") + "."
        if lost else "Retention has deleted no message before a group read it.")
    at_risk = [r for r in losses if r["messages_at_risk"]]
    if at_risk:
        sentences.append(f"Due for deletion by retention within {within_hours} h: "
                         f"{_count(sum(r['messages_at_risk'] for r in at_risk), 'unread message')} of "
                         f"{_count(len({r['group_id'] for r in at_risk}), 'group')}.")
    by_rule = attention.expiration_by_rule(lake, within_hours)
    due_now, due_within = sum(r["due_now"] for r in by_rule), sum(r["due_within"] for r in by_rule)
    sentences.append(f"Due to expire at Kafka's next check: {_count(due_now, 'committed offset')}, and "
                     f"{due_within:,} more within {within_hours} h." if due_now or due_within
                     else f"No committed offset expires within {within_hours} h.")
    abandoned = attention.abandoned_offsets(lake)
    if abandoned:
        sentences.append(f"Left behind on topics no member subscribes to any more: "
                         f"{_count(sum(r['partitions'] for r in abandoned), 'committed offset')} of "
                         f"{_count(len({r['group_id'] for r in abandoned}), 'group')} (not counted as lag or loss).")
    offset_deletes, group_deletes = attention.cleanup_rows(lake)
    sentences.append(f"A cleanup would delete {_count(len(offset_deletes), 'stale offset')} in "
                     f"{_count(len({r['group_id'] for r in offset_deletes}), 'group')}, and "
                     f"{_count(len(group_deletes), 'group')} Empty for longer than {DEFAULT_IDLE_HOURS} h."
                     if offset_deletes or group_deletes
                     else "Nothing to clean up.")
    resets = last_resets(lake)
    if resets:
        sentences.append(f"Offsets reset by this tool: {_count(len(resets), 'group')}; the latest, "
                         + "; ".join(f"{r['group_id']}, {reset_text(r)}" for r in resets[:3])
                         + (f"; and {len(resets) - 3:,} more" if len(resets) > 3 else "") + ".")
    return sentences


def _oldest_unread(row: dict) -> str:
    """How old a lagging group's oldest unread message is, or that retention deleted them all."""
    if not row["unread_in_log"]:
        return "retention deleted all of it before the group read it"
    return f"the oldest unread message {age_text(row['lag_ms'] / 1000)} old"


def _count(number: int, noun: str) -> str:
    """"1 group", "3 groups": a count and its noun, in the plural where it is not one."""
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _lost_count(row: dict) -> str:
    most, least = row["messages_lost"], row["messages_lost_at_least"]
    return f"{most:,} messages" if least == most else f"{least:,} to {most:,} messages"


def _more(rows: list, what: str) -> list[str]:
    return [f"  and {len(rows) - SHOWN:,} more {what}"] if len(rows) > SHOWN else []
