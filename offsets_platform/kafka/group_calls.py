"""The Kafka calls a cleanup makes, as small functions with typed results.

- `live_group`: the group described with the API of its type (DescribeGroups for a classic
  group, ConsumerGroupDescribe for a KIP-848 group, StreamsGroupDescribe, ShareGroupDescribe; see
  `offsets_platform.kafka.admin_describe`) + OffsetFetch of all partitions (KIP-88), to know
  before deleting anything whether live members subscribe to a topic.
- `topic_metadata`: Metadata, for the partitions of a topic named without any (as Kafka's tool).
- `delete_offsets`: one OffsetDelete (KIP-496) for one group, sent to its coordinator.
- `delete_groups`: DeleteGroups (KIP-229), one request per coordinator.
- `commit_offsets`: OffsetCommit from outside the group, which applies an offset reset;
  `alter_share_offsets`: AlterShareGroupOffsets, which applies a share group's.
- `log_offsets`: ListOffsets (earliest, latest, by time), the log's facts an offset reset rests on.

The broker's answers come back as values, never as exceptions: a cleanup records every outcome
per partition or per group, including the ones the broker refused. A connection lost before the
broker answered a delete is an outcome too (the deletion may or may not have happened), while a
connection lost during the read-only `live_group` raises `BrokerUnreachable`.

Error names are Kafka's (`GROUP_SUBSCRIBED_TO_TOPIC`, `NON_EMPTY_GROUP`, ...), messages are Kafka's
own default message of the error (its `Errors` enum), as Kafka's tools print them. An
authorization error's message goes on with the ACL the request needs, for the principal the
client logs in as (offsets_platform.kafka.errors.refusal_message): what an operator adds.

The admin client is the project's `SnapshotAdminClient` (see `offsets_platform.kafka.admin_calls`):
each of these calls follows a group's coordinator to the broker it moved to, as Kafka's admin
client does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

import kafka.errors as Errors
from kafka import TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from offsets_platform.kafka.admin_calls import (
    CALL_ERRORS, CONNECTION_ERRORS, SnapshotAdminClient, error_name,
)
from offsets_platform.kafka.admin_describe import (
    DEAD, SHARE, STREAMS, GroupDescription, MemberDescription, describe_groups,
)
from offsets_platform.kafka.errors import BrokerUnreachable, refusal_message, sasl_principal

CONNECTION_LOST = "the connection was lost before the broker answered: the outcome is unknown"

# The coordinator is loading its partition of __consumer_offsets (a broker that just started),
# or the group moved to another broker. Kafka's admin client retries these answers of a describe
# (DescribeClassicGroupsHandler.handleError and its twins for the other group types: "the
# coordinator is still in the process of loading state. Will retry"; for the other two it looks
# the coordinator up again) until default.api.timeout.ms (60 s). The admin client here does the
# same within each call, for a bounded time (admin_calls.COORDINATOR_ERRORS), and forgets a moved
# coordinator, so that a later call looks it up again. `live_group`, which only reads, goes on
# asking for up to 30 s in all, then raises the last answer; a deletion reports it as its outcome.
RETRIABLE_GROUP_ERRORS = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"})
RETRY_FOR_S = 30.0



@dataclass(frozen=True)
class LiveGroupState:
    """A group as the broker reports it now.

    `state` is the state the API of its type reports ("Stable", "Empty", "Reconciling", ...;
    "Dead" for a group no API knows). `group_type` is "classic", "consumer", "streams" or
    "share" (None when Dead). `members` are every member, of any type, with what each subscribes
    to and is assigned. `subscribed_topics` is the union of the members' subscriptions: empty for
    a group without members, None when it cannot be known (a classic group whose protocol is not
    "consumer", or a member whose subscription is missing or does not decode).
    `share_start_offsets`: a share group's state in `__share_group_state`, which DeleteGroups
    deletes with the group: the start offset of each share partition whose state is initialized
    (None where the broker could not read it); empty for the other types. `source_topics` and
    `input_topics`: a streams group's topology topics, and of them the source topics only (None
    for the other types).
    """

    group: str
    state: str
    protocol_type: str
    member_count: int
    subscribed_topics: frozenset[str] | None
    committed_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    group_type: str | None = None
    members: tuple[MemberDescription, ...] = ()
    share_start_offsets: dict[tuple[str, int], int | None] = field(default_factory=dict)
    source_topics: frozenset[str] | None = None
    input_topics: frozenset[str] | None = None

    @property
    def exists(self) -> bool:
        return self.state != DEAD


@dataclass(frozen=True)
class PartitionOutcome:
    """What OffsetDelete did for one partition. `error` is None on success.

    `group_level` marks an error the broker gave for the whole request (GROUP_ID_NOT_FOUND,
    NON_EMPTY_GROUP, GROUP_AUTHORIZATION_FAILED, ...), repeated on every partition of it.
    """

    topic: str
    partition: int
    error: str | None
    message: str | None
    group_level: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class GroupOutcome:
    """What DeleteGroups did for one group. `error` is None on success."""

    group: str
    error: str | None
    message: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


class GroupCallError(Exception):
    """The broker answered a read about a group with an error (e.g. GROUP_AUTHORIZATION_FAILED)."""

    def __init__(self, group: str, error: str, message: str):
        self.group, self.error, self.message = group, error, message
        super().__init__(f"group {group!r}: {error}: {message}")


# Kafka's default message of the errors a cleanup meets (Errors in kafka-clients 4.3.1), where
# kafka-python's description is prose of its own; Kafka's tools print these.
KAFKA_MESSAGES = {
    Errors.UnknownTopicOrPartitionError.errno: "This server does not host this topic-partition.",
    Errors.CoordinatorLoadInProgressError.errno: "The coordinator is loading and hence can't process requests.",
    Errors.CoordinatorNotAvailableError.errno: "The coordinator is not available.",
    Errors.NotCoordinatorError.errno: "This is not the correct coordinator.",
    Errors.InvalidGroupIdError.errno: "The group id is invalid.",
    Errors.TopicAuthorizationFailedError.errno: "Topic authorization failed.",
    Errors.GroupAuthorizationFailedError.errno: "Group authorization failed.",
}


def error_message(error: BaseException | int | type) -> str:
    """Kafka's message of a broker error (a code, kafka-python's class or exception), e.g.
    "The group is not empty."; for an error raised on this side, the exception's own text."""
    error_type = Errors.for_code(error) if isinstance(error, int) else error if isinstance(error, type) else type(error)
    if issubclass(error_type, Errors.BrokerResponseError) and error_type.errno in KAFKA_MESSAGES:
        return KAFKA_MESSAGES[error_type.errno]
    if issubclass(error_type, Errors.BrokerResponseError) and error_type.description:
        return error_type.description
    return str(error)


