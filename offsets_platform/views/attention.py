"""The numbers a person looks at, each defined once, over the models' tables.

The command line's summary, the Dagster UI's key numbers, the report and the notebooks all read
these functions, so that two places never show two answers to one question. The rules behind
the rows (when an offset expires, what a group lags, what retention deleted before a group read
it) belong to the models; this module only selects, sums and orders their rows:

- "expiring within H hours" is an offset whose `hours_until_expiry` is at most H. It includes
  the ones already due (`is_expired`): Kafka expires those at its next retention check. Hours
  rather than `expires_at` decide, because Kafka may store an expiry time the lake's timestamps
  cannot hold (`expires_at` is then null).
- "messages lost" is `unconsumed_messages.count_lost`: the most retention can have deleted
  before the group read them; `count_lost_at_least` is the least.
- "messages at risk" is `retention_forecast.unread_in_log` of the partitions whose next deletion
  is due within H hours: unread and still in the log, so never also counted as lost.
- "lag" is `consumer_lag.lag_messages` (Kafka's: log end minus committed offset, so it includes
  what retention deleted), and its age `lag_ms`, that of the oldest unread message still in the log.
- "abandoned offsets" are those `expirable_offsets.is_abandoned` marks: the group reads on but
  no member subscribes to the topic any more. Their lag and losses are listed as abandoned, never
  as lag, loss or risk. So are the losses `unconsumed_messages.is_abandoned` marks, seen while the
  group had left the topic: they stay no one's once the offset is gone (deleted by a cleanup plan,
  or expired by Kafka), when expirable_offsets no longer has it.

Every function reads with delta-rs's SQL engine (`Lake.query`); a table no model has written
yet reads as empty. The rows name a group and a partition as the tables do, `group_id` and
`partition_id`, and so does every front end that prints them.
"""

from __future__ import annotations

from datetime import datetime

from offsets_platform.lake import Lake, MissingTable
from offsets_platform.lake.sql_literals import lake_timestamp
from offsets_platform.views.candidates import cleanup_candidates

DEFAULT_WITHIN_HOURS = 24


# A Dead group's last record is a tombstone, which names no protocol: the model's classification
# of it (standalone, the kind without one) says nothing about what the group was, so a person is
# shown no kind for it. The expiration rules still read the model's.
KIND = "case when state = 'Dead' then null else classification end"


def groups_by_state(lake: Lake) -> list[dict]:
    """[{state, classification, groups}] from group_state, most groups first (Dead: no classification)."""
    return lake.query(f"""select state, {KIND} as classification, count(*) as groups from group_state
                          group by state, {KIND} order by groups desc, state, classification""",
                      "group_state").to_pylist()


def state_totals(by_state: list[dict]) -> dict[str, int]:
    """`groups_by_state`'s rows summed per state: {state: groups}, most groups first, then by name."""
    totals: dict[str, int] = {}
    for row in by_state:
        totals[row["state"]] = totals.get(row["state"], 0) + row["groups"]
    return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


def expiration_by_rule(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS) -> list[dict]:
    """Per expiration rule: offsets, due_now (Kafka expires them at its next check), due_within
    (not yet due, expiring within `within_hours`), next_expiry_at (of those not yet due)."""
    return lake.query(f"""
        select rule, count(*) as offsets,
               sum(case when is_expired then 1 else 0 end) as due_now,
               sum(case when not is_expired and hours_until_expiry <= {float(within_hours)} then 1 else 0 end)
                   as due_within,
               min(case when not is_expired then expires_at end) as next_expiry_at
        from expirable_offsets group by rule order by rule""", "expirable_offsets").to_pylist()


def expiring_soon(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS) -> list[dict]:
    """Committed offsets Kafka expires within `within_hours` (already due ones included), soonest first."""
    return lake.query(f"""
        select group_id, topic, partition_id, rule, group_state, committed_offset,
               expires_at, hours_until_expiry, is_expired
        from expirable_offsets where hours_until_expiry <= {float(within_hours)}
        order by hours_until_expiry, group_id, topic, partition_id
        """, "expirable_offsets").to_pylist()


