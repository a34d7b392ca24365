"""`offsets-platform prune`: remove the offset commit records and the snapshot rows no model needs
any more.

What is removed and what is kept, and why the models answer the same afterwards, is in
offsets_platform.models.pruning, offsets_platform.models.snapshot_pruning,
offsets_platform.models.committed_snapshot_pruning and
offsets_platform.models.group_and_config_snapshot_pruning.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING

from offsets_platform.cli.args import lake_of
from offsets_platform.ingest.offsets_topic import DEFAULT_LEASE_WAIT_S
from offsets_platform.settings import Settings, duration_hours

if TYPE_CHECKING:
    from offsets_platform.models.snapshot_pruning import SnapshotPruneResult


def add_prune_command(commands) -> None:
    prune = commands.add_parser(
        "prune", help="remove the offset commit records and the snapshot rows older than the horizon that no model "
                      "needs any more (records counted first; every model answers the same)")
    prune.add_argument("--home", help="folder holding the lake")
    prune.add_argument("--horizon", default="7d", type=_horizon,
                       help="raw records and snapshot rows stay at least this long, e.g. 7d, 36h (default 7d); "
                            "never pruned: anything after the latest complete snapshot")
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
    from offsets_platform.models.committed_snapshot_pruning import prune_committed_offset_snapshots
    from offsets_platform.models.group_and_config_snapshot_pruning import prune_group_and_config_snapshots
    from offsets_platform.models.pruning import prune_offset_commits
    from offsets_platform.models.snapshot_pruning import prune_log_offset_snapshots

    lake = lake_of(args, settings, must_exist=True)
    spark = get_spark(master=settings.spark_master, remote=settings.spark_remote)
    # the log offset snapshots first: the moves their prune settles need neither the commits of
    # their intervals nor the committed offsets at their snapshots
    snapshots = prune_log_offset_snapshots(spark, lake, horizon=args.horizon, dry_run=args.dry_run,
                                           lease_wait_s=args.wait)
    _print_snapshot_prune("log offset snapshot", snapshots, _settled(snapshots))
    records = prune_offset_commits(spark, lake, horizon=args.horizon, dry_run=args.dry_run, lease_wait_s=args.wait)
    if records.cutoff is None:
        print(f"offset commit records: nothing to prune: {records.nothing_because}")
    else:
        print(f"{_verb(records.dry_run)} {records.removed:,} of {records.records_before:,} offset commit records "
              f"appended before {records.cutoff:%Y-%m-%d %H:%M:%S} UTC; kept of those: {_kept(records.kept)}")
        if not records.dry_run:
            print(f"counted {records.commits_counted:,} commit records per minute first; VACUUM removed "
                  f"{records.files_vacuumed:,} files no version within the table's retention uses; "
                  f"{records.seconds:.1f} s")
    _print_snapshot_prune("committed offset snapshot", prune_committed_offset_snapshots(
        spark, lake, horizon=args.horizon, dry_run=args.dry_run, lease_wait_s=args.wait))
    for table, result in prune_group_and_config_snapshots(spark, lake, horizon=args.horizon, dry_run=args.dry_run,
                                                          lease_wait_s=args.wait).items():
        _print_snapshot_prune(_ROWS_OF[table], result)
    return 0


def _print_snapshot_prune(rows: str, result: SnapshotPruneResult, also: str = "") -> None:
    """What a prune of a snapshot table did (`rows`: what its rows are, singular), `also` after
    the rows it kept."""
    if result.cutoff is None:
        print(f"{rows}s: nothing to prune: {result.nothing_because}")
        return
    print(f"{_verb(result.dry_run)} {result.removed:,} of {result.rows_before:,} {rows} rows of snapshots before "
          f"{result.cutoff:%Y-%m-%d %H:%M:%S} UTC; kept of those: {_kept(result.kept)}{also}")
    if not result.dry_run:
        print(f"VACUUM removed {result.files_vacuumed:,} files; {result.seconds:.1f} s")


# what a row of each table the prune of the group and config snapshots prunes is
_ROWS_OF = {"group_snapshots": "group snapshot", "group_member_snapshots": "member snapshot",
            "topic_configs": "topic config snapshot", "snapshot_errors": "snapshot error"}


def _settled(result: SnapshotPruneResult) -> str:
    """What the prune of the log offset snapshots settled, to follow the rows it kept."""
    if result.settled_through is None:
        return "; no move of a log start newly settled"
    return (f"; {'would settle' if result.dry_run else 'settled'} the moves of log starts seen through "
            f"{result.settled_through:%Y-%m-%d %H:%M:%S} UTC ({result.losses_settled:,} losses of unconsumed_messages)")


def _verb(dry_run: bool) -> str:
    return "would remove" if dry_run else "removed"


def _kept(kept: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {reason}" for reason, count in sorted(kept.items())) or "none"