def live_group(admin: SnapshotAdminClient, group: str, retry_for_s: float = RETRY_FOR_S) -> LiveGroupState:
    """The group's type, state, members' subscriptions and committed offsets, as the broker has them now.

    An answer that the coordinator is loading or has moved is asked again, backing off, for up to
    `retry_for_s`.

    Raises:
        GroupCallError: the describe call of the group's type, or OffsetFetch, answered with an
            error for this group (a retriable one still, after `retry_for_s`).
        BrokerUnreachable: the connection failed.
    """
    _require_sendable(group)
    deadline, pause = time.monotonic() + retry_for_s, 0.2
    while True:
        try:
            return _live_group_once(admin, group)
        except GroupCallError as error:
            if error.error not in RETRIABLE_GROUP_ERRORS or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 2.0)


def _live_group_once(admin: SnapshotAdminClient, group: str) -> LiveGroupState:
    try:
        described = describe_groups(admin, [group])[group]
        offsets = _committed_offsets(admin, group)
    except CONNECTION_ERRORS as error:
        raise _unreachable(admin, error) from error
    except CALL_ERRORS as error:
        # FindCoordinator, the describe call or OffsetFetch: each needs Describe on the group
        raise GroupCallError(group, error_name(error), explain_error(admin, "OffsetFetch", error, group=group)) from error
    if described.error_code:
        code = described.error_code
        raise GroupCallError(group, error_name(code), explain_error(
            admin, described.operation, code, described.error_message, group=group))
    if not described.exists:
        # No API knows the group: nothing to protect, and OffsetDelete will say GROUP_ID_NOT_FOUND.
        return LiveGroupState(group, DEAD, "", 0, frozenset(), offsets)
    share = _share_start_offsets(admin, group) if described.group_type == SHARE else {}
    return LiveGroupState(group, described.state, described.protocol_type or "", len(described.members),
                          _subscribed_topics(described, offsets), offsets, described.group_type, described.members,
                          share, described.source_topics, described.input_topics)


