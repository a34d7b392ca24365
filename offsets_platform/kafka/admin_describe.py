"""Describe any group with the API of its type, as one shape: type, state, members, subscriptions.

Kafka 4 has four kinds of groups, each described by its own request to the group coordinator:
classic (DescribeGroups), consumer (KIP-848, ConsumerGroupDescribe), streams (KIP-1071,
StreamsGroupDescribe) and share (KIP-932, ShareGroupDescribe). Each request answers
GROUP_ID_NOT_FOUND for a group of another type ("Group g is not a classic group."; Kafka 4.3's
GroupMetadataManager), so "not found by DescribeGroups" only means "not a classic group": a
KIP-848 group with live members is not Dead. A group is Dead only when no API knows it.

The type comes from ListGroups v5 when the caller has it; otherwise each type is asked in turn
(classic, consumer, streams, share), the next one only for the groups the previous one did not
know. A broker without one of these APIs (IncompatibleBrokerVersion) has no group of that type.
A group whose type changes between two of those requests (a classic group converted to a
consumer group when a KIP-848 member joins it, or back) is still found, because it is asked
about in every type it is not found in.

What the members subscribe to, by type:
- classic: the consumer-protocol subscription bytes, decoded (other protocol types, e.g. Connect,
  carry their own payloads: unknown). Kafka sends empty bytes while the group is not Stable:
  unknown now, not an error.
- consumer: the broker's own record of each member's subscribed topic names and regex, and its
  assignment. A regex member's topic names are empty: it subscribes to the topics the regex
  matches, which includes at least those it is assigned, so those are added.
- share: the subscribed topic names and the assignment.
- streams: the topology's source topics (every member runs the same topology); a member's
  assignment is tasks, mapped here to the partitions of its subtopologies' source topics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import kafka.errors as Errors
import re2

from offsets_platform.codec.consumer_protocol import decode_assignment, decode_subscription
from offsets_platform.codec.reader import DecodeError
from offsets_platform.kafka.admin_calls import SnapshotAdminClient
from offsets_platform.kafka.admin_group_messages import (
    ConsumerGroupDescribeRequest, ShareGroupDescribeRequest, StreamsGroupDescribeRequest,
)

CLASSIC, CONSUMER, STREAMS, SHARE = "classic", "consumer", "streams", "share"
GROUP_TYPES = (CLASSIC, CONSUMER, STREAMS, SHARE)
OPERATIONS = {CLASSIC: "DescribeGroups", CONSUMER: "ConsumerGroupDescribe",
              STREAMS: "StreamsGroupDescribe", SHARE: "ShareGroupDescribe"}
DEAD = "Dead"
CONSUMER_PROTOCOL = "consumer"
_NOT_FOUND = Errors.GroupIdNotFoundError.errno
# RE2 logs every pattern it cannot compile on stderr; the caller handles the error itself.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@dataclass(frozen=True)
class MemberDescription:
    """One member. `subscribed_topics` None: not known (see the module docstring).

    `assigned_partitions`: [{"topic", "partitions"}] sorted, None when not known.
    `subscription_bytes` / `assignment_bytes`: a classic member's raw bytes (None otherwise).
    `decode_errors`: (operation, message) for classic bytes that did not decode.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    subscribed_topics: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    assigned_partitions: list[dict] | None
    subscription_bytes: bytes | None = None
    assignment_bytes: bytes | None = None
    decode_errors: tuple[tuple[str, str], ...] = ()

    def topics(self, candidates: Iterable[str] = ()) -> frozenset[str] | None:
        """Every topic this member subscribes to as far as known, None if unknown: its topic
        names, its assigned topics (a regex member's names are empty, but it subscribes to at
        least what it is assigned), and the `candidates` its regex matches (a topic the regex
        matches is subscribed even while another member holds it, or before it is assigned).

        The broker resolves a regex with RE2/J (TopicRegexResolver: `Pattern.compile`, then
        `matches()`, the whole topic name); RE2's syntax and matching are RE2/J's, where Python's
        `re` differs (POSIX classes such as `[[:digit:]]`, digits beyond ASCII, look-arounds). A
        regex RE2 cannot compile leaves the subscription unknown (the broker refuses such a regex
        when a member joins, Utils.throwIfRegularExpressionIsInvalid).
        """
        if self.subscribed_topics is None:
            return None
        topics = set(self.subscribed_topics) | {entry["topic"] for entry in self.assigned_partitions or []}
        if self.subscribed_topic_regex is not None:
            try:
                pattern = re2.compile(self.subscribed_topic_regex, _RE2_OPTIONS)
            except re2.error:
                return None
            topics |= {topic for topic in candidates if pattern.fullmatch(topic)}
        return frozenset(topics)


