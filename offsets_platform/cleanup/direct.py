"""The direct cleanup commands, mirroring kafka-consumer-groups.sh --delete-offsets and --delete.

Unlike Kafka's tool, delete-offsets checks the group's live subscriptions itself before sending
anything: Kafka refuses OffsetDelete on a subscribed topic (GROUP_SUBSCRIBED_TO_TOPIC, KIP-496)
but some brokers speaking the protocol (noida-db) accept it and silently drop the offsets of a
group that is consuming. It also checks the requested topics and partitions against the cluster
metadata, for the same reason: noida-db answers OffsetDelete for an unknown topic or partition
with success where Kafka answers UNKNOWN_TOPIC_OR_PARTITION.

Output follows the Scala ConsumerGroupCommand of Kafka 2.x: the `%-30s %-15s %-15s` table with
"Not Provided" for a topic-level error, and the "Deletion of requested consumer groups (...)"
lines. A group-level OffsetDelete error is the one line `Error: Deletion of offsets failed due
to: ...` (KAFKA_SEMANTICS.md's reference; Kafka 2.7 prints its own sentence per error, then the
table). Where Kafka prints a Java exception (`org.apache.kafka.common.errors.
GroupNotEmptyException: The group is not empty.`) these print Kafka's error name instead
(`NON_EMPTY_GROUP: The group is not empty.`). Kafka 3.7+ (the Java tool) changed the widths and
prints "-" for a missing partition; the 2.x layout is the reference mirrored here.

Every outcome becomes one `cleanup_audit` row: 'deleted' and 'failed' for what the broker
answered, 'skipped' for what was not sent (refused here, or unknown to the cluster).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import kafka.errors as Errors
import pyarrow as pa

from offsets_platform.cleanup.kafka_calls import (
    GroupCallError, GroupOutcome, LiveGroupState, PartitionOutcome, TopicMetadata, delete_groups, delete_offsets,
    error_message, live_group, topic_metadata,
)
from offsets_platform.kafka.admin_calls import SnapshotAdminClient, error_name
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES

NOT_PROVIDED = "Not Provided"
TABLE_FORMAT = "%-30s %-15s %-15s"  # Kafka's ConsumerGroupCommand.deleteOffsets
OFFSET_DELETE, DELETE_GROUPS = "OffsetDelete", "DeleteGroups"
DELETED, FAILED, SKIPPED = "deleted", "failed", "skipped"
UNKNOWN_TOPIC = error_name(Errors.UnknownTopicOrPartitionError.errno)
SUBSCRIBED = error_name(Errors.GroupSubscribedToTopicError.errno)


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
    """What delete-offsets did: one row per partition or unknown topic, and why it stopped early.

    `group_error` is set when the broker refused the whole request (or the group could not be
    read); `refusal` when this command refused to send it.
    """

    group: str
    rows: list[OffsetRow]
    group_error: str | None = None
    refusal: str | None = None

    @property
    def ok(self) -> bool:
        return self.group_error is None and self.refusal is None and all(r.outcome == DELETED for r in self.rows)

    def report(self) -> list[str]:
        """The lines to print: one error line, or Kafka's table."""
        if self.refusal:
            return [f"Error: {self.refusal}"]
        if self.group_error:
            return [f"Error: Deletion of offsets failed due to: {self.group_error}"]
        ordered = sorted(self.rows, key=lambda row: (row.topic, -1 if row.partition is None else row.partition))
        return [TABLE_FORMAT % ("TOPIC", "PARTITION", "STATUS")] + [
            TABLE_FORMAT % (row.topic, NOT_PROVIDED if row.partition is None else row.partition, row.status)
            for row in ordered]


def run_delete_offsets(admin: SnapshotAdminClient, group: str, topics: list[TopicRequest],
                       force: bool = False) -> DeleteOffsetsResult:
    """Delete the group's committed offsets of the requested topics: all checks first, then one OffsetDelete.

    A topic without partitions means the partitions the group has committed offsets for; when it
    has none, every partition of the topic (as Kafka's tool does, so a rerun succeeds again).
    Without `force`, nothing is sent when live members subscribe to any requested topic.

    Raises:
        BrokerUnreachable: the cluster did not answer before anything was sent.
    """
    try:
        live = live_group(admin, group)
    except GroupCallError as error:
        rows = [OffsetRow(t.topic, p, SKIPPED, error.error, error.message, "not sent: reading the group failed")
                for t in topics for p in (t.partitions or (None,))]
        return DeleteOffsetsResult(group, rows, group_error=_error_text(error.error, error.message))
    partitions, rows = _resolve(topics, live, topic_metadata(admin, [t.topic for t in topics]))
    in_use = _subscribed_topics(live, {topic for topic, _ in partitions})
    if in_use and not force:
        refusal = _refusal(group, live, in_use)
        return DeleteOffsetsResult(group, rows + [
            OffsetRow(topic, partition, SKIPPED, SUBSCRIBED, note=f"not sent: {refusal}") if topic in in_use
            else OffsetRow(topic, partition, SKIPPED, note="not sent: the request named subscribed topics")
            for topic, partition in partitions], refusal=refusal)
    outcomes = delete_offsets(admin, group, partitions)
    rows += [_offset_row(outcome, outcome.topic in in_use, live) for outcome in outcomes]
    group_level = next((o for o in outcomes if o.group_level), None)
    return DeleteOffsetsResult(group, rows,
                               group_error=_error_text(group_level.error, group_level.message) if group_level else None)


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
        lines = ["Error: Deletion of some consumer groups failed:"] + [
            f"* Group '{o.group}' could not be deleted due to: {_error_text(o.error, o.message)}"
            for o in self.outcomes if not o.ok]
        if deleted:
            lines += ["", f"These consumer groups were deleted successfully: {deleted}"]
        return lines


