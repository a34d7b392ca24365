"""The `prune` job: the offset commit records and the snapshot rows no model needs any more leave
the lake.

`offsets-platform prune` as a Dagster job (offsets_platform.models.pruning, snapshot_pruning,
committed_snapshot_pruning and group_and_config_snapshot_pruning say what is removed, what is kept
and why every model answers the same afterwards); `prune_schedule` runs it daily
(assets/automation.py).
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from datetime import timedelta

from dagster import Config, Failure, OpExecutionContext, Output, in_process_executor, job, op
from pydantic import Field

from offsets_platform_dagster.resources import LakeResource, SparkResource
from offsets_platform.models.committed_snapshot_pruning import prune_committed_offset_snapshots
from offsets_platform.models.group_and_config_snapshot_pruning import prune_group_and_config_snapshots
from offsets_platform.models.pruning import prune_offset_commits
from offsets_platform.models.snapshot_pruning import prune_log_offset_snapshots
from offsets_platform.settings import duration_hours

PRUNE_JOB = "prune"


class PruneConfig(Config):
    horizon: str = Field(default="7d", description="raw records and snapshot rows stay at least this long (7d, "
                                                   "36h, ...); nothing after the latest complete snapshot is pruned")
    dry_run: bool = Field(default=False, description="only count what would be removed")


def _horizon(config: PruneConfig) -> timedelta:
    try:
        return timedelta(hours=duration_hours(config.horizon))
    except ValueError as error:
        raise Failure(description=f"horizon: {error}", allow_retries=False) from error


@op(description="Remove the offset commit records (counted first) and the snapshot rows older than the horizon "
                "that no model needs.")
def prune_lake(context: OpExecutionContext, config: PruneConfig, spark: SparkResource, lake: LakeResource) -> Output:
    horizon = _horizon(config)
    # one after the other: each holds the leases of ingest and every model while it decides and
    # deletes; the log offset snapshots first, whose prune settles the moves the others then need not keep
    snapshots = prune_log_offset_snapshots(spark.session(), lake.lake(), horizon=horizon, dry_run=config.dry_run,
                                           emit=context.log.info)
    if snapshots.cutoff is None:
        context.log.info(f"log offset snapshots: nothing to prune: {snapshots.nothing_because}")
    records = prune_offset_commits(spark.session(), lake.lake(), horizon=horizon, dry_run=config.dry_run,
                                   emit=context.log.info)
    if records.cutoff is None:
        context.log.info(f"offset commit records: nothing to prune: {records.nothing_because}")
    committed = prune_committed_offset_snapshots(spark.session(), lake.lake(), horizon=horizon,
                                                 dry_run=config.dry_run, emit=context.log.info)
    if committed.cutoff is None:
        context.log.info(f"committed offset snapshots: nothing to prune: {committed.nothing_because}")
    others = prune_group_and_config_snapshots(spark.session(), lake.lake(), horizon=horizon, dry_run=config.dry_run,
                                              emit=context.log.info)
    for table, result in others.items():
        if result.cutoff is None:
            context.log.info(f"{table}: nothing to prune: {result.nothing_because}")
    return Output(None, metadata={
        "dry_run": config.dry_run,
        "records_before": records.records_before,
        "records_removed": records.removed,
        "cutoff": records.cutoff.isoformat() if records.cutoff else "",
        **{f"records kept: {reason}": count for reason, count in sorted(records.kept.items())},
        "commits_counted": records.commits_counted,
        "snapshot_rows_before": snapshots.rows_before,
        "snapshot_rows_removed": snapshots.removed,
        "snapshot_cutoff": snapshots.cutoff.isoformat() if snapshots.cutoff else "",
        "losses_settled": snapshots.losses_settled,
        "moves_settled_through": snapshots.settled_through.isoformat() if snapshots.settled_through else "",
        **{f"snapshot rows kept: {reason}": count for reason, count in sorted(snapshots.kept.items())},
        "committed_rows_before": committed.rows_before,
        "committed_rows_removed": committed.removed,
        **{f"committed rows kept: {reason}": count for reason, count in sorted(committed.kept.items())},
        **{f"{table}: rows {what}": count for table, result in others.items()
           for what, count in (("before", result.rows_before), ("removed", result.removed))},
        "files_vacuumed": sum(result.files_vacuumed for result in (records, snapshots, committed, *others.values())),
        "seconds": round(sum(result.seconds for result in (records, snapshots, committed, *others.values())), 1),
    })


@job(name=PRUNE_JOB, executor_def=in_process_executor,
     description="Remove the offset commit records and the snapshot rows no model needs any more: the lake "
                 "stays bounded, and every model answers as before.")
def prune_job():
    prune_lake()