@dataclass(frozen=True)
class GroupDescription:
    """A group as the API of its type describes it; `group_type` None and state Dead when no API
    knows it. `error_code` non-zero: that API answered this error for the group (nothing else is
    known then but the type). `source_topics`: a streams group's topology topics (source and
    repartition source topics), None if not initialized or not a streams group; `input_topics`:
    of those, the source topics only (what Kafka's `kafka-streams-groups --all-input-topics` names)."""

    group: str
    group_type: str | None
    state: str
    protocol_type: str | None
    protocol: str | None
    members: tuple[MemberDescription, ...]
    source_topics: frozenset[str] | None = None
    input_topics: frozenset[str] | None = None
    error_code: int = 0
    error_message: str | None = None

    @property
    def exists(self) -> bool:
        return self.group_type is not None

    @property
    def operation(self) -> str:
        return OPERATIONS.get(self.group_type, "DescribeGroups")


def describe_groups(admin: SnapshotAdminClient, group_ids: list[str],
                    types: dict[str, str | None] | None = None) -> dict[str, GroupDescription]:
    """Every group of `group_ids`, described by the API of its type (see the module docstring).

    Args:
        admin: a connected client.
        group_ids: the groups.
        types: group -> type from ListGroups, asked first; the other types are asked after it
            for a group that API does not know (it may have been deleted or converted since).

    Raises:
        the client's errors (connection lost, coordinator lookup failed): nothing per group.
    """
    types = types or {}
    remaining = {group: _order(types.get(group)) for group in dict.fromkeys(group_ids)}
    described: dict[str, GroupDescription] = {}
    while remaining:
        by_type: dict[str, list[str]] = {}
        for group, order in remaining.items():
            by_type.setdefault(order[0], []).append(group)
        for group_type, groups in by_type.items():
            answers = _DESCRIBERS[group_type](admin, groups)
            for group in groups:
                answer = answers.get(group)
                if answer is None:  # not of this type: ask the next type
                    remaining[group] = remaining[group][1:]
                    if not remaining[group]:
                        del remaining[group]
                        described[group] = GroupDescription(group, None, DEAD, None, None, ())
                else:
                    del remaining[group]
                    described[group] = answer
    return {group: described[group] for group in dict.fromkeys(group_ids)}


def _order(first: str | None) -> list[str]:
    return ([first] if first in GROUP_TYPES else []) + [t for t in GROUP_TYPES if t != first]


def _send(admin: SnapshotAdminClient, request_class, groups: list[str]) -> dict:
    try:
        return admin.describe_typed_groups(request_class, groups)
    except Errors.IncompatibleBrokerVersion:
        return {}  # a broker without this API has no group of this type


def _found(group, group_id: str, group_type: str) -> GroupDescription | None:
    """None for GROUP_ID_NOT_FOUND (not a group of this type); an error description otherwise."""
    if group is None or group.error_code == _NOT_FOUND:
        return None
    return GroupDescription(group_id, group_type, group.group_state or "", None, None, (),
                            error_code=group.error_code, error_message=group.error_message)


def _describe_classic(admin: SnapshotAdminClient, groups: list[str]) -> dict[str, GroupDescription]:
    answers = {}
    for group_id, group in admin.describe_groups(groups).items():
        # DescribeGroups before v6 answers a group it does not know with state Dead and no error.
        if group.error_code == _NOT_FOUND or (not group.error_code and group.group_state == DEAD):
            continue
        if group.error_code:
            answers[group_id] = _found(group, group_id, CLASSIC)
            continue
        members = tuple(_classic_member(group_id, group.protocol_type, m) for m in group.members)
        answers[group_id] = GroupDescription(group_id, CLASSIC, group.group_state, group.protocol_type,
                                             group.protocol_data or None, members)
    return answers


