"""An offset reset planned from Dagster: a job a person launches with typed config.

The job resolves the reset against the cluster (offsets_platform.cleanup.reset_plans) and stores it
as a plan; from there it is a cleanup plan like any other: it joins the open plans the
`approve_cleanup` and `apply_cleanup` jobs offer, another person approves it, and apply commits
exactly the offsets the plan shows. The run's metadata holds the plan in the layout of Kafka's
`--reset-offsets --dry-run`, with the facts each new offset rests on.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from enum import Enum
from typing import List, Optional

from dagster import Config, Failure, MetadataValue, OpExecutionContext, Output, in_process_executor, job, op
from pydantic import Field

from offsets_platform_dagster.cleanup import CLEANUP_POOL, OPEN_PLANS, run_identity_or_id
from offsets_platform_dagster.resources import KafkaResource, LakeResource
from offsets_platform.kafka.group_calls import GroupCallError
from offsets_platform.cleanup.plans import DEFAULT_VALID_HOURS, PlanError, save_plan
from offsets_platform.cleanup.reset_plans import RESET_COLUMNS, build_reset_plan, reset_cost, reset_request, reset_rows
from offsets_platform.cleanup.reset_targets import FROM_FILE, SPECIFIERS, ResetSpecError
from offsets_platform.kafka.admin_calls import open_admin

REQUEST_TIMEOUT_S = 15.0


# Kafka's --reset-offsets specifiers as the launchpad offers them: TO_EARLIEST for to-earliest, ...
ResetSpecifier = Enum("ResetSpecifier", {kind.upper().replace("-", "_"): kind for kind in SPECIFIERS})


class PlanResetConfig(Config):
    group: str = Field(description="the group to reset, of any kind; Kafka resets only an inactive one (Empty, or "
                                   "only committed to from outside)")
    specifier: ResetSpecifier = Field(description="where the offsets go, as Kafka's --reset-offsets names it")
    value: Optional[str] = Field(default=None, description=(
        "N for TO_OFFSET and SHIFT_BY, YYYY-MM-DDTHH:mm:SS.sss[zone] for TO_DATETIME, an ISO-8601 duration "
        "(PnDTnHnM) for BY_DURATION, the CSV lines (topic,partition,offset) for FROM_FILE; none for the others"))
    topics: List[str] = Field(default=[], description="TOPIC or TOPIC:P,P, as Kafka's --topic (empty with "
                                                      "all_topics, or with FROM_FILE, whose lines name them)")
    all_topics: bool = Field(default=False, description="every partition the group has a committed offset for")
    allow_new_group: bool = Field(default=False, description="give a group the cluster does not know its first "
                                                             "offsets (otherwise refused: a misspelt name would "
                                                             "make a new group)")
    valid_hours: int = Field(default=DEFAULT_VALID_HOURS, description="the plan expires after this")


def reset_markdown(actions) -> str:
    """The plan as Kafka's --dry-run lists it (GROUP TOPIC PARTITION NEW-OFFSET), then the facts."""
    lines = ["| " + " | ".join(RESET_COLUMNS) + " |", "|" + "---|" * len(RESET_COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in reset_rows(actions)]
    return "\n".join(lines)


@op(description="Resolve an offset reset against the cluster now and store it as a plan for approval (nothing is "
                "sent to the group); approve_cleanup and apply_cleanup then offer it like any cleanup plan.",
    pool=CLEANUP_POOL)
def plan_reset(context: OpExecutionContext, config: PlanResetConfig, kafka: KafkaResource,
               lake: LakeResource) -> Output:
    kind = config.specifier.value
    try:
        request = reset_request(config.group, kind, None if kind == FROM_FILE else config.value, config.topics,
                                config.all_topics, config.value if kind == FROM_FILE else None, config.allow_new_group)
        with open_admin(kafka.connection(), REQUEST_TIMEOUT_S, REQUEST_TIMEOUT_S) as admin:
            plan = build_reset_plan(admin, request, run_identity_or_id(context), valid_hours=config.valid_hours)
    except (ResetSpecError, PlanError, GroupCallError) as error:  # Kafka's refusal alone heads the failed run
        raise Failure(description=str(error), allow_retries=False) from error
    if not plan.actions:
        context.log.info(f"nothing to reset: {config.group} has no committed offset on the partitions named")
        return Output(None, metadata={"plan_id": "(none: nothing to reset)"})
    the_lake = lake.lake()
    save_plan(the_lake, plan)
    context.instance.add_dynamic_partitions(OPEN_PLANS.name, [plan.plan_id])
    cost = reset_cost(plan.actions)
    context.log.info(f"plan {plan.plan_id}: reset {plan.actions[0].facts['specifier']} of {config.group}, "
                     f"{len(plan.actions)} partitions; {cost}; approve it with the approve_cleanup job")
    return Output(None, metadata={
        "plan_id": plan.plan_id,
        "created_by": plan.created_by,
        "expires_at": plan.expires_at.isoformat(),
        "partitions": len(plan.actions),
        "messages_read_again": sum(a.facts.get("messages_read_again") or 0 for a in plan.actions),
        "messages_skipped": sum(a.facts.get("messages_skipped") or 0 for a in plan.actions),
        "cost": cost,
        "new_offsets": MetadataValue.md(reset_markdown(plan.actions)),
    })


@job(executor_def=in_process_executor,
     description="Plan an offset reset of one group, with the specifiers of Kafka's --reset-offsets (config: group, "
                 "specifier, value, topics or all_topics). The plan then waits in approve_cleanup and apply_cleanup.")
def plan_offset_reset():
    plan_reset()
