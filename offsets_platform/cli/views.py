"""Quick views without Spark: `groups`, `describe GROUP`, `expiring`, `lost`.

They read the models' tables (see `offsets_platform.views`), so they answer in about a second
and agree with the summary, the report and the UI; `describe --live` asks the broker instead.
Where the lake answers, a last line on stderr says which lake and how fresh it is.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta, timezone

from offsets_platform.views.attention import DEFAULT_WITHIN_HOURS
from offsets_platform.cli.args import add_home_option, cluster_and_lake, lake_of
from offsets_platform.cli.output import as_json, cell, table_lines
from offsets_platform.settings import Settings, duration_hours


def hours(text: str) -> float:
    """"24h", "90m", "7d", "30s" or a number of hours, in hours."""
    try:
        return duration_hours(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def since(text: str) -> datetime:
    """A duration before now ("7d"), or a time ("2026-11-01", "2026-11-01T12:00", UTC unless it says)."""
    try:
        return datetime.now(timezone.utc) - timedelta(hours=hours(text))
    except argparse.ArgumentTypeError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration (7d) or a time (2026-11-01T12:00), got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def group_states(text: str) -> frozenset[str]:
    """"Stable,empty": the states named, each one a group can be in (any case)."""
    from offsets_platform.views.from_lake import GROUP_STATES

    named = {state.strip() for state in text.split(",") if state.strip()}
    known = {state.lower() for state in GROUP_STATES}
    unknown = sorted(state for state in named if state.lower() not in known)
    if unknown or not named:
        raise argparse.ArgumentTypeError(f"no group state {', '.join(map(repr, unknown)) or repr(text)}; "
                                         f"the states are {', '.join(GROUP_STATES)}")
    return frozenset(named)


def add_view_commands(commands) -> None:
    groups = commands.add_parser("groups", help="list the groups the lake knows, with state, kind and lag "
                                 "(like kafka-consumer-groups --list --state)")
    groups.add_argument("--state", action="append", default=[], metavar="STATE", type=group_states,
                        help="only groups in this state, e.g. Empty or Stable (repeatable, or comma-separated; "
                        "any case)")
    _common(groups)
    groups.set_defaults(run=_groups)

    describe = commands.add_parser("describe", help="one group: offsets, lag, expiry and members "
                                   "(like kafka-consumer-groups --describe)")
    describe.add_argument("group")
    describe.add_argument("--live", action="store_true",
                          help="ask the broker now instead of reading the lake (no expiry: that is the models')")
    describe.add_argument("--bootstrap-server", help="host:port of the cluster, with --live")
    _common(describe)
    describe.set_defaults(run=_describe)

    expiring = commands.add_parser("expiring", help="committed offsets Kafka will expire soon, per group and topic")
    expiring.add_argument("--within", type=hours, default=float(DEFAULT_WITHIN_HOURS), metavar="DURATION",
                          help=f"how soon, e.g. 24h, 90m, 7d (default {DEFAULT_WITHIN_HOURS}h); already due ones count")
    _common(expiring)
    expiring.set_defaults(run=_expiring)

    lost = commands.add_parser("lost", help="messages retention deleted before a group read them, per group and topic")
    lost.add_argument("--since", type=since, metavar="WHEN",
                      help="only losses observed since then: a duration before now (7d) or a time (2026-11-01)")
    _common(lost)
    lost.set_defaults(run=_lost)


def _common(parser: argparse.ArgumentParser) -> None:
    add_home_option(parser)
    parser.add_argument("--output", choices=("table", "json"), default="table",
                        help="table for people (default), json for scripts")


def _groups(args, settings: Settings) -> int:
    from offsets_platform.views.from_lake import freshness, list_groups

    lake = lake_of(args, settings, must_exist=True)
    rows = list_groups(lake, frozenset().union(*args.state))
    _print_rows(args, rows, [("GROUP", "group_id"), ("STATE", "state"), ("STATUS", "status"), ("KIND", "kind"),
                             ("MEMBERS", "members"),
                             ("TOPICS", "topics"), ("PARTITIONS", "partitions"), ("LAG", "lag")])
    _from(args, freshness(lake))
    return 0


def _describe(args, settings: Settings) -> int:
    if args.live:
        from offsets_platform.views.from_broker import describe_group

        target = cluster_and_lake(args, settings)
        if target is None:
            return 2
        view = describe_group(target[0], args.group)
    else:
        from offsets_platform.views.from_lake import describe_group

        view = describe_group(lake_of(args, settings, must_exist=True), args.group)
    if view is None:
        where = "" if args.live else f" in {freshness_of(args, settings)} (--live asks the broker)"
        print(f"Error: Group {args.group} not found{where}.", file=sys.stderr)  # Kafka 4's tool: "Group g not found."
        return 1
    if args.output == "json":
        print(as_json(view.__dict__))
        return 0
    print(f"GROUP {view.group_id}: {view.state}, {view.kind or 'unknown kind'}"
          + (f", protocol {view.protocol}" if view.protocol else "") + f", {len(view.members)} members"
          + (f", status {view.status}" if view.status else ""))
    if args.live:
        for line in kafka_describe_lines(view):
            print(line)
    else:
        print()
        print("\n".join(table_lines(
            [("TOPIC", "topic"), ("PARTITION", "partition_id"), ("CURRENT-OFFSET", "current_offset"),
             ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"), ("STATUS", "status"),
             ("EXPIRES-AT", "expires_at"), ("EXPIRY", "expiry")], view.offsets)) if view.offsets
              else "no committed offsets")
        if view.removed:
            print()
            print("\n".join(table_lines([("REMOVED", "topic"), ("PARTITION", "partition_id"),
                                         ("REMOVED-AT", "removed_at"), ("BY", "removed_by")], view.removed)))
        if view.last_reset:
            from offsets_platform.views.from_lake import reset_text

            print(f"\nlast offset reset: {reset_text(view.last_reset)}")
    print()
    print("\n".join(table_lines(
        [("CONSUMER-ID", "consumer_id"), ("GROUP-INSTANCE-ID", "group_instance_id"), ("HOST", "host"),
         ("CLIENT-ID", "client_id"), ("#PARTITIONS", "partitions"), ("SUBSCRIPTION", "subscription")],
        view.members)) if view.members else "no members")
    _from(args, view.source)
    return 0


def freshness_of(args, settings: Settings) -> str:
    from offsets_platform.views.from_lake import freshness

    return freshness(lake_of(args, settings, must_exist=True))


def kafka_describe_lines(view) -> list[str]:
    """The offsets of `view` exactly as Kafka 4.x's `kafka-consumer-groups --describe` prints
    them (ConsumerGroupCommand.printOffsets): a blank line, the header, one line per row; the
    group, topic, consumer id and host columns at least 15 wide, or as wide as their longest."""
    rows = view.offsets
    width = {key: max([15] + [len(cell(row[key])) for row in rows]) for key in ("topic", "consumer_id", "host")}
    width["group_id"] = max(15, len(view.group_id))
    line = (f"%-{width['group_id']}s %-{width['topic']}s %-10s %-15s %-15s %-15s "
            f"%-{width['consumer_id']}s %-{width['host']}s %s")
    lines = ["", line % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                         "CONSUMER-ID", "HOST", "CLIENT-ID")]
    lines += [line % (view.group_id, *(cell(row[key]) for key in (
        "topic", "partition_id", "current_offset", "log_end_offset", "lag", "consumer_id", "host", "client_id")))
        for row in rows]
    return lines


def _expiring(args, settings: Settings) -> int:
    from offsets_platform.views.from_lake import expiring, freshness

    lake = lake_of(args, settings, must_exist=True)
    rows = expiring(lake, args.within)
    _print_rows(args, rows, [("GROUP", "group_id"), ("TOPIC", "topic"), ("STATE", "group_state"), ("RULE", "rule"),
                             ("PARTITIONS", "partitions"), ("DUE-NOW", "due_now"),
                             ("FIRST-EXPIRES-AT", "first_expires_at"), ("HOURS-LEFT", "hours_until_first")],
                empty=f"no committed offset expires within {args.within:g} h")
    _from(args, freshness(lake))
    return 0


def _lost(args, settings: Settings) -> int:
    from offsets_platform.views.from_lake import freshness, lost

    lake = lake_of(args, settings, must_exist=True)
    rows = lost(lake, args.since)
    when = f" since {args.since:%Y-%m-%d %H:%M} UTC" if args.since else ""
    _print_rows(args, rows, [("GROUP", "group_id"), ("TOPIC", "topic"), ("PARTITIONS", "partitions_lost"),
                             ("LOST-AT-MOST", "messages_lost"), ("LOST-AT-LEAST", "messages_lost_at_least"),
                             ("LAST-LOSS-SEEN", "last_loss_at")],
                empty=f"no messages deleted by retention before their group read them{when}")
    _from(args, freshness(lake))
    return 0


def _print_rows(args, rows: list[dict], columns: list[tuple[str, str]], empty: str = "no groups") -> None:
    if args.output == "json":
        print(as_json(rows))
    elif rows:
        print("\n".join(table_lines(columns, rows)))
    else:
        print(empty)


def _from(args, source: str) -> None:
    if args.output == "table":
        print(f"(from {source})", file=sys.stderr)