def expiring_by_topic(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS) -> list[dict]:
    """`expiring_soon` per group, topic and rule: how many partitions, how many of them are due
    already, and the first expiry; soonest first."""
    grouped: dict[tuple, dict] = {}
    for row in expiring_soon(lake, within_hours):
        key = (row["group_id"], row["topic"], row["rule"])
        entry = grouped.setdefault(key, {
            "group_id": row["group_id"], "topic": row["topic"], "rule": row["rule"], "group_state": row["group_state"],
            "partitions": 0, "due_now": 0, "first_expires_at": None, "hours_until_first": row["hours_until_expiry"]})
        entry["partitions"] += 1
        entry["due_now"] += int(bool(row["is_expired"]))
        entry["first_expires_at"] = _earliest(entry["first_expires_at"], row["expires_at"])
    # expiring_soon orders by hours until expiry, so each entry's first row was its soonest
    return list(grouped.values())


# The partitions whose offset a group left behind (see the module docstring), to leave out.
NOT_ABANDONED = """not exists (select 1 from expirable_offsets a where a.is_abandoned and a.group_id = {t}.group_id
                                 and a.topic = {t}.topic and a.partition_id = {t}.partition_id)"""


# The losses (unconsumed_messages rows) of a group that had left the topic, or has left it now, to
# leave out.
LOSS_NOT_ABANDONED = "not {t}.is_abandoned and " + NOT_ABANDONED


def not_abandoned(table: str, t: str) -> str:
    """The condition on rows of a table keyed by group, topic and partition (alias `t`) that
    leaves out what a group abandoned: an offset it left behind now, and for a loss
    (`unconsumed_messages`) also one seen while it had left the topic."""
    return (LOSS_NOT_ABANDONED if table == "unconsumed_messages" else NOT_ABANDONED).format(t=t)


def due_for_deletion(t: str, within_hours: float) -> str:
    """The condition on retention_forecast rows (alias `t`) of "at risk": retention's next deletion
    of unread messages is due within the hours (due already included), abandoned offsets left out."""
    return f"{t}.hours_left <= {float(within_hours)} and {not_abandoned('retention_forecast', t)}"


def lag_by_group(lake: Lake, lagging_only: bool = True) -> list[dict]:
    """[{group_id, lag_messages, lag_ms, unread_in_log}] of the groups that lag (abandoned offsets
    left out), most messages first; with `lagging_only` False, also the groups whose lag is 0.
    `unread_in_log` is the part of the lag retention has not deleted (0: lag_ms has no message to
    age)."""
    having = "having sum(lag_messages) > 0" if lagging_only else ""
    return lake.query(f"""select group_id, sum(lag_messages) as lag_messages, max(lag_ms) as lag_ms,
                                 sum(unread_in_log) as unread_in_log
                          from consumer_lag l where {not_abandoned("consumer_lag", "l")}
                          group by group_id {having}
                          order by lag_messages desc, group_id
                       """, "consumer_lag", "expirable_offsets").to_pylist()


# Burrow's group statuses, worst first: the order a person reads a list of groups in.
GROUP_STATUSES = ("ERR", "WARN", "INCOMPLETE", "OK")


def groups_by_status(lake: Lake) -> list[dict]:
    """Per group consumer_status judged: [{group_id, status, partitions, partition_statuses}], the
    group's status (Burrow's, its worst partition's) and how many of its partitions are in each
    status ({"STALL": 2, "OK": 1}); worst first, then by name."""
    rows = lake.query("""select group_id, group_status, status, count(*) as partitions from consumer_status
                         group by group_id, group_status, status""", "consumer_status").to_pylist()
    groups: dict[str, dict] = {}
    for row in rows:
        group = groups.setdefault(row["group_id"], {"group_id": row["group_id"], "status": row["group_status"],
                                                    "partitions": 0, "partition_statuses": {}})
        group["partitions"] += row["partitions"]
        group["partition_statuses"][row["status"]] = row["partitions"]
    rank = {status: position for position, status in enumerate(GROUP_STATUSES)}
    return sorted(groups.values(), key=lambda group: (rank.get(group["status"], len(rank)), group["group_id"]))


