"""The `prune` job: the offset commit records no model needs any more leave the lake.

`offsets-platform prune` as a Dagster job (offsets_platform.models.pruning says what is removed,
what is kept and why every model answers the same afterwards); `prune_schedule` runs it daily
(assets/automation.py).
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from datetime import timedelta

from dagster import Config, Failure, OpExecutionContext, Output, in_process_executor, job, op
from pydantic import Field

from assets.resources import LakeResource, SparkResource
from offsets_platform.models.pruning import prune_offset_commits
from offsets_platform.settings import duration_hours

PRUNE_JOB = "prune"


class PruneConfig(Config):
    horizon: str = Field(default="7d", description="raw records stay at least this long (7d, 36h, ...); "
                                                   "nothing after the latest complete snapshot is pruned")
    dry_run: bool = Field(default=False, description="only count what would be removed")


@op(description="Remove the offset commit records older than the horizon that no model needs (counted first).")
def prune_offset_commit_records(context: OpExecutionContext, config: PruneConfig, spark: SparkResource,
                                lake: LakeResource) -> Output:
    try:
        horizon = timedelta(hours=duration_hours(config.horizon))
    except ValueError as error:
        raise Failure(description=f"horizon: {error}", allow_retries=False) from error
    result = prune_offset_commits(spark.session(), lake.lake(), horizon=horizon, dry_run=config.dry_run,
                                  emit=context.log.info)
    if result.cutoff is None:
        context.log.info(f"nothing to prune: {result.nothing_because}")
    return Output(None, metadata={
        "records_before": result.records_before,
        "records_removed": result.removed,
        "dry_run": result.dry_run,
        "cutoff": result.cutoff.isoformat() if result.cutoff else "",
        **{f"kept: {reason}": count for reason, count in sorted(result.kept.items())},
        "commits_counted": result.commits_counted,
        "files_vacuumed": result.files_vacuumed,
        "seconds": round(result.seconds, 1),
    })


@job(name=PRUNE_JOB, executor_def=in_process_executor,
     description="Remove the offset commit records no model needs any more: the lake stays bounded under a "
                 "constant commit rate, and every model answers as before.")
def prune_job():
    prune_offset_commit_records()
