"""The approval flow on the command line: `plan`, `plans`, `show`, `approve`, `apply` (`plan-reset`: reset.py)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

from offsets_platform.views.candidates import DEFAULT_IDLE_HOURS
from offsets_platform.cleanup.plans import DEFAULT_VALID_HOURS, RESET_ACTIONS, facts_text
from offsets_platform.cleanup.reset_plans import reset_cost
from offsets_platform.cleanup.reset_targets import export_csv
from offsets_platform.cli.args import add_home_option, cluster_and_lake, lake_of, requester
from offsets_platform.cli.output import as_json, table_lines
from offsets_platform.cli.reset import reset_table_lines
from offsets_platform.durations import age_text
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV, Settings, same_person


def add_plan_commands(commands) -> None:
    plan = commands.add_parser("plan", help="propose a cleanup plan from the gold tables (sends nothing)")
    add_home_option(plan)
    plan.add_argument("--idle-hours", type=int, default=DEFAULT_IDLE_HOURS, help="DeleteGroups for groups Empty longer than this")
    plan.add_argument("--valid-hours", type=int, default=DEFAULT_VALID_HOURS, help="the plan expires after this")
    plan.add_argument("--clean-early", action="append", default=[], metavar="GROUP",
                      help="also delete every offset of this Empty or standalone group (repeatable)")
    _by(plan)
    plan.set_defaults(run=_plan)

    plans = commands.add_parser("plans", help="list the stored plans, newest first, with approvals, outcomes "
                                "and state")
    plans.add_argument("--limit", type=int, default=20, help="at most this many (default 20; 0: all)")
    plans.add_argument("--output", choices=("table", "json"), default="table",
                       help="table for people (default), json for scripts")
    add_home_option(plans)
    plans.set_defaults(run=_plans)

    show = commands.add_parser("show", help="show a plan, its approvals and what was applied")
    show.add_argument("plan_id")
    show.add_argument("--export", action="store_true",
                      help="of an offset reset plan, print only its offsets as the CSV of Kafka's --export "
                           "(topic,partition,offset), which --from-file reads")
    add_home_option(show)
    show.set_defaults(run=_show)

    approve = commands.add_parser("approve", help="approve a plan (or some of its actions)")
    approve.add_argument("plan_id")
    _by(approve)
    approve.add_argument("--comment")
    approve.add_argument("--refuse-older-facts", action="store_true",
                         help="refuse a plan made before removals done since (by an apply, delete-offsets or "
                              "delete-groups) instead of warning")
    approve.add_argument("--action", action="append", default=[], metavar="ACTION_ID",
                         help="approve only this action (repeatable; default: the whole plan)")
    add_home_option(approve)
    approve.set_defaults(run=_approve)

    apply = commands.add_parser("apply", help="apply the approved actions of a plan")
    apply.add_argument("plan_id")
    apply.add_argument("--bootstrap-server", help="host:port of the cluster")
    apply.add_argument("--dry-run", action="store_true", help="show and audit what would be sent, send nothing")
    _by(apply)
    add_home_option(apply)
    apply.set_defaults(run=_apply)


def _by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by", help=f"no longer an identity: who acts is ${USER_ENV}, else the OS user; --by is "
                                     "accepted only when it names that same person")


def _plan(args, settings: Settings) -> int:
    from offsets_platform.cleanup.plans import build_plan, save_plan

    lake = lake_of(args, settings, must_exist=True)
    plan = build_plan(lake, created_by=requester(args), idle_hours=args.idle_hours,
                      clean_early=tuple(args.clean_early), valid_hours=args.valid_hours, emit=print)
    if not plan.actions:
        print("nothing to clean up: no stale offsets of unsubscribed topics, no group Empty "
              f"longer than {args.idle_hours} h")
        return 0
    save_plan(lake, plan)
    _print_plan(plan)
    print(f"\nthe facts: {facts_age(lake, plan.created_at)}")
    print(f"approve it with: offsets-platform approve {plan.plan_id}  (run by someone other than "
          f"{plan.created_by}: four-eyes, unless {ALLOW_SELF_APPROVAL_ENV}=true)")
    return 0


def _plans(args, settings: Settings) -> int:
    from offsets_platform.cleanup.plan_list import plan_summaries

    rows = plan_summaries(lake_of(args, settings, must_exist=True), limit=args.limit or None)
    if args.output == "json":
        print(as_json(rows))
        return 0
    if not rows:
        print("no plans yet: `offsets-platform plan` proposes one")
        return 0
    for row in rows:
        row["age"] = age_text(row["age_s"])
    for line in table_lines([("PLAN", "plan_id"), ("CREATED (UTC)", "created_at"), ("AGE", "age"), ("BY", "created_by"),
                             ("ACTIONS", "actions"), ("APPROVED", "approved"), ("DELETED", "deleted"),
                             ("COMMITTED", "committed"),
                             ("SKIPPED", "skipped"), ("FAILED", "failed"), ("STATE", "state")], rows):
        print(line)
    return 0


def facts_age(lake, now) -> str:
    """"the models' tables as of <time> UTC, <age> old": what a plan made at `now` rests on."""
    from offsets_platform.views.from_lake import last_refresh

    at = last_refresh(lake)
    return (f"the models' tables as of {at:%Y-%m-%d %H:%M:%S} UTC, {age_text((now - at).total_seconds())} old"
            if at else "the models have not run")


def _show(args, settings: Settings) -> int:
    from offsets_platform.cleanup.approvals import approved_actions, removals_since_made
    from offsets_platform.cleanup.plans import load_plan

    lake = lake_of(args, settings, must_exist=True)
    plan = load_plan(lake, args.plan_id)
    resets = [action for action in plan.actions if action.action in RESET_ACTIONS]
    if args.export:
        if not resets:
            print(f"error: plan {plan.plan_id} resets no offset: --export writes the offsets of a reset plan",
                  file=sys.stderr)
            return 2
        print(export_csv({plan.actions[0].group: {(a.topic, a.partition): a.facts["target_offset"] for a in resets}}),
              end="")
        return 0
    # another person's approval shown rather than the author's, where there are both (four-eyes counts the former)
    approved = {**approved_actions(lake, plan), **approved_actions(lake, plan, by_author=False)}
    _print_plan(plan, approved, _audit(lake, plan.plan_id))
    made = age_text((datetime.now(timezone.utc) - plan.created_at).total_seconds())
    if resets:
        for line in reset_table_lines(resets):
            print(line)
        print(f"\n{reset_cost(resets)}")
        print(f"\nthe facts: what the cluster answered when the plan was made, {made} ago")
        return 0
    print(f"\nthe facts: the models' tables when the plan was made, {made} ago")
    older = removals_since_made(lake, plan)
    if older:
        print(f"warning: {older}")
    return 0


def _approve(args, settings: Settings) -> int:
    from offsets_platform.cleanup.approvals import approve
    from offsets_platform.cleanup.plans import load_plan

    lake = lake_of(args, settings, must_exist=True)
    approval = approve(lake, args.plan_id, requester(args), action_ids=args.action or None, comment=args.comment,
                       refuse_older_facts=args.refuse_older_facts)
    if approval.older_facts:
        print(f"warning: {approval.older_facts}", file=sys.stderr)
    print(f"{approval.approved_by} approved {len(approval.action_ids)} actions of plan {args.plan_id}")
    approved = [action for action in load_plan(lake, args.plan_id).actions if action.action_id in approval.action_ids]
    if any(action.action in RESET_ACTIONS for action in approved):
        print(f"what was approved: {reset_cost(approved)}")
    return 0


def _apply(args, settings: Settings) -> int:
    from offsets_platform.cleanup.apply import apply_plan

    target = cluster_and_lake(args, settings, must_exist=True)
    if target is None:
        return 2
    connection, lake = target
    result = apply_plan(lake, connection, args.plan_id, dry_run=args.dry_run, requested_by=requester(args))
    committed = f"{result.count('committed')} committed (offset resets), " if result.count("committed") else ""
    print(f"{result.count('deleted')} deleted, {committed}{result.count('skipped')} skipped, "
          f"{result.count('failed')} failed"
          + (f", {result.count('dry_run')} shown (dry run: nothing sent)" if args.dry_run else ""))
    return 1 if result.failed else 0


def _audit(lake, plan_id: str) -> dict[str, dict]:
    """action id -> its latest audit row."""
    rows = lake.query(f"select * from cleanup_audit where plan_id = {lake_string(plan_id)} order by at",
                      "cleanup_audit")
    return {row["action_id"]: row for row in rows.to_pylist()}


def _print_plan(plan, approved: dict | None = None, audit: dict | None = None) -> None:
    """The plan's head line, then per action: what, why, approval and outcome, and under it the
    facts the plan rests on and, once applied, what happened and why (a skipped action's reason)."""
    print(f"plan {plan.plan_id}: {len(plan.actions)} actions, by {plan.created_by}, "
          f"created {plan.created_at:%Y-%m-%d %H:%M} UTC, expires {plan.expires_at:%Y-%m-%d %H:%M} UTC"
          + (" (EXPIRED)" if plan.expired() else ""))
    for action in plan.actions:
        status = ""
        if approved is not None:
            approval = approved.get(action.action_id)
            status = f"  [approved by {approval['approved_by']}]" if approval else "  [not approved]"
            if approval and same_person(approval["approved_by"], plan.created_by):
                status += " [by the plan's author]"
        row = (audit or {}).get(action.action_id)
        if row:
            status += f" [{row['outcome']}{': ' + row['error'] if row['error'] else ''}]"
        print(f"  {action.action_id}  {action.describe():<60} {action.reason}{status}")
        if approved is None:
            continue  # the plan as proposed: its facts are in `show`
        print(f"      facts: {facts_text(action.facts)}")
        if row:
            print(f"      outcome: {row['outcome']} at {row['at']:%Y-%m-%d %H:%M:%S} UTC, by {row['requested_by']}"
                  + (f": {row['detail']}" if row["detail"] else ""))

