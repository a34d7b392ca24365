"""Cleanup in Dagster: the plan asset, and the approval and apply jobs a person launches.

Approve and apply are jobs, not assets: a person starts them from the launchpad, choosing the plan
from a list (each job's partitions are the open plans), and each leaves its trace in the cleanup
tables. The plan asset adds each plan it stores to the list; `open_cleanup_plans_sensor` adds the
plans stored by the command line and removes those that expired or were applied whole.

Who acts is the run's identity tag, never a name typed into the run config: `dagster/user`, which
Dagster+ sets to the launching user, else `offsets_platform/user`, which an open-source instance's
launchpad lets one add (there, a tag is as trustworthy as the right to launch runs). A run
without either cannot approve. Four-eyes holds as in offsets_platform.cleanup.approvals: the plan
asset's run identity is the plan's author, and that person cannot approve it unless the code
location's environment sets OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL=true. A plan materialized by a
run without identity is authored by "dagster run <id>", which anyone identified may approve.

The plan asset and both ops are in the concurrency pool "cleanup". With the instance's pool limit
(`concurrency: pools: default_limit: 1`, see assets/dagster.yaml, which `make ui` installs) Dagster
runs one of them at a time across all runs and shows the others as waiting for the pool. The
lake's own leases (offsets_platform.lake.lease) still guard runs outside Dagster and instances
without that limit.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from typing import List, Optional

from dagster import (AssetExecutionContext, Config, DefaultSensorStatus, DynamicPartitionsDefinition, Failure,
                     MaterializeResult, MetadataValue, OpExecutionContext, Output, SensorEvaluationContext,
                     SensorResult, SkipReason, asset, in_process_executor, job, op, sensor)
from pydantic import Field

from offsets_platform_dagster.resources import KafkaResource, LakeResource
from offsets_platform_dagster.table_specs import table_asset_spec, table_metadata
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.cleanup.approvals import approve
from offsets_platform.views.candidates import DEFAULT_IDLE_HOURS
from offsets_platform.cleanup.plan_list import open_plan_ids
from offsets_platform.cleanup.plans import (DEFAULT_VALID_HOURS, RESET_ACTIONS, CleanupPlan, PlanError, build_plan,
                                           facts_text, load_plan, save_plan)
from offsets_platform.cleanup.reset_plans import reset_cost

# Dagster's concurrency pool of the plan asset and the approve and apply ops
CLEANUP_POOL = "cleanup"

# The plans a person may approve or apply (not expired, not applied whole), one partition each:
# the launchpad of the approve and apply jobs offers them as a list, newest first.
OPEN_PLANS = DynamicPartitionsDefinition(name="open_cleanup_plans")
OPEN_PLANS_SENSOR = "open_cleanup_plans_sensor"

# The run tags naming who launched a run, first found wins: Dagster+ sets the first from the login.
IDENTITY_TAGS = ("dagster/user", "offsets_platform/user")

# Written by the approve and apply jobs (and the CLI), not materialized: declared so that the
# graph shows them and coordinator_metrics' dependency on the audit.
cleanup_record_tables = [table_asset_spec(name, "cleanup", set()) for name in ("cleanup_approvals", "cleanup_audit")]


def run_identity(context) -> Optional[str]:
    """Who launched the run, from its identity tags; None when it has none."""
    tags = context.run.tags
    for tag in IDENTITY_TAGS:
        value = (tags.get(tag) or "").strip()
        if value:
            return value
    return None


def run_identity_or_id(context) -> str:
    """Who launched the run, else the run itself ("dagster run <id>"): for a plan's author and
    the audit, where a run without identity tags still has to be named."""
    return run_identity(context) or f"dagster run {context.run.run_id[:8]}"


def plan_markdown(plan: CleanupPlan, action_ids: Optional[List[str]] = None) -> str:
    """The plan's actions (all, or `action_ids`) as a markdown table with the facts each rests on."""
    chosen = set(action_ids or [a.action_id for a in plan.actions])
    lines = ["| action id | action | group | topic | partition | reason | facts |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {a.action_id} | {a.action} | {_cell(a.group)} | {_cell(a.topic or '')} | "
              f"{'' if a.partition is None else a.partition} | {_cell(a.reason)} | {_cell(facts_text(a.facts))} |"
              for a in plan.actions if a.action_id in chosen]
    return "\n".join(lines)