def _committed_offsets(admin: SnapshotAdminClient, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch for all partitions, KIP-88)."""
    fetched = admin.list_group_offsets({group: None}).get(group, {})
    return {(tp.topic, tp.partition): meta.offset for tp, meta in fetched.items() if meta.offset >= 0}


def _share_start_offsets(admin: SnapshotAdminClient, group: str) -> dict[tuple[str, int], int | None]:
    """A share group's share-partition start offsets: DescribeShareGroupOffsets of every share
    partition whose state is initialized (GroupCoordinatorService.describeShareGroupAllOffsets).
    OffsetFetch knows none of them, yet DeleteGroups deletes them with the group
    (GroupCoordinatorService.deleteShareGroups)."""
    try:
        answer = admin.describe_share_group_offsets([group]).get(group)
    except CONNECTION_ERRORS as error:
        raise _unreachable(admin, error) from error
    except CALL_ERRORS as error:
        raise GroupCallError(group, error_name(error), explain_error(
            admin, "DescribeShareGroupOffsets", error, group=group)) from error
    if answer is None:
        return {}
    if answer.error_code:
        raise GroupCallError(group, error_name(answer.error_code), explain_error(
            admin, "DescribeShareGroupOffsets", answer.error_code, answer.error_message, group=group))
    return {(topic.topic_name, partition.partition_index): None if partition.error_code else partition.start_offset
            for topic in answer.topics for partition in topic.partitions}


def _subscribed_topics(described: GroupDescription,
                       offsets: dict[tuple[str, int], int]) -> frozenset[str] | None:
    if not described.members:
        return frozenset()
    if described.group_type == STREAMS:
        # As StreamsGroup.isSubscribedToTopic, which decides OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC:
        # a streams group that is not Empty subscribes to its topology's source and repartition
        # source topics (StreamsTopology.sourceTopicMap), and to nothing without a topology. Its
        # other committed topics (of an older topology, or committed before it became a streams
        # group) are not subscribed: Kafka deletes their offsets.
        return described.source_topics or frozenset()
    topics: set[str] = set()
    committed = {topic for topic, _ in offsets}
    for member in described.members:
        member_topics = member.topics(committed)
        if member_topics is None:
            return None  # unknown, not "none": e.g. Kafka leaves a classic member's bytes out while it rebalances
        topics |= member_topics
    return frozenset(topics)


@dataclass(frozen=True)
class TopicMetadata:
    """Requested topics as the cluster metadata has them: partition ids, or the error code."""

    partitions: dict[str, frozenset[int]]
    errors: dict[str, int]


def topic_metadata(admin: SnapshotAdminClient, topics: Iterable[str]) -> TopicMetadata:
    """The partitions of each topic (one Metadata request); an unknown topic is an error entry.

    Raises:
        BrokerUnreachable: the connection failed.
    """
    names = sorted(set(topics))
    if not names:
        return TopicMetadata({}, {})
    try:
        described = admin.describe_topics(names)
    except CONNECTION_ERRORS as error:
        raise _unreachable(admin, error) from error
    partitions = {topic["name"]: frozenset(p["partition_index"] for p in topic["partitions"])
                  for topic in described if topic["error_code"] == 0}
    errors = {topic["name"]: topic["error_code"] for topic in described if topic["error_code"]}
    # A topic the answer left out is as unknown as one it named with an error.
    errors.update({name: Errors.UnknownTopicOrPartitionError.errno
                   for name in names if name not in partitions and name not in errors})
    return TopicMetadata(partitions, errors)


def delete_offsets(admin: SnapshotAdminClient, group: str,
                   partitions: Iterable[tuple[str, int]]) -> list[PartitionOutcome]:
    """Send one OffsetDelete for `group` (to its coordinator) and return one outcome per partition.

    A group-level error (the whole request refused, the coordinator not found, or the connection
    lost before the answer) is returned on every partition with `group_level=True`.
    """
    requested = list(dict.fromkeys(partitions))
    if not requested:
        return []
    if not _sendable(group):
        return _on_every_partition(requested, Errors.InvalidGroupIdError.errno, _NOT_UTF8)
    try:
        answered = admin.delete_group_offsets(group, [TopicPartition(t, p) for t, p in requested])
    except CONNECTION_ERRORS as error:
        return _on_every_partition(requested, error, CONNECTION_LOST)
    except CALL_ERRORS as error:
        return _on_every_partition(requested, error, explain_error(admin, "OffsetDelete", error, group=group))
    return _partition_outcomes(admin, "OffsetDelete", group, requested, answered)


def commit_offsets(admin: SnapshotAdminClient, group: str,
                   offsets: dict[tuple[str, int], int]) -> list[PartitionOutcome]:
    """Commit `offsets` for `group` from outside it, in one OffsetCommit to its coordinator, as
    Kafka's `Admin.alterConsumerGroupOffsets` does (generation -1, no member id: the coordinator
    takes it only from a group without members), and return one outcome per partition.

    A group-level error (the coordinator not found, or the connection lost before the answer) is
    returned on every partition with `group_level=True`.
    """
    requested = list(offsets)
    if not requested:
        return []
    if not _sendable(group):
        return _on_every_partition(requested, Errors.InvalidGroupIdError.errno, _NOT_UTF8)
    commit = {TopicPartition(topic, partition): OffsetAndMetadata(offset, "", None)
              for (topic, partition), offset in offsets.items()}
    try:
        answered = admin.alter_group_offsets(group, commit)
    except CONNECTION_ERRORS as error:
        return _on_every_partition(requested, error, CONNECTION_LOST)
    except CALL_ERRORS as error:
        return _on_every_partition(requested, error, explain_error(admin, "OffsetCommit", error, group=group))
    return _partition_outcomes(admin, "OffsetCommit", group, requested, answered)


def _partition_outcomes(admin: SnapshotAdminClient, request: str, group: str, requested: list[tuple[str, int]],
                        answered: dict) -> list[PartitionOutcome]:
    """One outcome per requested partition from the broker's error per TopicPartition."""
    outcomes = []
    for topic, partition in requested:
        error_type = answered.get(TopicPartition(topic, partition))
        if error_type is None:  # a broker must answer every partition it was asked about
            outcomes.append(PartitionOutcome(topic, partition, "MISSING_FROM_RESPONSE",
                                             "the broker's answer did not mention this partition"))
        elif error_type is Errors.NoError:
            outcomes.append(PartitionOutcome(topic, partition, None, None))
        else:
            outcomes.append(PartitionOutcome(topic, partition, error_name(error_type.errno),
                                             explain_error(admin, request, error_type.errno,
                                                           group=group, topic=topic)))
    return outcomes