def _classic_member(group_id: str, protocol_type: str, member) -> MemberDescription:
    subscription, assignment = bytes(member.member_metadata or b""), bytes(member.member_assignment or b"")
    topics, assigned, errors = None, None, []
    if protocol_type == CONSUMER_PROTOCOL:
        context = f"group {group_id!r} member {member.member_id!r}"
        if subscription:
            try:
                topics = tuple(decode_subscription(subscription, context)["topics"])
            except DecodeError as error:
                errors.append(("DecodeSubscription", str(error)))
        if assignment:
            try:
                decoded = decode_assignment(assignment, context)
                if decoded is not None:
                    assigned = [{"topic": topic, "partitions": sorted(partitions)}
                                for topic, partitions in sorted(decoded["partitions"].items())]
            except DecodeError as error:
                errors.append(("DecodeAssignment", str(error)))
    return MemberDescription(member.member_id, member.group_instance_id, member.client_id, member.client_host,
                             topics, None, assigned, subscription or None, assignment or None, tuple(errors))


def _describe_typed(request_class, group_type: str, describe_one):
    """A describer for one of the new group types: send its describe request, leave out the groups
    it does not know, keep error answers, and turn each answer into a GroupDescription."""
    def describe(admin: SnapshotAdminClient, groups: list[str]) -> dict[str, GroupDescription]:
        answers = {}
        for group_id, group in _send(admin, request_class, groups).items():
            found = _found(group, group_id, group_type)
            if found is not None:
                answers[group_id] = found if found.error_code else describe_one(group_id, group)
        return answers
    return describe


def _consumer_group(group_id: str, group) -> GroupDescription:
    members = tuple(MemberDescription(
        m.member_id, m.instance_id, m.client_id, m.client_host, tuple(sorted(m.subscribed_topic_names)),
        m.subscribed_topic_regex or None, _topic_partitions(m.assignment.topic_partitions)) for m in group.members)
    return GroupDescription(group_id, CONSUMER, group.group_state, CONSUMER_PROTOCOL, group.assignor_name or None,
                            members)


def _share_group(group_id: str, group) -> GroupDescription:
    members = tuple(MemberDescription(
        m.member_id, None, m.client_id, m.client_host, tuple(sorted(m.subscribed_topic_names)), None,
        _topic_partitions(m.assignment.topic_partitions)) for m in group.members)
    return GroupDescription(group_id, SHARE, group.group_state, SHARE, group.assignor_name or None, members)


def _streams_group(group_id: str, group) -> GroupDescription:
    # subtopology id -> the topics its tasks read (source and internal repartition topics)
    subtopologies = {}
    if group.topology is not None and group.topology.subtopologies is not None:
        subtopologies = {s.subtopology_id: sorted({*s.source_topics, *(t.name for t in s.repartition_source_topics)})
                         for s in group.topology.subtopologies}
    source = frozenset(t for topics in subtopologies.values() for t in topics) if subtopologies else None
    members = tuple(MemberDescription(
        m.member_id, m.instance_id, m.client_id, m.client_host,
        tuple(sorted(source)) if source is not None else None, None,
        _task_partitions(m.assignment.active_tasks, subtopologies) if source is not None else None)
        for m in group.members)
    inputs = frozenset(t for s in group.topology.subtopologies for t in s.source_topics) if subtopologies else None
    return GroupDescription(group_id, STREAMS, group.group_state, STREAMS, None, members, source, inputs)


def _topic_partitions(entries) -> list[dict]:
    merged: dict[str, set[int]] = {}
    for entry in entries:
        merged.setdefault(entry.topic_name, set()).update(entry.partitions)
    return [{"topic": topic, "partitions": sorted(partitions)} for topic, partitions in sorted(merged.items())]


def _task_partitions(tasks, subtopologies: dict[str, list[str]]) -> list[dict]:
    # Task (subtopology s, partition p) reads partition p of every topic subtopology s reads.
    merged: dict[str, set[int]] = {}
    for task in tasks:
        for topic in subtopologies.get(task.subtopology_id, ()):
            merged.setdefault(topic, set()).update(task.partitions)
    return [{"topic": topic, "partitions": sorted(partitions)} for topic, partitions in sorted(merged.items())]


_DESCRIBERS = {CLASSIC: _describe_classic,
               CONSUMER: _describe_typed(ConsumerGroupDescribeRequest, CONSUMER, _consumer_group),
               STREAMS: _describe_typed(StreamsGroupDescribeRequest, STREAMS, _streams_group),
               SHARE: _describe_typed(ShareGroupDescribeRequest, SHARE, _share_group)}
