"""A short human summary of what bronze holds, for the demo and the CLI.

These are quick looks with delta-rs's SQL engine; the Spark SQL models own the real answers.
"""

from __future__ import annotations

from offsets_platform.lake import Lake, MissingTable
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.lake.tables import RECORD_TABLES

# A group's records all live in one partition of __consumer_offsets, so the highest source
# offset is the latest. The latest classic group record says the state as the log knows it: a
# tombstone means Dead, no members Empty, members Stable (transitional states are never logged).
_GROUP_STATES = """
with ranked as (
    select "group", tombstone, member_count,
           row_number() over (partition by "group" order by source_offset desc) as rn
    from group_metadata_records
)
select case when tombstone then 'Dead' when member_count = 0 then 'Empty' else 'Stable' end as state,
       count(*) as groups
from ranked where rn = 1 group by 1 order by 1
"""

# Current committed offsets: the latest record per (group, topic, partition), unless a tombstone.
_LIVE_OFFSETS = """
with ranked as (
    select "group", topic, "partition", tombstone,
           row_number() over (partition by "group", topic, "partition"
                              order by source_offset desc) as rn
    from offset_commit_records
)
select count(*) as live_offsets, count(distinct "group") as groups_with_offsets
from ranked where rn = 1 and not tombstone
"""


def bronze_summary(lake: Lake) -> list[str]:
    """Lines describing bronze: rows per table, groups by state, live committed offsets."""
    lines = [f"{name:<26} {lake.count(name):>12,} rows   {lake.path(name)}" for name in RECORD_TABLES]
    states = lake.query(_GROUP_STATES, "group_metadata_records").to_pylist()
    if states:
        lines.append("classic groups by state (latest group record): "
                     + ", ".join(f"{row['state']} {row['groups']}" for row in states))
    (live,) = lake.query(_LIVE_OFFSETS, "offset_commit_records").to_pylist()
    lines.append(f"committed offsets still live (tombstones applied): {live['live_offsets']:,} "
                 f"in {live['groups_with_offsets']:,} groups")
    return lines


# The latest complete snapshot: `broker_configs` is written last, one row per snapshot, and
# tables without rows are not written at all, so every table is read at this one snapshot.
_LATEST_SNAPSHOT = "(select snapshot_id from broker_configs order by snapshot_at desc limit 1)"

_GROUPS_BY_STATE = """
select state, count(*) as groups from group_snapshots
where snapshot_id = {snapshot} group by state order by state
"""

# Lag per group in one snapshot; a committed offset below the log start means retention deleted
# messages the group never consumed (KIP-490).
_LAG = f"""
select o."group", sum(l.log_end_offset - o.committed_offset) as lag,
       sum(case when o.committed_offset < l.log_start_offset
                then l.log_start_offset - o.committed_offset else 0 end) as lost_to_retention
from committed_offset_snapshots o
join log_offset_snapshots l
  on o.snapshot_id = l.snapshot_id and o.topic = l.topic and o."partition" = l."partition"
where o.snapshot_id = {_LATEST_SNAPSHOT} and o.committed_offset >= 0
group by o."group" order by o."group"
"""


def groups_by_state(lake: Lake, snapshot_id: str | None = None) -> list[dict]:
    """[{"state", "groups"}] in one snapshot (default: the latest complete one)."""
    snapshot = lake_string(snapshot_id) if snapshot_id else _LATEST_SNAPSHOT
    return lake.query(_GROUPS_BY_STATE.format(snapshot=snapshot), "group_snapshots", "broker_configs").to_pylist()


def snapshot_summary(lake: Lake) -> list[str]:
    """Lines describing the latest admin-API snapshot: live group states, lag, retention loss."""
    if lake.count("broker_configs") == 0:
        return ["no admin-API snapshot yet"]
    states = ", ".join(f"{row['state']} {row['groups']}" for row in groups_by_state(lake))
    lines = [f"live groups by state (latest snapshot): {states or 'no groups'}"]
    for row in lake.query(_LAG, "committed_offset_snapshots", "log_offset_snapshots", "broker_configs").to_pylist():
        lost = (f", {row['lost_to_retention']:,} messages deleted by retention before it consumed them"
                if row["lost_to_retention"] else "")
        lines.append(f"  {row['group']}: lag {row['lag']:,} messages{lost}")
    return lines


def models_summary(lake: Lake, within_hours: int = 24) -> list[str]:
    """Lines from the gold tables: group states, lag, retention loss, expirations, cleanup."""
    from offsets_platform.cleanup import cleanup_candidates  # cleanup reads the same tables

    try:
        candidates = cleanup_candidates(lake)  # it needs the models' tables that the lines below read
    except MissingTable:
        return ["the models have not run yet"]
    lines = []
    states = lake.query("""select state, classification, count(*) as n from group_state
                           group by state, classification order by state, classification""",
                        "group_state").to_pylist()
    lines.append("groups by state: " + ", ".join(f"{r['state']} {r['classification']} {r['n']}" for r in states))
    for row in lake.query("""select "group", sum(lag_messages) as lag, max(lag_ms) as lag_ms
                             from consumer_lag group by "group" having sum(lag_messages) > 0
                             order by lag desc limit 5""", "consumer_lag").to_pylist():
        lines.append(f"  lag {row['group']}: {row['lag']:,} messages, oldest unconsumed {row['lag_ms'] / 1000:,.1f} s old")
    for row in lake.query("""select "group", topic, sum(lost_count) as lost, sum(lost_count_at_least) as at_least
                             from unconsumed_messages
                             group by "group", topic order by lost desc""", "unconsumed_messages").to_pylist():
        count = f"{row['lost']:,}" if row["at_least"] == row["lost"] else f"{row['at_least']:,} to {row['lost']:,}"
        lines.append(f"  lost to retention (KIP-490): {row['group']} never consumed {count} "
                     f"messages of {row['topic']} that retention deleted")
    expiring = lake.query(f"""
        select rule, count(*) as offsets, sum(case when expired_now then 1 else 0 end) as expired,
               sum(case when not expired_now and hours_until_expiry <= {within_hours} then 1 else 0 end) as soon,
               min(case when not expired_now then expires_at end) as next_at
        from expirable_offsets group by rule order by rule""", "expirable_offsets").to_pylist()
    lines.append("offset expiration by rule (offsets: already due / within "
                 f"{within_hours} h / next expiry):")
    for row in expiring:
        next_at = f"{row['next_at']:%Y-%m-%d %H:%M} UTC" if row["next_at"] else "-"
        lines.append(f"  {row['rule']:<26} {row['offsets']:>7,}: {row['expired']:,} / {row['soon']:,} / {next_at}")
    lines.append(f"a cleanup would: OffsetDelete {len(candidates.offset_deletes):,} stale offsets of "
                 f"unsubscribed topics in {len(candidates.offset_groups()):,} groups; DeleteGroups for "
                 f"{len(candidates.group_deletes):,} groups Empty longer than {candidates.idle_hours} h")
    for row in candidates.offset_deletes[:5]:
        lines.append(f"  OffsetDelete {row['group']} {row['topic']}-{row['partition']} (offset {row['committed_offset']})")
    for row in candidates.group_deletes[:5]:
        lines.append(f"  DeleteGroups {row['group']} (Empty since {row['state_since']:%Y-%m-%d %H:%M} UTC)")
    return lines
