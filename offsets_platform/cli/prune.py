"""`offsets-platform prune`: remove the offset commit records no model needs any more.

What is removed and what is kept, and why the models answer the same afterwards, is in
offsets_platform.models.pruning.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from offsets_platform.cli.args import lake_of
from offsets_platform.ingest.offsets_topic import DEFAULT_LEASE_WAIT_S
from offsets_platform.settings import Settings, duration_hours


def add_prune_command(commands) -> None:
    prune = commands.add_parser(
        "prune", help="remove the offset commit records older than the horizon that no model needs any more "
                      "(counted first; every model answers the same)")
    prune.add_argument("--home", help="folder holding the lake")
    prune.add_argument("--horizon", default="7d", type=_horizon,
                       help="raw records stay at least this long, e.g. 7d, 36h (default 7d); never pruned: "
                            "anything after the latest complete snapshot")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, change nothing")
    prune.add_argument("--wait", type=float, default=DEFAULT_LEASE_WAIT_S, metavar="SECONDS",
                       help=f"how long to wait for an ingest or refresh of the lake to end (default "
                            f"{DEFAULT_LEASE_WAIT_S:.0f})")
    prune.set_defaults(run=_prune)


def _horizon(text: str) -> timedelta:
    try:
        return timedelta(hours=duration_hours(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _prune(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models.pruning import prune_offset_commits

    lake = lake_of(args, settings, must_exist=True)
    spark = get_spark(master=settings.spark_master, remote=settings.spark_remote)
    result = prune_offset_commits(spark, lake, horizon=args.horizon, dry_run=args.dry_run, lease_wait_s=args.wait)
    if result.cutoff is None:
        print(f"nothing to prune: {result.nothing_because}")
        return 0
    kept = ", ".join(f"{count:,} {reason}" for reason, count in sorted(result.kept.items())) or "none"
    verb = "would remove" if result.dry_run else "removed"
    print(f"{verb} {result.removed:,} of {result.records_before:,} offset commit records appended before "
          f"{result.cutoff:%Y-%m-%d %H:%M:%S} UTC; kept of those: {kept}")
    if not result.dry_run:
        print(f"counted {result.commits_counted:,} commit records per minute first; VACUUM removed "
              f"{result.files_vacuumed:,} files no version within the table's retention uses; {result.seconds:.1f} s")
    return 0