def _cell(text: str) -> str:
    # a group or topic name may hold "|", which would split the row
    return text.replace("|", "\\|")


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
    plan = build_plan(the_lake, created_by=run_identity_or_id(context), idle_hours=config.idle_hours,
                      clean_early=tuple(config.clean_early), valid_hours=config.valid_hours,
                      emit=context.log.info)
    save_plan(the_lake, plan)
    if plan.actions:  # offered to the approve job at once, not at the sensor's next tick
        context.instance.add_dynamic_partitions(OPEN_PLANS.name, [plan.plan_id])
    context.log.info(f"plan {plan.plan_id}: {len(plan.actions)} actions, expires {plan.expires_at:%Y-%m-%d %H:%M} UTC"
                     if plan.actions else "nothing to clean up: no plan stored")
    return MaterializeResult(metadata={
        **table_metadata(the_lake, "cleanup_plans"),
        "plan_id": plan.plan_id if plan.actions else "(none: nothing to clean up)",
        "actions_proposed": len(plan.actions),
        "created_by": plan.created_by,
        "expires_at": plan.expires_at.isoformat(),
        "actions": MetadataValue.md(plan_markdown(plan)),
    })


def chosen_plan_id(context: OpExecutionContext) -> str:
    """The plan the run was launched for: its partition, chosen from the open plans."""
    if not context.has_partition_key:
        raise Failure(description="choose the plan: launch this job with one of its partitions (the open cleanup "
                                  "plans, newest first; `offsets-platform plans` lists them too)",
                      allow_retries=False)
    return context.partition_key


class ApproveConfig(Config):
    comment: Optional[str] = Field(default=None, description="why, recorded with the approval; who approves is the "
                                                             "run's tag dagster/user or offsets_platform/user")
    action_ids: List[str] = Field(default=[], description="approve only these actions; empty = the whole plan")
    refuse_older_facts: bool = Field(default=False, description="refuse a plan made before removals done since "
                                                                "(by an apply, delete-offsets or delete-groups) "
                                                                "instead of warning")


@op(description="Show a cleanup plan's actions and facts, then record the approval (of the whole plan or some "
                "actions) by the run's identity tag: dagster/user, else offsets_platform/user. The plan is the run's "
                "partition; its actions and facts are also in the metadata (\"actions\") of the cleanup_plans "
                "materialization that proposed it.",
    pool=CLEANUP_POOL)
def approve_plan(context: OpExecutionContext, config: ApproveConfig, lake: LakeResource) -> Output:
    the_lake = lake.lake()
    plan_id = chosen_plan_id(context)
    try:
        plan = load_plan(the_lake, plan_id)
    except PlanError as error:
        raise Failure(description=str(error), allow_retries=False) from error
    facts = plan_markdown(plan, config.action_ids)
    chosen = [a for a in plan.actions if not config.action_ids or a.action_id in config.action_ids]
    # logged before anything is recorded, so that a refused run still shows what it was asked to
    # approve; the run log shows text as typed, so one line per action rather than the markdown table
    context.log.info(f"plan {plan.plan_id} by {plan.created_by}, expires {plan.expires_at:%Y-%m-%d %H:%M} UTC; "
                     f"the actions to approve and their facts:\n"
                     + "\n".join(f"{a.action_id}  {a.describe()}: {a.reason}\n    facts: {facts_text(a.facts)}"
                                  for a in chosen))
    approver = run_identity(context)
    if approver is None:
        raise Failure(description=f"this run names no one: launch it with the tag {IDENTITY_TAGS[1]}=YOUR_NAME "
                                  f"(Dagster+ sets {IDENTITY_TAGS[0]} itself); the approver is never taken from config",
                      allow_retries=False)
    try:
        approval = approve(the_lake, plan_id, approver, action_ids=config.action_ids or None,
                           comment=config.comment, refuse_older_facts=config.refuse_older_facts)
    except PlanError as error:  # the reason alone, not a stack trace, heads the failed run
        raise Failure(description=str(error), allow_retries=False) from error
    if approval.older_facts:
        context.log.warning(approval.older_facts)
    context.log.info(f"{approval.approved_by} approved {len(approval.action_ids)} actions of plan {plan_id}"
                     + (f"; {reset_cost(chosen)}" if any(a.action in RESET_ACTIONS for a in chosen) else ""))
    return Output(None, metadata={
        "plan_id": plan.plan_id,
        "plan_created_by": plan.created_by,
        "approved_by": approval.approved_by,
        "actions_approved": len(approval.action_ids),
        "actions": MetadataValue.md(facts),
        "facts": approval.older_facts or f"the models' tables when the plan was made ({plan.created_at:%Y-%m-%d %H:%M} UTC); "
                          "no removal was done since",
    })


