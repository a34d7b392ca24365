"""Groups as the models' tables have them (see `offsets_platform.views`)."""

from __future__ import annotations

import json
from datetime import datetime

from offsets_platform.views import attention
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.views import GroupView, subscription


def last_refresh(lake: Lake) -> datetime | None:
    """When a model last wrote its table (None: the models have not run on this lake)."""
    return lake.query("select max(finished_at) as at from model_runs", "model_runs").column("at")[0].as_py()


def freshness(lake: Lake) -> str:
    """"the lake <root>, models last run <time>": where a lake answer comes from."""
    at = last_refresh(lake)
    when = f"models last run {at:%Y-%m-%d %H:%M:%S} UTC" if at else "the models have not run yet"
    return f"the lake in {lake.root}, {when}"


# The states group_state.state holds (its accepted values): the names Kafka's ListGroups and
# describe APIs give (GroupState in Kafka's group coordinator), in Kafka's own spelling.
GROUP_STATES = ("Stable", "Empty", "Dead", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling",
                "NotReady", "Unknown")


def list_groups(lake: Lake, states: frozenset[str] = frozenset()) -> list[dict]:
    """Every group the models know, by name: state, status (Burrow's verdict, consumer_status;
    None when not evaluated), kind, members, the topics and partitions of its
    committed offsets, and its lag (`attention.lag_by_group`: abandoned offsets left out; None
    when no log offsets are known). `states`: only groups in these states (case-insensitive)."""
    wanted = ""
    if states:
        wanted = "where lower(g.state) in (" + ", ".join(lake_string(s.lower()) for s in sorted(states)) + ")"
    groups = lake.query(f"""
        with offsets as (
            select group_id, count(distinct topic) as topics, count(*) as partitions
            from committed_offsets group by group_id
        ),
        statuses as (
            -- one value per group, repeated on each of its partitions' rows
            select group_id, max(group_status) as status from consumer_status group by group_id
        )
        select g.group_id, g.state, s.status, {attention.KIND} as kind, g.count_members as members,
               coalesce(o.topics, 0) as topics, coalesce(o.partitions, 0) as partitions
        from group_state g
        left join offsets o on o.group_id = g.group_id
        left join statuses s on s.group_id = g.group_id
        {wanted}
        order by g.group_id
        """, "group_state", "committed_offsets", "consumer_status").to_pylist()
    lag = {row["group_id"]: row for row in attention.lag_by_group(lake, lagging_only=False)}
    return [{**group, "lag": lag.get(group["group_id"], {}).get("lag_messages"),
             "lag_ms": lag.get(group["group_id"], {}).get("lag_ms")} for group in groups]


def describe_group(lake: Lake, group: str) -> GroupView | None:
    """The group's state, offsets (with lag and expiry) and members; None when the models do not
    know the group."""
    name = lake_string(group)
    states = lake.query(f"""select g.state, {attention.KIND} as classification, g.protocol_type, g.protocol,
                                   (select max(s.group_status) from consumer_status s
                                    where s.group_id = g.group_id) as status
                            from group_state g where g.group_id = {name}""",
                        "group_state", "consumer_status").to_pylist()
    if not states:
        return None
    (state,) = states
    offsets = lake.query(f"""
        select c.topic, c.partition_id, c.committed_offset as current_offset, l.log_end_offset,
               l.lag_messages as lag, e.expires_at, e.hours_until_expiry,
               e.is_expired as expired_now, e.rule,
               e.not_eligible_reason, s.status
        from committed_offsets c
        left join consumer_lag l on l.group_id = c.group_id and l.topic = c.topic and l.partition_id = c.partition_id
        left join expirable_offsets e
          on e.group_id = c.group_id and e.topic = c.topic and e.partition_id = c.partition_id
        left join consumer_status s
          on s.group_id = c.group_id and s.topic = c.topic and s.partition_id = c.partition_id
        where c.group_id = {name}
        order by c.topic, c.partition_id
        """, "committed_offsets", "consumer_lag", "expirable_offsets", "consumer_status").to_pylist()
    members = lake.query(f"""
        select member_id as consumer_id, group_instance_id, client_host as host, client_id,
               subscribed_topics, subscribed_topic_regex
        from group_members where group_id = {name} order by member_id
        """, "group_members").to_pylist()
    return GroupView(
        group_id=group, state=state["state"], kind=state["classification"], status=state["status"],
        protocol=state["protocol"] or state["protocol_type"] or "", source=freshness(lake),
        offsets=[{**row, "consumer_id": None, "host": None, "client_id": None, "expiry": expiry(row)}
                 for row in offsets],
        members=[{"consumer_id": m["consumer_id"], "group_instance_id": m["group_instance_id"], "host": m["host"],
                  "client_id": m["client_id"], "partitions": None,
                  "subscription": subscription(m["subscribed_topics"], m["subscribed_topic_regex"])}
                 for m in members],
        removed=removed_offsets(lake, group), last_reset=next(iter(last_resets(lake, group)), None))


# A tombstone is the project's deletion when the audit has one of the same group (and, for an
# OffsetDelete, the same topic and partition) within this many seconds of it: the broker's clock
# and this one may differ. coordinator_metrics matches them by the same rule for KIP-496's meters.
PROJECT_DELETION_WITHIN_S = 600

# how a direct command's deletion reads, by the audit's action
_COMMANDS = {"OffsetDelete": "delete-offsets", "DeleteGroups": "delete-groups"}