def abandoned_offsets(lake: Lake) -> list[dict]:
    """Per group and topic, the offsets the group left behind: partitions, their lag, and the first
    time Kafka expires one (by the unsubscribed-topic rule). Most partitions first."""
    return lake.query("""
        select a.group_id, a.topic, count(*) as partitions, sum(l.lag_messages) as lag_messages,
               min(a.expires_at) as first_expires_at
        from expirable_offsets a
        left join consumer_lag l on l.group_id = a.group_id and l.topic = a.topic and l.partition_id = a.partition_id
        where a.is_abandoned
        group by a.group_id, a.topic order by partitions desc, a.group_id, a.topic
        """, "expirable_offsets", "consumer_lag").to_pylist()


def retention_losses(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS,
                     since: datetime | None = None) -> list[dict]:
    """Per group and topic: the messages retention deleted before the group read them
    (messages_lost at most, messages_lost_at_least, partitions_lost, last_loss_at), observed
    since `since` (default: ever), and those it is forecast to delete within `within_hours`
    (messages_at_risk, partitions_due, next_deletion_at); abandoned offsets left out. Groups that
    lost the most come first."""
    observed = f"and u.observed_at >= {lake_timestamp(since)}" if since else ""
    return lake.query(f"""
        with lost as (
            select group_id, topic, sum(count_lost) as messages_lost,
                   sum(count_lost_at_least) as messages_lost_at_least,
                   count(distinct partition_id) as partitions_lost, max(observed_at) as last_loss_at
            from unconsumed_messages u where {not_abandoned("unconsumed_messages", "u")} {observed} group by group_id, topic
        ),
        due as (
            select group_id, topic, sum(unread_in_log) as messages_at_risk,
                   count(distinct partition_id) as partitions_due, min(deletion_expected_at) as next_deletion_at
            from retention_forecast f where {due_for_deletion("f", within_hours)}
            group by group_id, topic
        )
        select coalesce(l.group_id, d.group_id) as group_id, coalesce(l.topic, d.topic) as topic,
               coalesce(l.messages_lost, 0) as messages_lost,
               coalesce(l.messages_lost_at_least, 0) as messages_lost_at_least,
               coalesce(l.partitions_lost, 0) as partitions_lost, l.last_loss_at,
               coalesce(d.messages_at_risk, 0) as messages_at_risk,
               coalesce(d.partitions_due, 0) as partitions_due, d.next_deletion_at
        from lost l full outer join due d on l.group_id = d.group_id and l.topic = d.topic
        order by messages_lost desc, messages_at_risk desc, group_id, topic""",
                      "unconsumed_messages", "retention_forecast", "expirable_offsets").to_pylist()


def cleanup_rows(lake: Lake) -> tuple[list[dict], list[dict]]:
    """(OffsetDelete candidates, DeleteGroups candidates), the ones a cleanup plan proposes; empty
    when the models have not run."""
    try:
        candidates = cleanup_candidates(lake)
    except MissingTable:
        return [], []
    return candidates.offset_deletes, candidates.group_deletes


def offset_deletes_by_topic(offset_deletes: list[dict]) -> list[dict]:
    """The OffsetDelete candidates one row per group and topic: [{group_id, topic, partitions,
    lag_messages, first_expires_at}], in the candidates' order (a group dropping a topic of 24
    partitions is one row, not 24)."""
    by_topic: dict[tuple[str, str], dict] = {}
    for row in offset_deletes:
        entry = by_topic.setdefault((row["group_id"], row["topic"]), {
            "group_id": row["group_id"], "topic": row["topic"], "partitions": 0, "lag_messages": None,
            "first_expires_at": None})
        entry["partitions"] += 1
        if row.get("lag_messages") is not None:
            entry["lag_messages"] = (entry["lag_messages"] or 0) + row["lag_messages"]
        entry["first_expires_at"] = _earliest(entry["first_expires_at"], row.get("expires_at"))
    return list(by_topic.values())


def _earliest(first: datetime | None, other: datetime | None) -> datetime | None:
    """The earlier of two times, either unknown (None)."""
    return min((moment for moment in (first, other) if moment is not None), default=None)
