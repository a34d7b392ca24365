"""`offsets-platform plan-reset`: an offset reset planned as Kafka's `--reset-offsets --dry-run` shows it.

The plan is stored like a cleanup plan and goes through the same flow: `show`, `approve` by another
person, `apply`. The specifiers, the --topic syntax and the CSV of --from-file and --export are those
of Kafka's `--reset-offsets` (`kafka-consumer-groups`, `kafka-streams-groups`, `kafka-share-groups`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from offsets_platform.cleanup.plans import DEFAULT_VALID_HOURS, RESET_ACTIONS
from offsets_platform.cleanup.reset_plans import RESET_COLUMNS, reset_cost, reset_rows
from offsets_platform.cleanup.reset_targets import ResetSpecError
from offsets_platform.cli.args import cluster_and_lake, requester
from offsets_platform.cli.direct import add_cluster_options, topic_argument
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, Settings


def add_reset_command(commands) -> None:
    reset = commands.add_parser(
        "plan-reset", help="plan an offset reset of a group (resolved now, applied after approval)",
        description="Plan a reset of a group's committed offsets (a share group's start offsets), with the "
                    "specifiers of Kafka's --reset-offsets as the tool of the group's kind takes them. The new "
                    "offsets are resolved against the cluster now and stored as a plan; another person approves "
                    "it, then `apply` commits exactly those offsets (skipping any partition where the group moved "
                    "since). Sends nothing to the group.")
    reset.add_argument("--group", required=True, help="the group, of any kind, inactive (Empty, or unknown to the "
                                                      "coordinator); a streams group's --topic and --all-topics are "
                                                      "Kafka's --input-topic and --all-input-topics")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", default=[], type=topic_argument, metavar="TOPIC[:P,P]",
                       help="topic, or topic:0,1 for some partitions (repeatable)")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has an offset for")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the log start")
    to.add_argument("--to-latest", action="store_true", help="the log end")
    to.add_argument("--to-current", action="store_true", help="the committed offset (the log end where none)")
    to.add_argument("--to-offset", type=int, metavar="N", help="N, clamped to the log's range")
    to.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative), clamped")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="the first offset at or after this time (UTC unless a zone is given, e.g. +01:00)")
    to.add_argument("--by-duration", metavar="PnDTnHnM",
                    help="the first offset at or after now minus this ISO-8601 duration")
    to.add_argument("--from-file", metavar="CSV", help="the offsets of a CSV as --export writes it, clamped")
    reset.add_argument("--allow-new-group", action="store_true",
                       help="give a group the cluster does not know its first offsets (without it, an unknown group "
                            "is refused: a misspelt name would make a new group)")
    reset.add_argument("--valid-hours", type=int, default=DEFAULT_VALID_HOURS, help="the plan expires after this")
    add_cluster_options(reset)
    reset.set_defaults(run=_plan_reset)


def reset_request(args: argparse.Namespace):
    """The ResetRequest the arguments name.

    Raises:
        ResetSpecError: a value, time, duration or file Kafka's tool would refuse, or no scope.
    """
    from offsets_platform.cleanup.reset_plans import reset_request as request_of
    from offsets_platform.cleanup.reset_targets import SPECIFIERS

    given = {kind: getattr(args, kind.replace("-", "_")) for kind in SPECIFIERS}
    # a flag given is True, a value given is not None (--to-offset 0 included)
    kind = next(kind for kind, value in given.items() if value is not None and value is not False)
    value = given[kind]
    file_text = None
    if args.from_file:
        try:
            file_text = Path(args.from_file).read_text()
        except OSError as error:
            raise ResetSpecError(f"cannot read the reset file {args.from_file}: {error.strerror}") from None
    return request_of(args.group, kind, None if value is True else str(value), args.topic, args.all_topics, file_text,
                      args.allow_new_group)


def _plan_reset(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.cleanup.plans import save_plan
    from offsets_platform.cleanup.reset_plans import build_reset_plan
    from offsets_platform.kafka.admin_calls import open_admin

    target = cluster_and_lake(args, settings)
    if target is None:
        return 2
    connection, lake = target
    try:
        request = reset_request(args)
        with open_admin(connection, args.timeout / 1000, args.timeout / 1000) as admin:
            plan = build_reset_plan(admin, request, requester(args), valid_hours=args.valid_hours)
    except ResetSpecError as error:  # bad input, as argparse answers it: exit code 2, nothing stored
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not plan.actions:
        print(f"nothing to reset: {args.group} has no committed offset on the partitions named")
        return 0
    save_plan(lake, plan)
    print(f"plan {plan.plan_id}: reset {plan.actions[0].facts['specifier']} of {args.group}, "
          f"{len(plan.actions)} partitions, expires {plan.expires_at:%Y-%m-%d %H:%M} UTC")
    for line in reset_table_lines(plan.actions):
        print(line)
    print(f"\n{reset_cost(plan.actions)}")
    print(f"approve it with: offsets-platform approve {plan.plan_id}  (run by someone other than "
          f"{plan.created_by}: four-eyes, unless {ALLOW_SELF_APPROVAL_ENV}=true)")
    return 0


def reset_table_lines(actions) -> list[str]:
    """Kafka's --dry-run table (a blank line, then GROUP TOPIC PARTITION NEW-OFFSET padded as the
    tool of the group's kind pads them), each row followed by the facts the new offset rests on."""
    resets = [a for a in actions if a.action in RESET_ACTIONS]
    if any(a.facts.get("group_type") == "streams" for a in resets):
        widths = [30, 30, 10, 15]  # StreamsGroupCommand.printOffsetsToReset
    else:  # OffsetsUtils.printOffsetsToReset: at least 15, as wide as the longest name
        widths = [max([15] + [len(a.group) for a in resets]), max([15] + [len(a.topic) for a in resets]), 10, 10]
    rows = [RESET_COLUMNS, *reset_rows(resets)]
    widths += [max(len(row[i]) for row in rows) for i in range(4, len(rows[0]))]
    return [""] + [" ".join(f"{cell:<{width}}" for cell, width in zip(row[:4], widths)) + "  "
                   + "  ".join(f"{cell:<{width}}" for cell, width in zip(row[4:], widths[4:])).rstrip()
                   for row in rows]