class ApplyConfig(Config):
    dry_run: bool = Field(default=False, description="only show and audit what would be sent")


@op(description="Apply the approved actions of a plan (OffsetDelete, DeleteGroups, an offset reset's OffsetCommit), "
                "re-checking each group first.",
    pool=CLEANUP_POOL)
def apply_approved_plan(context: OpExecutionContext, config: ApplyConfig, kafka: KafkaResource,
                        lake: LakeResource) -> None:
    plan_id = chosen_plan_id(context)
    try:
        result = apply_plan(lake.lake(), kafka.connection(), plan_id, dry_run=config.dry_run,
                            requested_by=run_identity_or_id(context),
                            emit=context.log.info)
    except PlanError as error:  # the reason alone heads the failed run: unknown, expired, not (validly) approved
        raise Failure(description=str(error), allow_retries=False) from error
    context.log.info(f"plan {plan_id}: {result.count('deleted')} deleted, {result.count('committed')} committed "
                     f"(offset resets), {result.count('skipped')} skipped, {result.count('failed')} failed, "
                     f"{result.count('dry_run')} shown (dry run)")
    if result.failed:
        raise RuntimeError(f"plan {plan_id}: Kafka answered {result.refused} actions with an error; "
                           "see cleanup_audit")


@job(executor_def=in_process_executor, partitions_def=OPEN_PLANS,
     description="Approve a cleanup plan: choose it among the partitions (the open plans), and launch with the tag "
                 "offsets_platform/user=YOUR_NAME (Dagster+ sets dagster/user). The run shows the plan's actions and "
                 "facts first; they are also in the cleanup_plans asset's latest materialization.")
def approve_cleanup():
    approve_plan()


@job(executor_def=in_process_executor, partitions_def=OPEN_PLANS,
     description="Apply the approved actions of a cleanup plan: choose it among the partitions (the open plans).")
def apply_cleanup():
    apply_approved_plan()


@sensor(name=OPEN_PLANS_SENSOR, minimum_interval_seconds=60, default_status=DefaultSensorStatus.RUNNING,
        description="Keeps the list of plans the approve and apply jobs offer equal to the open plans in the lake: "
                    "adds those the command line stored, removes those that expired or were applied whole. It "
                    "reads the lake only (no broker, no Spark), so it runs by default.")
def open_cleanup_plans_sensor(context: SensorEvaluationContext, lake: LakeResource):
    open_now = open_plan_ids(lake.lake())
    listed = set(context.instance.get_dynamic_partitions(OPEN_PLANS.name))
    added, removed = [p for p in open_now if p not in listed], sorted(listed - set(open_now))
    if not added and not removed:
        return SkipReason(f"the {len(open_now)} open plans are listed")
    return SensorResult(dynamic_partitions_requests=[
        *([OPEN_PLANS.build_add_request(added)] if added else []),
        *([OPEN_PLANS.build_delete_request(removed)] if removed else [])])
