"""What a cleanup could remove, read from the gold and silver tables.

- OffsetDelete (KIP-496) for committed offsets of topics no live member of the group subscribes
  to (rules `unsubscribed_topic`, `kip848_unsubscribed_topic` and `streams_unsubscribed_topic`):
  the stale offsets that make lag alerts lie. Only for groups with members: an Empty group
  subscribes to nothing, so every offset of an Empty KIP-848 or streams group would qualify, and
  a group briefly Empty during a redeploy would restart from auto.offset.reset.
- DeleteGroups (KIP-229) for groups Empty, without members, for longer than `idle_hours`, of
  every kind (classic, KIP-848, streams; Kafka deletes an Empty group of any of them). A
  standalone group (assign() and commit, no group record) is Empty by definition, however often
  it commits, so it is proposed only once each of its offsets is past Kafka's own expiry
  (OffsetMetadataManager.cleanupExpiredOffsets would remove them, and then the group, anyway).

Never an offset of a topic a member subscribes to, never a group with members. Kafka would refuse
such an action when applied (GROUP_SUBSCRIBED_TO_TOPIC, NON_EMPTY_GROUP), but a plan that holds
one could never be applied as approved; leaving them out keeps every approved action applicable
and the reviewer's list free of actions that are unsafe by design.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string

DEFAULT_IDLE_HOURS = 168

# The candidates name a group and a partition as the model tables do, group_id and partition_id;
# a plan's actions and the cleanup tables, stored as Kafka names them, say group and partition.
_STALE_OFFSETS = """
select e.group_id, e.topic, e.partition_id, e.committed_offset, e.estimated_committed_at,
       e.expires_at, l.lag_messages
from expirable_offsets e
join group_state g on g.group_id = e.group_id
left join consumer_lag l on l.group_id = e.group_id and l.topic = e.topic and l.partition_id = e.partition_id
left join group_subscriptions s on s.group_id = e.group_id and s.topic = e.topic
where e.rule in ('unsubscribed_topic', 'kip848_unsubscribed_topic', 'streams_unsubscribed_topic')
  and s.topic is null and g.count_members > 0 and g.state not in ('Empty', 'Dead')
order by e.group_id, e.topic, e.partition_id
"""



@dataclass(frozen=True)
class CleanupCandidates:
    offset_deletes: list[dict]  # group_id, topic, partition_id, committed_offset, commit time, expires_at, lag
    group_deletes: list[dict]  # group_id, state, state_entered_at, classification, committed_offsets
    idle_hours: int

    def offset_groups(self) -> list[str]:
        return sorted({row["group_id"] for row in self.offset_deletes})


# What the candidates are read from. Before the models have run, an empty answer would say there
# is nothing to clean up while nothing has been looked at.
MODEL_TABLES = ("expirable_offsets", "group_state", "consumer_lag", "group_subscriptions", "committed_offsets")
RUN_THE_MODELS = "run the models first (`offsets-platform models`, or the refresh job)"


def cleanup_candidates(lake: Lake, idle_hours: int = DEFAULT_IDLE_HOURS) -> CleanupCandidates:
    """The offsets and groups a cleanup could remove now (nothing is sent to any broker here).

    Raises:
        MissingTable: the models have not run in this lake yet.
    """
    lake.require(MODEL_TABLES, RUN_THE_MODELS)
    stale = lake.query(_STALE_OFFSETS, "expirable_offsets", "group_state", "consumer_lag",
                       "group_subscriptions").to_pylist()
    evaluated = lake.query("select max(evaluated_at) as at from expirable_offsets", "expirable_offsets")
    now = evaluated.column("at")[0].as_py()
    idle_interval = lake_string(f"{int(idle_hours)} hours")
    idle = []
    if now is not None:
        idle = [row for row in lake.query(
            f"""select g.group_id, g.state, g.state_entered_at, g.classification,
                       count(o.topic) as committed_offsets
                from group_state g
                left join committed_offsets o on o.group_id = g.group_id
                left join expirable_offsets e
                  on e.group_id = o.group_id and e.topic = o.topic and e.partition_id = o.partition_id
                where g.state = 'Empty' and g.count_members = 0
                  and g.state_entered_at < to_timestamp_micros({int(now.timestamp() * 1e6)})
                                      - interval {idle_interval}
                group by g.group_id, g.state, g.state_entered_at, g.classification
                having g.classification <> 'standalone'
                    or count(o.topic) = count(case when e.is_expired then 1 end)
                order by g.group_id""",
            "group_state", "committed_offsets", "expirable_offsets").to_pylist()]
    return CleanupCandidates(offset_deletes=stale, group_deletes=idle, idle_hours=idle_hours)