def alter_share_offsets(admin: SnapshotAdminClient, group: str,
                        offsets: dict[tuple[str, int], int]) -> list[PartitionOutcome]:
    """Set `group`'s share-partition start offsets in one AlterShareGroupOffsets (KIP-932) to its
    coordinator, and return one outcome per partition; a request-level error (NON_EMPTY_GROUP, the
    group not a share group, the connection lost before the answer) on every partition."""
    requested = list(offsets)
    if not requested:
        return []
    if not _sendable(group):
        return _on_every_partition(requested, Errors.InvalidGroupIdError.errno, _NOT_UTF8)
    try:
        response = admin.alter_share_group_offsets(group, offsets)
    except CONNECTION_ERRORS as error:
        return _on_every_partition(requested, error, CONNECTION_LOST)
    except CALL_ERRORS as error:
        return _on_every_partition(requested, error,
                                   explain_error(admin, "AlterShareGroupOffsets", error, group=group))
    if response.error_code:
        return _on_every_partition(requested, response.error_code, explain_error(
            admin, "AlterShareGroupOffsets", response.error_code, response.error_message, group=group))
    answered = {TopicPartition(topic.topic_name, p.partition_index): Errors.for_code(p.error_code)
                for topic in response.responses for p in topic.partitions}
    return _partition_outcomes(admin, "AlterShareGroupOffsets", group, requested, answered)


@dataclass(frozen=True)
class LogOffsets:
    """A partition's log start and end, and the first offset at or after a time (None: no record
    that late, or no time asked)."""

    log_start: int
    log_end: int
    at_time: int | None = None


