"""Cleanup in Dagster: the plan asset, and the approval and apply jobs a person launches.

Approve and apply are jobs, not assets: a person starts them from the launchpad with a plan id
(approve also with their name), and each leaves its trace in the cleanup tables.

The plan asset and both ops are in the concurrency pool "cleanup". With the instance's pool limit
(`concurrency: pools: default_limit: 1`, see assets/dagster.yaml, which `make ui` installs) Dagster
runs one of them at a time across all runs and shows the others as waiting for the pool. The
lake's own leases (offsets_platform.lake.lease) still guard runs outside Dagster and instances
without that limit.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from typing import List, Optional

from dagster import (AssetExecutionContext, Config, MaterializeResult, MetadataValue, OpExecutionContext, asset,
                     in_process_executor, job, op)
from pydantic import Field

from assets.resources import KafkaResource, LakeResource
from assets.table_specs import table_asset_spec, table_metadata
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.cleanup.candidates import DEFAULT_IDLE_HOURS
from offsets_platform.cleanup.plans import DEFAULT_VALID_HOURS, build_plan, save_plan

# Dagster's concurrency pool of the plan asset and the approve and apply ops
CLEANUP_POOL = "cleanup"

# Written by the approve and apply jobs (and the CLI), not materialized: declared so that the
# graph shows them and coordinator_metrics' dependency on the audit.
cleanup_record_tables = [table_asset_spec(name, "cleanup", set()) for name in ("cleanup_approvals", "cleanup_audit")]


class PlanConfig(Config):
    idle_hours: int = Field(default=DEFAULT_IDLE_HOURS, description="propose DeleteGroups for groups Empty longer than this")
    valid_hours: int = Field(default=DEFAULT_VALID_HOURS, description="the plan expires after this")
    clean_early: List[str] = Field(default=[], description="Empty or standalone groups whose offsets to delete now")


@asset(
    name="cleanup_plans",
    group_name="cleanup",
    description="Proposes OffsetDelete for stale offsets and DeleteGroups for idle Empty groups; a person approves.",
    deps=["expirable_offsets", "group_state", "group_subscriptions", "consumer_lag", "committed_offsets"],
    kinds={"delta"},
    pool=CLEANUP_POOL,
)
def cleanup_plan(context: AssetExecutionContext, config: PlanConfig, lake: LakeResource) -> MaterializeResult:
    the_lake = lake.lake()
    plan = build_plan(the_lake, created_by=f"dagster run {context.run.run_id[:8]}", idle_hours=config.idle_hours,
                      clean_early=tuple(config.clean_early), valid_hours=config.valid_hours)
    save_plan(the_lake, plan)
    lines = ["| action | group | topic | partition | reason |", "|---|---|---|---|---|"]
    lines += [f"| {a.action} | {a.group} | {a.topic or ''} | {'' if a.partition is None else a.partition} | {a.reason} |"
              for a in plan.actions]
    context.log.info(f"plan {plan.plan_id}: {len(plan.actions)} actions, expires {plan.expires_at:%Y-%m-%d %H:%M} UTC"
                     if plan.actions else "nothing to clean up: no plan stored")
    return MaterializeResult(metadata={
        **table_metadata(the_lake, "cleanup_plans"),
        "plan_id": plan.plan_id if plan.actions else "(none: nothing to clean up)",
        "actions_proposed": len(plan.actions),
        "expires_at": plan.expires_at.isoformat(),
        "actions": MetadataValue.md("\n".join(lines)),
    })


class ApproveConfig(Config):
    plan_id: str = Field(description="the plan to approve (see the cleanup_plans asset)")
    approved_by: str = Field(description="your name; recorded in cleanup_approvals")
    comment: Optional[str] = None
    action_ids: List[str] = Field(default=[], description="approve only these actions; empty = the whole plan")


@op(description="Record a person's approval of a cleanup plan (or of some of its actions).", pool=CLEANUP_POOL)
def approve_plan(context: OpExecutionContext, config: ApproveConfig, lake: LakeResource) -> None:
    approval = approve(lake.lake(), config.plan_id, config.approved_by, action_ids=config.action_ids or None,
                       comment=config.comment)
    context.log.info(f"{approval.approved_by} approved {len(approval.action_ids)} actions of plan {config.plan_id}")


class ApplyConfig(Config):
    plan_id: str = Field(description="the approved plan to apply")
    dry_run: bool = Field(default=False, description="only show and audit what would be sent")
    requested_by: Optional[str] = None


@op(description="Apply the approved actions of a plan (OffsetDelete, DeleteGroups), re-checking each group first.",
    pool=CLEANUP_POOL)
def apply_approved_plan(context: OpExecutionContext, config: ApplyConfig, kafka: KafkaResource,
                        lake: LakeResource) -> None:
    result = apply_plan(lake.lake(), kafka.connection(), config.plan_id, dry_run=config.dry_run,
                        requested_by=config.requested_by or f"dagster run {context.run.run_id[:8]}", emit=context.log.info)
    context.log.info(f"plan {config.plan_id}: {result.count('deleted')} deleted, {result.count('skipped')} skipped, "
                     f"{result.count('failed')} failed, {result.count('dry_run')} shown (dry run)")
    if result.failed:
        raise RuntimeError(f"plan {config.plan_id}: {result.count('failed')} actions failed; see cleanup_audit")


@job(executor_def=in_process_executor, description="Approve a cleanup plan: give its id and your name.")
def approve_cleanup():
    approve_plan()


@job(executor_def=in_process_executor, description="Apply the approved actions of a cleanup plan.")
def apply_cleanup():
    apply_approved_plan()