def run_delete_groups(admin: SnapshotAdminClient, groups: list[str]) -> DeleteGroupsResult:
    """Delete the groups (DeleteGroups, one request per coordinator); the broker enforces emptiness."""
    return DeleteGroupsResult(delete_groups(admin, groups))


@dataclass(frozen=True)
class AuditContext:
    """Who asked, against which cluster, and when: the same on every row of one command."""

    bootstrap_servers: str
    requested_by: str
    at: datetime

    @classmethod
    def now(cls, bootstrap_servers: str, requested_by: str) -> "AuditContext":
        return cls(bootstrap_servers, requested_by, datetime.now(timezone.utc))


def audit_offsets(context: AuditContext, result: DeleteOffsetsResult) -> pa.Table:
    """The `cleanup_audit` rows of a delete-offsets run (origin 'cli')."""
    return _audit_table([
        _audit_row(context, OFFSET_DELETE, result.group, row.topic, row.partition, row.outcome, row.error, row.detail)
        for row in result.rows])


def audit_groups(context: AuditContext, result: DeleteGroupsResult) -> pa.Table:
    """The `cleanup_audit` rows of a delete-groups run (origin 'cli')."""
    return _audit_table([
        _audit_row(context, DELETE_GROUPS, o.group, None, None, DELETED if o.ok else FAILED, o.error, o.message)
        for o in result.outcomes])


def record_audit(lake: Lake, rows: pa.Table) -> None:
    """Append audit rows in one Delta commit (nothing when there are none)."""
    if rows.num_rows:
        lake.append("cleanup_audit", rows)


def _resolve(topics: list[TopicRequest], live: LiveGroupState,
             metadata: TopicMetadata) -> tuple[list[tuple[str, int]], list[OffsetRow]]:
    """The partitions to send, and rows for what cannot be sent (topics or partitions the cluster lacks)."""
    partitions: list[tuple[str, int]] = []
    rows: list[OffsetRow] = []
    unknown_partition = error_message(Errors.UnknownTopicOrPartitionError.errno)
    for request in topics:
        if request.topic in metadata.errors:
            code = metadata.errors[request.topic]
            rows += [OffsetRow(request.topic, p, SKIPPED, error_name(code), error_message(code),
                               "not sent: the cluster metadata has no such topic")
                     for p in (request.partitions or (None,))]
            continue
        existing = metadata.partitions[request.topic]
        wanted = request.partitions
        if wanted is None:
            wanted = sorted(p for t, p in live.committed_offsets if t == request.topic) or sorted(existing)
        for partition in wanted:
            if partition in existing:
                partitions.append((request.topic, partition))
            else:
                rows.append(OffsetRow(request.topic, partition, SKIPPED, UNKNOWN_TOPIC, unknown_partition,
                                      "not sent: the topic has no such partition"))
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
                f"(protocol type '{live.protocol_type}', state {live.state}), so {names} may be in use")
    return (f"Refusing to delete offsets of group '{group}': {why}. Kafka refuses this with "
            f"{SUBSCRIBED} (KIP-496) but some brokers do not, and deleting the offsets of a group "
            f"that is consuming makes it restart from auto.offset.reset. Nothing was sent. "
            f"Leave these topics out, or add --force to send the request anyway.")


def _offset_row(outcome: PartitionOutcome, forced: bool, live: LiveGroupState) -> OffsetRow:
    note = (f"--force: sent although the group has {live.member_count} live member(s) that may consume this topic"
            if forced else None)
    if outcome.ok:
        return OffsetRow(outcome.topic, outcome.partition, DELETED, note=note)
    return OffsetRow(outcome.topic, outcome.partition, FAILED, outcome.error, outcome.message, note)


def _error_text(error: str | None, message: str | None) -> str:
    if error and message and message != error:
        return f"{error}: {message}"
    return error or message or "unknown error"


def _audit_row(context: AuditContext, action: str, group: str, topic: str | None, partition: int | None,
               outcome: str, error: str | None, detail: str | None) -> dict:
    return {"audit_id": uuid.uuid4().hex, "plan_id": None, "action_id": None, "origin": "cli", "action": action,
            "group": group, "topic": topic, "partition": partition, "outcome": outcome, "error": error,
            "detail": detail, "bootstrap_servers": context.bootstrap_servers,
            "requested_by": context.requested_by, "at": context.at}


def _audit_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLES["cleanup_audit"].schema)
