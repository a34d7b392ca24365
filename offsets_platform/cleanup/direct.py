"""The direct cleanup commands, mirroring kafka-consumer-groups.sh --delete-offsets and --delete.

Output follows Kafka's own ConsumerGroupCommand (the Java tool of Kafka 4.x) line by line: for
--delete-offsets a verdict line (`Request succeeded for deleting offsets from group G.`, or
`Error: ...` after a blank line), a blank line, then the `TOPIC  PARTITION  STATUS` table (topic
column as wide as the longest topic and at least 15, `%-10s %-15s` after it) with "-" as the
partition of a topic whose partitions could not be listed; for --delete the "Deletion of
requested consumer groups (...)" lines. The deliberate differences:

- delete-offsets refuses, before sending anything, a request naming a topic the group's live
  members subscribe to, unless --force. Kafka refuses OffsetDelete for such a topic itself
  (GROUP_SUBSCRIBED_TO_TOPIC, KIP-496) and Kafka's tool sends it anyway; refusing first keeps a
  mixed request from deleting the other topics' offsets and says in one message which members
  use which topic. With --force the request goes out and the broker's answers are printed.
- A failed row names the error as Kafka's error name and message (`Error: NON_EMPTY_GROUP: The
  group is not empty.`) where Kafka's tool prints the Java exception (`Error: org.apache.kafka.
  common.errors.GroupNotEmptyException: The group is not empty.`).
- The exit status is 1 when anything failed or was refused; Kafka's tool exits 0 either way.
- A topic that cannot be listed (unknown) makes the verdict the partition-level error even when
  the partitions that were sent succeeded; Kafka's tool then says "Request succeeded".
- An authorization error (GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED) is followed by
  the ACL the request needs and the `kafka-acls` command that adds it, where Kafka's tool prints
  only the error.
- Rows are sorted by topic, then partition number; Kafka's tool sorts by the text topic +
  partition (so `t10` before `t2`). The failed groups of --delete are listed in the order asked;
  Kafka's tool lists them in no particular order.

Every outcome becomes one `cleanup_audit` row: 'deleted' and 'failed' for what the broker
answered, 'skipped' for what was not sent (refused here, or a topic the cluster does not list).
Before a request goes out, a 'sending' row per partition or group records the intent, and each
answer's row names it (`intent_id`): a command killed between the two leaves the intent, so the
audit still says what was sent.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import kafka.errors as Errors
import pyarrow as pa

from offsets_platform.cleanup.audit import SENDING
from offsets_platform.kafka.group_calls import (
    GroupCallError, GroupOutcome, LiveGroupState, PartitionOutcome, TopicMetadata, delete_groups, delete_offsets,
    explain_error, live_group, topic_metadata,
)
from offsets_platform.kafka.admin_calls import SnapshotAdminClient, error_name
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES

NO_PARTITION = "-"  # Kafka's tool: the partition column of a topic it could not list
MIN_TOPIC_WIDTH = 15  # Kafka's ConsumerGroupCommand.deleteOffsets: "%-<max(15, longest)>s %-10s %-15s"
PARTITION_LEVEL_VERDICT = "Encountered some partition-level error, see the follow-up details."
OFFSET_DELETE, DELETE_GROUPS = "OffsetDelete", "DeleteGroups"
DELETED, FAILED, SKIPPED = "deleted", "failed", "skipped"
SUBSCRIBED = error_name(Errors.GroupSubscribedToTopicError.errno)
# Kafka's tool prints the error's own message for these whole-request errors ...
GROUP_LEVEL_ERRORS = frozenset(error_name(e.errno) for e in (
    Errors.InvalidGroupIdError, Errors.GroupIdNotFoundError, Errors.GroupAuthorizationFailedError,
    Errors.NonEmptyGroupError))
# ... and one sentence for these per-partition ones; any other error is "some unknown error".
PARTITION_LEVEL_ERRORS = frozenset(error_name(e.errno) for e in (
    Errors.GroupSubscribedToTopicError, Errors.TopicAuthorizationFailedError, Errors.UnknownTopicOrPartitionError))


@dataclass(frozen=True)
class TopicRequest:
    """One --topic argument: a topic, with the partitions named or None for "all of them"."""

    topic: str
    partitions: tuple[int, ...] | None = None


def parse_topic_argument(value: str) -> TopicRequest:
    """Parse Kafka's --topic syntax: `topic` or `topic:0,1,2`.

    Raises:
        ValueError: a partition that is not a non-negative integer, or no topic name.
    """
    topic, colon, partitions = value.rpartition(":") if ":" in value else (value, "", "")
    if not topic:
        raise ValueError(f"--topic {value!r}: no topic name")
    if not colon:
        return TopicRequest(topic)
    try:
        numbers = tuple(dict.fromkeys(int(p) for p in partitions.split(",")))
    except ValueError:
        raise ValueError(f"--topic {value!r}: partitions must be integers, as in {topic}:0,1,2") from None
    if any(number < 0 for number in numbers):
        raise ValueError(f"--topic {value!r}: partitions cannot be negative")
    return TopicRequest(topic, numbers)


@dataclass(frozen=True)
class OffsetRow:
    """One row of the delete-offsets table and of the audit. `partition` None = the whole topic.

    `message` is what the table prints after the error name; `note` adds, for the audit only,
    why a row was not sent or was forced.
    """

    topic: str
    partition: int | None
    outcome: str
    error: str | None = None
    message: str | None = None
    note: str | None = None

    @property
    def status(self) -> str:
        return "Successful" if self.outcome == DELETED else f"Error: {_error_text(self.error, self.message)}"

    @property
    def detail(self) -> str | None:
        return "; ".join(part for part in (self.message, self.note) if part) or None


@dataclass(frozen=True)
class DeleteOffsetsResult:
    """What delete-offsets did: one row per partition or unlisted topic, and why it stopped early.

    `group_error` (Kafka's error name) and `group_message` are set when the broker refused the
    whole request or the group could not be read; `refusal` when this command refused to send it.
    """

    group: str
    rows: list[OffsetRow]
    group_error: str | None = None
    group_message: str | None = None
    refusal: str | None = None

    @property
    def ok(self) -> bool:
        return self.group_error is None and self.refusal is None and all(r.outcome == DELETED for r in self.rows)

    def report(self) -> list[str]:
        """The lines to print: the refusal, or Kafka's verdict line and table."""
        if self.refusal:
            return ["", f"Error: {self.refusal}"]
        ordered = sorted(self.rows, key=lambda row: (row.topic, -1 if row.partition is None else row.partition))
        width = max([MIN_TOPIC_WIDTH] + [len(row.topic) for row in ordered])
        line = f"%-{width}s %-10s %-15s"
        table = [line % ("TOPIC", "PARTITION", "STATUS")] + [
            line % (row.topic, NO_PARTITION if row.partition is None else row.partition, row.status)
            for row in ordered]
        return self._verdict() + [""] + table

    def _verdict(self) -> list[str]:
        failed = [row for row in self.rows if row.outcome != DELETED]
        if self.group_error is None and not failed:
            return [f"Request succeeded for deleting offsets from group {self.group}."]
        error = self.group_error or failed[0].error
        if error in GROUP_LEVEL_ERRORS:
            text = self.group_message or failed[0].message or error
        elif error in PARTITION_LEVEL_ERRORS:
            text = PARTITION_LEVEL_VERDICT
        else:
            text = f"Encountered some unknown error: {error}"
        return ["", f"Error: {text}"]


def run_delete_offsets(admin: SnapshotAdminClient, group: str, topics: list[TopicRequest],
                       force: bool = False, before_send: Callable[[list[tuple[str, int]]], None] | None = None,
                       ) -> DeleteOffsetsResult:
    """Delete the group's committed offsets of the requested topics: all checks first, then one OffsetDelete.

    A topic without partitions means every partition of the topic, from the cluster metadata (as
    Kafka's tool does); a topic the metadata does not list gets one row, not sent. Partitions
    named explicitly are sent as they are: the broker answers UNKNOWN_TOPIC_OR_PARTITION for one
    that does not exist. Without `force`, nothing is sent when live members subscribe to any
    requested topic. `before_send` is called with the (topic, partition) pairs just before the
    request goes out.

    Raises:
        BrokerUnreachable: the cluster did not answer before anything was sent.
    """
    unlisted = [t.topic for t in topics if t.partitions is None]
    partitions, rows = _resolve(admin, topics, topic_metadata(admin, unlisted))
    try:
        live = live_group(admin, group)
    except GroupCallError as error:
        rows += [OffsetRow(topic, partition, SKIPPED, error.error, error.message, "not sent: reading the group failed")
                 for topic, partition in partitions]
        return DeleteOffsetsResult(group, rows, group_error=error.error, group_message=error.message)
    in_use = _subscribed_topics(live, {topic for topic, _ in partitions})
    if in_use and not force:
        refusal = _refusal(group, live, in_use)
        return DeleteOffsetsResult(group, rows + [
            OffsetRow(topic, partition, SKIPPED, SUBSCRIBED, note=f"not sent: {refusal}") if topic in in_use
            else OffsetRow(topic, partition, SKIPPED, note="not sent: the request named subscribed topics")
            for topic, partition in partitions], refusal=refusal)
    if before_send is not None:
        before_send(partitions)
    outcomes = delete_offsets(admin, group, partitions)
    rows += [_offset_row(outcome, outcome.topic in in_use, live) for outcome in outcomes]
    group_level = next((o for o in outcomes if o.group_level), None)
    return DeleteOffsetsResult(group, rows, group_error=group_level.error if group_level else None,
                               group_message=group_level.message if group_level else None)


@dataclass(frozen=True)
class DeleteGroupsResult:
    """What delete-groups did, one outcome per requested group."""

    outcomes: list[GroupOutcome]

    @property
    def ok(self) -> bool:
        return all(outcome.ok for outcome in self.outcomes)

    def report(self) -> list[str]:
        """Kafka's wording: one success line, or the failures then the groups that were deleted."""
        deleted = ", ".join(f"'{o.group}'" for o in self.outcomes if o.ok)
        if self.ok:
            return [f"Deletion of requested consumer groups ({deleted}) was successful."]
        lines = ["", "Error: Deletion of some consumer groups failed:"] + [
            f"* Group '{o.group}' could not be deleted due to: {_error_text(o.error, o.message)}"
            for o in self.outcomes if not o.ok]
        if deleted:
            lines += ["", f"These consumer groups were deleted successfully: {deleted}"]
        return lines


def run_delete_groups(admin: SnapshotAdminClient, groups: list[str],
                      before_send: Callable[[list[str]], None] | None = None) -> DeleteGroupsResult:
    """Delete the groups (DeleteGroups, one request per coordinator); the broker enforces emptiness.
    `before_send` is called with the groups just before the requests go out."""
    if before_send is not None:
        before_send(groups)
    return DeleteGroupsResult(delete_groups(admin, groups))


@dataclass(frozen=True)
class AuditContext:
    """Who asked, against which cluster: the same on every row of one command."""

    bootstrap_servers: str
    requested_by: str


def offset_intents(context: AuditContext, group: str, partitions: list[tuple[str, int]]) -> pa.Table:
    """The 'sending' rows of a delete-offsets request, one per partition (origin 'cli')."""
    return _audit_table([_audit_row(context, OFFSET_DELETE, group, topic, partition, SENDING, None,
                                    "OffsetDelete about to be sent; its outcome follows in a row naming this one")
                         for topic, partition in partitions])


def group_intents(context: AuditContext, groups: list[str]) -> pa.Table:
    """The 'sending' rows of a delete-groups request, one per group (origin 'cli')."""
    return _audit_table([_audit_row(context, DELETE_GROUPS, group, None, None, SENDING, None,
                                    "DeleteGroups about to be sent; its outcome follows in a row naming this one")
                         for group in groups])


def audit_offsets(context: AuditContext, result: DeleteOffsetsResult, intents: pa.Table | None = None) -> pa.Table:
    """The `cleanup_audit` rows of a delete-offsets run (origin 'cli'), each answer naming its intent."""
    intent_ids = _intent_ids(intents)
    return _audit_table([
        _audit_row(context, OFFSET_DELETE, result.group, row.topic, row.partition, row.outcome, row.error, row.detail,
                   intent_ids.get((result.group, row.topic, row.partition)) if row.outcome != SKIPPED else None)
        for row in result.rows])


def audit_groups(context: AuditContext, result: DeleteGroupsResult, intents: pa.Table | None = None) -> pa.Table:
    """The `cleanup_audit` rows of a delete-groups run (origin 'cli'), each answer naming its intent."""
    intent_ids = _intent_ids(intents)
    return _audit_table([
        _audit_row(context, DELETE_GROUPS, o.group, None, None, DELETED if o.ok else FAILED, o.error, o.message,
                   intent_ids.get((o.group, None, None)))
        for o in result.outcomes])


def _intent_ids(intents: pa.Table | None) -> dict[tuple, str]:
    if intents is None:
        return {}
    return {(row["group"], row["topic"], row["partition"]): row["audit_id"] for row in intents.to_pylist()}


def record_audit(lake: Lake, rows: pa.Table) -> None:
    """Append audit rows in one Delta commit (nothing when there are none)."""
    if rows.num_rows:
        lake.append("cleanup_audit", rows)


def _resolve(admin: SnapshotAdminClient, topics: list[TopicRequest],
             metadata: TopicMetadata) -> tuple[list[tuple[str, int]], list[OffsetRow]]:
    """The partitions to send, and a row for each topic named without partitions that the
    cluster metadata does not list (Kafka's tool does not send those either)."""
    partitions: list[tuple[str, int]] = []
    rows: list[OffsetRow] = []
    for request in topics:
        if request.partitions is not None:
            partitions += [(request.topic, partition) for partition in request.partitions]
        elif request.topic in metadata.errors:
            code = metadata.errors[request.topic]
            rows.append(OffsetRow(request.topic, None, SKIPPED, error_name(code),
                                  explain_error(admin, "Metadata", code, topic=request.topic),
                                  "not sent: the cluster metadata does not list this topic"))
        else:
            partitions += [(request.topic, partition) for partition in sorted(metadata.partitions[request.topic])]
    return list(dict.fromkeys(partitions)), rows


def _subscribed_topics(live: LiveGroupState, topics: set[str]) -> set[str]:
    """The requested topics live members subscribe to; all of them when that cannot be known."""
    if live.member_count == 0:
        return set()
    if live.subscribed_topics is None:
        return set(topics)
    return topics & live.subscribed_topics


def _refusal(group: str, live: LiveGroupState, topics: set[str]) -> str:
    names = ", ".join(f"'{topic}'" for topic in sorted(topics))
    why = (f"its {live.member_count} live member(s) subscribe to {names}" if live.subscribed_topics is not None
           else f"it has {live.member_count} live member(s) whose subscriptions cannot be read "
                f"({live.group_type} group, protocol type '{live.protocol_type}', state {live.state}), "
                f"so {names} may be in use")
    # Kafka would refuse these partitions one by one (GROUP_SUBSCRIBED_TO_TOPIC) and still delete
    # the other topics of the request; nothing is sent, so a request is all or nothing.
    return (f"Refusing to delete offsets of group '{group}': {why}. Deleting the offsets of a group "
            f"that is consuming would make it restart from auto.offset.reset, and Kafka answers "
            f"{SUBSCRIBED} (KIP-496) for a topic it knows is subscribed. Nothing was sent. "
            f"Leave these topics out, or add --force to send the request anyway.")


def _offset_row(outcome: PartitionOutcome, forced: bool, live: LiveGroupState) -> OffsetRow:
    note = (f"--force: sent although the group has {live.member_count} live member(s) that may consume this topic"
            if forced else None)
    if outcome.ok:
        # Kafka answers OffsetDelete without error for a partition the group never committed.
        if (outcome.topic, outcome.partition) not in live.committed_offsets:
            note = "; ".join(filter(None, (note, "the group had no committed offset here")))
        return OffsetRow(outcome.topic, outcome.partition, DELETED, note=note)
    return OffsetRow(outcome.topic, outcome.partition, FAILED, outcome.error, outcome.message, note)


def _error_text(error: str | None, message: str | None) -> str:
    if error and message and message != error:
        return f"{error}: {message}"
    return error or message or "unknown error"


def _audit_row(context: AuditContext, action: str, group: str, topic: str | None, partition: int | None,
               outcome: str, error: str | None, detail: str | None, intent_id: str | None = None) -> dict:
    return {"audit_id": uuid.uuid4().hex, "plan_id": None, "action_id": None, "origin": "cli", "action": action,
            "group": group, "topic": topic, "partition": partition, "outcome": outcome, "error": error,
            "detail": detail, "bootstrap_servers": context.bootstrap_servers,
            "requested_by": context.requested_by, "at": datetime.now(timezone.utc), "intent_id": intent_id}


def _audit_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLES["cleanup_audit"].schema)
