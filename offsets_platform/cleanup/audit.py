"""What an apply writes to `cleanup_audit`: the intent before each request, the outcome after.

Each request an apply sends is audited twice:

1. right before it goes out, one 'sending' row per partition (OffsetDelete) or group
   (DeleteGroups) it names: the intent, committed to Delta before the request leaves;
2. once Kafka answered, one row per partition or group, 'deleted' ('committed' for an offset
   reset) or 'failed' with Kafka's error name, whose `intent_id` is the audit_id of its intent.
   A request's outcomes are one commit.

An intent that no outcome row names means the apply stopped in between (killed, its machine
lost): the request may or may not have reached the broker. The next apply of the plan settles
it from the broker's state before anything else (reconcile.py): 'deleted', or 'interrupted' when
the broker still holds the offset or group ('committed' when the group's offset is the reset's). Actions that are not sent get one row without
intent: 'skipped' (the live facts changed, or Kafka refused the re-check's read of the group: then
with Kafka's error name, and the ACL to add in `detail`) or 'dry_run'.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc

from offsets_platform.cleanup.approvals import AUDIT
from offsets_platform.cleanup.plans import PlannedAction
from offsets_platform.lake import Lake

SENDING = "sending"
DELETED = "deleted"
COMMITTED = "committed"  # an offset reset's OffsetCommit took effect
DONE = (DELETED, COMMITTED)  # an action with one of these outcomes is never sent again
FAILED = "failed"
INTERRUPTED = "interrupted"
SKIPPED = "skipped"
DRY_RUN = "dry_run"


class PlanAudit:
    """Appends the audit rows of one apply of a plan; `rows` holds what it wrote, in order."""

    def __init__(self, lake: Lake, plan_id: str, bootstrap_servers: str, requested_by: str):
        self.lake, self.plan_id = lake, plan_id
        self.bootstrap_servers, self.requested_by = bootstrap_servers, requested_by
        self.rows: list[dict] = []

    def intents(self, actions: list[PlannedAction], request: str) -> dict[str, str]:
        """Record, in one commit, that `request` is about to be sent for `actions`.
        Returns each action's intent id, for its outcome row."""
        rows = self._append(actions, SENDING, None, f"{request} about to be sent; its outcome follows in a row "
                                                    "with this row's audit_id as intent_id", None)
        return {row["action_id"]: row["audit_id"] for row in rows}

    def outcomes(self, answered: list[tuple[PlannedAction, str, str | None, str | None]],
                 intents: dict[str, str]) -> None:
        """Record, in one commit, what Kafka answered for each action of one request:
        (action, outcome, error name, message)."""
        self._append_rows([self._row(action, outcome, error, detail, intents[action.action_id])
                           for action, outcome, error, detail in answered])

    def record(self, actions: list[PlannedAction], outcome: str, error: str | None, detail: str | None,
               intent_id: str | None = None) -> None:
        """Record one outcome for each of `actions` (not sent, or a reconciled intent)."""
        self._append(actions, outcome, error, detail, intent_id)

    def unresolved_intents(self) -> list[dict]:
        """This plan's 'sending' rows that no outcome row names, oldest first."""
        if not self.lake.exists(AUDIT):
            return []
        audit = self.lake.read_arrow(AUDIT)
        rows = audit.filter(pc.field("plan_id") == self.plan_id).to_pylist()
        resolved = {row.get("intent_id") for row in rows} - {None}
        return sorted((row for row in rows if row["outcome"] == SENDING and row["audit_id"] not in resolved),
                      key=lambda row: row["at"])

    def _append(self, actions: list[PlannedAction], outcome: str, error: str | None, detail: str | None,
                intent_id: str | None) -> list[dict]:
        return self._append_rows([self._row(action, outcome, error, detail, intent_id) for action in actions])

    def _row(self, action: PlannedAction, outcome: str, error: str | None, detail: str | None,
             intent_id: str | None) -> dict:
        return {"audit_id": uuid.uuid4().hex, "plan_id": self.plan_id, "action_id": action.action_id,
                "origin": "plan", "action": action.action, "group": action.group, "topic": action.topic,
                "partition": action.partition, "outcome": outcome, "error": error, "detail": detail,
                "bootstrap_servers": self.bootstrap_servers, "requested_by": self.requested_by,
                "at": datetime.now(timezone.utc), "intent_id": intent_id}

    def _append_rows(self, rows: list[dict]) -> list[dict]:
        if rows:
            self.lake.append(AUDIT, pa.Table.from_pylist(rows))
            self.rows += rows
        return rows
