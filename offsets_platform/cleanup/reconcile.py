"""Settling the intents an interrupted apply left without an outcome, from the broker's state.

An apply writes a 'sending' row before each request and the outcome after (audit.py). When it
stops in between, the lake cannot tell whether Kafka received the request; the broker's state
tells whether the deletion happened, which is what the audit has to say:

- OffsetDelete: OffsetFetch of the group. No committed offset on the partition: 'deleted'. Still
  committed: 'interrupted', the deletion did not happen.
- An offset reset's OffsetCommit: OffsetFetch of the group (a share group's AlterShareGroupOffsets:
  DescribeShareGroupOffsets). The planned offset there: 'committed'. Another: 'interrupted', then
  re-checked like any action: sent again only while the group still holds the offset the plan saw.
- DeleteGroups: the describe API of the group's type. No API knows the group: 'deleted'. Still
  there: 'interrupted'.

Each such row names its intent (`intent_id`) and says in `detail` that it was reconciled, not
answered. An offset or group can also vanish for another reason in between (offsets expiring, an
operator's own command); the broker cannot tell these apart, and the detail says so.

An 'interrupted' action is then applied like any other: re-checked live, and sent again only if
its facts still hold. Not settling first would send a deletion that happened again, which Kafka
answers differently (GROUP_ID_NOT_FOUND for DeleteGroups, audited 'failed'), or have the re-check
call it 'skipped' ("no longer committed", "Dead now") although it was this plan that deleted it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.audit import COMMITTED, DELETED, INTERRUPTED, PlanAudit
from offsets_platform.cleanup.plans import OFFSET_DELETE, RESET_ACTIONS, RESET_SHARE_OFFSET, CleanupPlan, PlannedAction
from offsets_platform.kafka.admin_calls import SnapshotAdminClient


def reconcile_intents(admin: SnapshotAdminClient, plan: CleanupPlan, audit: PlanAudit, intents: list[dict],
                      emit: Callable[[str], None]) -> None:
    """Record an outcome for each intent in `intents` (this plan's 'sending' rows without one).

    Raises:
        GroupCallError: the broker answered the read of a group with an error; that group's
            intents stay unresolved for the next apply.
        BrokerUnreachable: the connection failed.
    """
    by_group: dict[str, list[dict]] = {}
    for intent in intents:
        by_group.setdefault(intent["group"], []).append(intent)
    for group, rows in by_group.items():
        live = group_calls.live_group(admin, group)
        for intent in rows:
            action = plan.action(intent["action_id"])
            outcome, now_state = _settled(intent, action, live)
            sent = f"{intent['at']:%Y-%m-%d %H:%M:%S} UTC"
            detail = (f"reconciled on {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC: the apply that recorded "
                      f"this intent at {sent} stopped before recording Kafka's answer; {now_state}")
            audit.record([action], outcome, None, detail, intent_id=intent["audit_id"])
            emit(f"  {action.describe()}: {outcome} (reconciled: {now_state})")


def _settled(intent: dict, action: PlannedAction, live: group_calls.LiveGroupState) -> tuple[str, str]:
    """The outcome of an unanswered intent, and the broker's state it rests on."""
    if intent["action"] in RESET_ACTIONS:
        offsets = live.share_start_offsets if intent["action"] == RESET_SHARE_OFFSET else live.committed_offsets
        committed = offsets.get((intent["topic"], intent["partition"]))
        target = action.facts.get("target_offset")
        if committed == target:
            return COMMITTED, f"the broker shows the planned offset {target} there now"
        return INTERRUPTED, (f"the broker shows {'no offset' if committed is None else f'offset {committed}'} "
                             f"there now, not the planned {target}")
    if intent["action"] == OFFSET_DELETE:
        committed = live.committed_offsets.get((intent["topic"], intent["partition"]))
        if committed is None:
            return DELETED, ("OffsetFetch shows no committed offset there now (the request took effect, "
                             "or the offset was removed otherwise in between)")
        return INTERRUPTED, f"an offset is committed there now ({committed}): not deleted, or committed again since"
    if not live.exists:
        return DELETED, ("no describe API knows the group now (the request took effect, "
                         "or the group was removed otherwise in between)")
    return INTERRUPTED, f"the group exists now ({live.state}): not deleted, or created again since"
