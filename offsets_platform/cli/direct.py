"""`offsets-platform delete-offsets` and `delete-groups`: the direct commands, audited.

They mirror kafka-consumer-groups.sh --delete-offsets and --delete (see `direct` for where they
differ); each run appends one `cleanup_audit` row per partition or group, refusals included.
"""

from __future__ import annotations

import argparse

from offsets_platform.cli.args import cluster_and_lake, requester
from offsets_platform.settings import Settings

# The cleanup and Kafka modules are imported where a command runs, so that every other command
# starts without Kafka's client.

DEFAULT_TIMEOUT_MS = 15_000


def add_direct_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register `delete-offsets` and `delete-groups`; each sets `run(args, settings) -> exit status`."""
    offsets = subparsers.add_parser(
        "delete-offsets", help="delete a group's committed offsets of some topics (OffsetDelete, audited)",
        description="Delete committed offsets of one consumer group, like kafka-consumer-groups.sh "
                    "--delete-offsets. Refuses topics the group's live members subscribe to unless --force.")
    add_cluster_options(offsets)
    offsets.add_argument("--group", required=True, help="the consumer group")
    offsets.add_argument("--topic", required=True, action="append", type=topic_argument, metavar="TOPIC[:P,P]",
                         help="topic, or topic:0,1 for some partitions (repeatable); a topic alone means "
                              "every partition of the topic")
    offsets.add_argument("--force", action="store_true",
                         help="send even for topics live members subscribe to (the broker then answers "
                              "GROUP_SUBSCRIBED_TO_TOPIC for each partition it knows is subscribed)")
    offsets.set_defaults(run=_delete_offsets)

    groups = subparsers.add_parser(
        "delete-groups", help="delete consumer groups (DeleteGroups, audited)",
        description="Delete consumer groups with their offsets, like kafka-consumer-groups.sh --delete. "
                    "The broker refuses a group that has members (NON_EMPTY_GROUP).")
    add_cluster_options(groups)
    groups.add_argument("--group", required=True, action="append", help="a consumer group (repeatable)")
    groups.set_defaults(run=_delete_groups)


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-server, --home (the lake the audit or plan goes to), --by and --timeout."""
    parser.add_argument("--bootstrap-server",
                        help="host:port of the cluster (default: $OFFSETS_PLATFORM_BOOTSTRAP_SERVERS)")
    parser.add_argument("--home", help="folder holding the lake the audit (or plan) goes to (default: $OFFSETS_PLATFORM_HOME)")
    parser.add_argument("--by", help="no longer an identity: the audit records $OFFSETS_PLATFORM_USER, else the OS "
                                     "user; --by is accepted only when it names that same person")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                        help=f"how long to wait for the cluster, per request (default {DEFAULT_TIMEOUT_MS})")


def topic_argument(value: str):
    from offsets_platform.cleanup.direct import parse_topic_argument

    try:
        return parse_topic_argument(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _delete_offsets(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.cleanup.direct import audit_offsets, offset_intents, run_delete_offsets

    return _run_audited(
        args, settings,
        lambda admin, before_send: run_delete_offsets(admin, args.group, args.topic, force=args.force,
                                                      before_send=before_send),
        lambda context, partitions: offset_intents(context, args.group, partitions), audit_offsets)


def _delete_groups(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.cleanup.direct import audit_groups, group_intents, run_delete_groups

    return _run_audited(args, settings, lambda admin, before_send: run_delete_groups(admin, args.group, before_send),
                        group_intents, audit_groups)


def _run_audited(args: argparse.Namespace, settings: Settings, call, intent_rows, audit_rows) -> int:
    """Send one direct command with its intent audited first and every outcome after, print
    Kafka's report; 1 when anything failed."""
    from offsets_platform.cleanup.direct import AuditContext, record_audit
    from offsets_platform.kafka.admin_calls import open_admin

    target = cluster_and_lake(args, settings)
    if target is None:
        return 2
    connection, lake = target
    context = AuditContext(connection.bootstrap_servers, requester(args))
    intents = None

    def record_intents(requested) -> None:
        nonlocal intents
        intents = intent_rows(context, requested)
        record_audit(lake, intents)

    with open_admin(connection, args.timeout / 1000, args.timeout / 1000) as admin:
        result = call(admin, record_intents)
    record_audit(lake, audit_rows(context, result, intents))
    _print(result.report())
    return 0 if result.ok else 1


def _print(lines: list[str]) -> None:
    # Kafka's tool prints errors to stdout too. Unlike it (it exits 0 either way), a failure or a
    # refusal shows in the exit status, so scripts can tell.
    print("\n".join(lines), flush=True)
