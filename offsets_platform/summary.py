"""A short human summary of what bronze holds, for the demo and the CLI."""

from __future__ import annotations

from offsets_platform.lake import Lake
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