def removed_offsets(lake: Lake, group: str) -> list[dict]:
    """The group's offsets whose latest record in the log is a tombstone (`log_offset_state`):
    topic, partition_id, removed_at and removed_by, which names the plan or command of this tool
    that deleted it (`cleanup_audit`), else says it was not this tool."""
    apart_s = """abs(date_part('epoch', a."at") - date_part('epoch', s.appended_at))"""
    rows = lake.query(f"""
        select s.topic, s.partition_id, s.appended_at as removed_at, a.plan_id, a.action, a.requested_by
        from log_offset_state s
        left join cleanup_audit a
          on a."group" = s.group_id and a.outcome = 'deleted'
             and (a.action = 'DeleteGroups' or (a.topic = s.topic and a."partition" = s.partition_id))
             and {apart_s} <= {PROJECT_DELETION_WITHIN_S}
        where s.group_id = {lake_string(group)} and s.is_removed
        order by s.topic, s.partition_id, {apart_s}
        """, "log_offset_state", "cleanup_audit").to_pylist()
    nearest: dict[tuple, dict] = {}  # per partition, the audited deletion nearest the tombstone: its first row
    for row in rows:
        nearest.setdefault((row["topic"], row["partition_id"]), row)
    return [{"topic": row["topic"], "partition_id": row["partition_id"], "removed_at": row["removed_at"],
             "removed_by": removed_by(row)} for row in nearest.values()]


def removed_by(deletion: dict) -> str:
    """Who removed an offset, from the audited deletion matched to its tombstone (action None: none)."""
    if deletion["action"] is None:
        return "not this tool: Kafka's expiration, a deleted topic, or another client"
    if deletion["plan_id"] is not None:
        return f"plan {deletion['plan_id']} ({deletion['action']}, applied by {deletion['requested_by']})"
    return f"{_COMMANDS[deletion['action']]} by {deletion['requested_by']}"


def expiry(row: dict) -> str:
    """When and why Kafka expires one committed offset, in words, from `expirable_offsets`."""
    if row["rule"] is None:
        return "not evaluated yet"
    if row["rule"] == "not_eligible":
        return f"never while {row['not_eligible_reason']}" if row["not_eligible_reason"] else "not eligible"
    if row["expired_now"]:  # the CLI's JSON key (group --output json), kept as it was
        return f"due now ({row['rule']})"
    if row["hours_until_expiry"] is None:
        return f"never ({row['rule']})"
    return f"in {row['hours_until_expiry']:.1f} h ({row['rule']})"


def expiring(lake: Lake, within_hours: float) -> list[dict]:
    """Committed offsets Kafka expires within `within_hours`, per group, topic and rule."""
    return attention.expiring_by_topic(lake, within_hours)


def lost(lake: Lake, since: datetime | None = None) -> list[dict]:
    """Per group and topic, the messages retention deleted before the group read them, observed
    since `since` (default: ever), the most first."""
    return [row for row in attention.retention_losses(lake, since=since) if row["messages_lost"] > 0]


# the actions of an offset reset (cleanup.plans.RESET_ACTIONS; the read side does not import cleanup)
_RESET_ACTIONS = ("AlterConsumerGroupOffsets", "AlterShareGroupOffsets")


def last_resets(lake: Lake, group: str | None = None) -> list[dict]:
    """Each group's last offset reset this tool applied (of `group` only, when given), newest first:
    group_id, reset_at (when the broker took its last partition), reset_by (who applied it), plan_id,
    specifier (as the plan resolved it, e.g. "--to-datetime 2026-12-01T00:00:00.000"), partitions
    (how many the broker took) and messages_read_again and messages_skipped (the plan's counts for
    those partitions). From `cleanup_audit` (the 'committed' outcomes) and the plans' facts."""
    only = f' and "group" = {lake_string(group)}' if group is not None else ""
    done = lake.query(f"""select plan_id, "group", action_id, "at", requested_by from cleanup_audit
                          where outcome = 'committed' and action in ({", ".join(map(lake_string, _RESET_ACTIONS))})
                          {only} order by "at" """, "cleanup_audit").to_pylist()
    latest: dict[str, dict] = {}  # group -> its last applied plan's rows
    for row in done:
        last = latest.get(row["group"])
        if last is None or last["plan_id"] != row["plan_id"]:
            latest[row["group"]] = last = {"plan_id": row["plan_id"], "rows": []}
        last["rows"].append(row)
    if not latest:
        return []
    plans = ", ".join(lake_string(last["plan_id"]) for last in latest.values())
    facts = {row["action_id"]: json.loads(row["facts"]) for row in lake.query(
        f"select action_id, facts from cleanup_plans where plan_id in ({plans})", "cleanup_plans").to_pylist()}
    resets = []
    for group_id, last in latest.items():
        taken = [facts.get(row["action_id"], {}) for row in last["rows"]]
        resets.append({"group_id": group_id, "reset_at": last["rows"][-1]["at"],
                       "reset_by": last["rows"][-1]["requested_by"], "plan_id": last["plan_id"],
                       "specifier": next((f["specifier"] for f in taken if f.get("specifier")), None),
                       "partitions": len({row["action_id"] for row in last["rows"]}),
                       "messages_read_again": sum(f.get("messages_read_again") or 0 for f in taken),
                       "messages_skipped": sum(f.get("messages_skipped") or 0 for f in taken)})
    return sorted(resets, key=lambda reset: reset["reset_at"], reverse=True)


def reset_text(reset: dict) -> str:
    """One reset in words, as describe, the summary and the report say it."""
    return (f"{reset['specifier']} on {reset['partitions']:,} partitions at {reset['reset_at']:%Y-%m-%d %H:%M} UTC "
            f"by {reset['reset_by']} (plan {reset['plan_id']}; {reset['messages_read_again']:,} messages read again, "
            f"{reset['messages_skipped']:,} skipped)")