def log_offsets(admin: SnapshotAdminClient, partitions: list[tuple[str, int]],
                at_ms: int | None = None) -> dict[tuple[str, int], LogOffsets]:
    """ListOffsets EARLIEST and LATEST of `partitions`, and by timestamp when `at_ms` is given,
    READ_UNCOMMITTED as Kafka's tool asks (each request goes to the partition's leader).

    Raises:
        BrokerUnreachable: the connection failed.
        KafkaError: the broker refused a partition (kafka-python raises the first such error).
    """
    tps = [TopicPartition(topic, partition) for topic, partition in partitions]
    if not tps:
        return {}
    try:
        earliest = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
        latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
        by_time = admin.list_partition_offsets({tp: at_ms for tp in tps}) if at_ms is not None else {}
    except CONNECTION_ERRORS as error:
        raise _unreachable(admin, error) from error
    # ListOffsets by timestamp answers -1 where no record is that late
    return {(tp.topic, tp.partition): LogOffsets(earliest[tp].offset, latest[tp].offset,
                                                  by_time[tp].offset if tp in by_time and by_time[tp].offset >= 0
                                                  else None)
            for tp in tps}


def delete_groups(admin: SnapshotAdminClient, groups: Iterable[str]) -> list[GroupOutcome]:
    """Send DeleteGroups, one request per coordinator, and return one outcome per group (input order).

    If finding the coordinators fails for any group (kafka-python looks them all up before sending
    anything), each group is sent on its own so that one group's error does not hide the others'.
    """
    requested = list(dict.fromkeys(groups))
    invalid = {group for group in requested if not _sendable(group)}
    sendable = [group for group in requested if group not in invalid]
    answers: dict[str, GroupOutcome] = {
        group: GroupOutcome(group, error_name(Errors.InvalidGroupIdError.errno), _NOT_UTF8) for group in invalid}
    if sendable:
        try:
            answers.update(_delete_batch(admin, sendable))
        except CALL_ERRORS:
            for group in sendable:
                answers.update(_delete_one(admin, group))
    return [answers[group] for group in requested]


def _delete_batch(admin: SnapshotAdminClient, groups: list[str]) -> dict[str, GroupOutcome]:
    try:
        answered = admin.delete_groups(groups)
    except CONNECTION_ERRORS as error:
        return {group: GroupOutcome(group, error_name(error), CONNECTION_LOST) for group in groups}
    outcomes = {}
    for group in groups:
        # kafka-python reports each group as 'OK' or the name of its error class.
        result = answered.get(group)
        if result == "OK":
            outcomes[group] = GroupOutcome(group, None, None)
        elif result is None:
            outcomes[group] = GroupOutcome(group, "MISSING_FROM_RESPONSE",
                                           "the broker's answer did not mention this group")
        else:
            error_type = getattr(Errors, result, None)
            code = getattr(error_type, "errno", None)
            outcomes[group] = (GroupOutcome(group, error_name(code), explain_error(admin, "DeleteGroups", code, group=group))
                               if isinstance(code, int) else GroupOutcome(group, result, result))
    return outcomes


def _delete_one(admin: SnapshotAdminClient, group: str) -> dict[str, GroupOutcome]:
    try:
        return _delete_batch(admin, [group])
    except CALL_ERRORS as error:
        return {group: GroupOutcome(group, error_name(error), explain_error(admin, "DeleteGroups", error, group=group))}


_NOT_UTF8 = "not sent: the group id is not valid UTF-8"


def explain_error(admin: SnapshotAdminClient, request: str, error: BaseException | int,
                  kafka_message: str | None = None, **about: str | None) -> str:
    """Kafka's message of the error `request` got (the broker's own, else Kafka's default); for an
    authorization error, followed by the ACL the request needs for the principal `admin` logs in as
    (`about`: the group, topic and resources the request was about; kafka.errors.refusal_message)."""
    message = kafka_message or error_message(error)
    principal = sasl_principal(admin.config.get("security_protocol"), admin.config.get("sasl_plain_username"))
    return refusal_message(request, error_name(error), message, principal=principal, **about) or message


def _sendable(name: str) -> bool:
    # kafka-python hangs on a name it cannot encode (see admin_calls), so it is never sent.
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _require_sendable(group: str) -> None:
    if not _sendable(group):
        raise GroupCallError(group, error_name(Errors.InvalidGroupIdError.errno), _NOT_UTF8)


def _on_every_partition(partitions: list[tuple[str, int]], error: BaseException | int,
                        message: str | None = None) -> list[PartitionOutcome]:
    name, text = error_name(error), message or error_message(error)
    return [PartitionOutcome(topic, partition, name, text, group_level=True) for topic, partition in partitions]


def _unreachable(admin: SnapshotAdminClient, error: BaseException) -> BrokerUnreachable:
    servers = admin.config["bootstrap_servers"]
    address = servers if isinstance(servers, str) else ",".join(servers)
    return BrokerUnreachable(address, f"{type(error).__name__}: {error}")
