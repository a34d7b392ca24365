"""Offset reset plans: Kafka's `--reset-offsets`, resolved against the broker, stored for approval.

A reset plan is a cleanup plan (plans.py: immutable, approved with four-eyes, applied by
apply.py) whose actions are `RESET_OFFSET` (an OffsetCommit) or, for a share group,
`RESET_SHARE_OFFSET` (AlterShareGroupOffsets): one per partition, with the new offset resolved when
the plan is made (reset_targets.py for the rules) and the facts it rests on: where the group is
(its committed offset; a share group's share-partition start offset), the log's start and end,
whether the offset was clamped to them, and how many messages the group reads again or skips.
Apply commits exactly that number; it never resolves "latest" or a time again, and it skips a
partition where the group moved since the plan.

Every kind of group Kafka resets, as the tool of its kind does: `kafka-consumer-groups` for
classic, consumer (KIP-848) and standalone groups, `kafka-streams-groups` for streams groups
(`--topic` and `--all-topics` here are its `--input-topic` and `--all-input-topics`), and
`kafka-share-groups` for share groups (which takes only `--to-earliest`, `--to-latest` and
`--to-datetime` in Kafka 4.3). Each
resets a group only while it is inactive (Empty, or Dead: a group Kafka does not know, such as one
only committed to from outside), and the coordinator takes a reset only from outside a group
without members: an OffsetCommit with generation or member epoch -1 (`ClassicGroup`,
`ConsumerGroup` and `StreamsGroup.validateOffsetCommit`, UNKNOWN_MEMBER_ID otherwise), an
AlterShareGroupOffsets to an Empty share group (`GroupMetadataManager.alterShareGroupOffsets`,
NON_EMPTY_GROUP otherwise). A plan for a group with members is refused in the words of Kafka's
tool, before anyone approves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from offsets_platform.kafka import group_calls
from offsets_platform.cleanup.direct import TopicRequest, parse_topic_argument
from offsets_platform.cleanup.plans import (
    DEFAULT_VALID_HOURS, RESET_ACTIONS, RESET_OFFSET, RESET_SHARE_OFFSET, CleanupPlan, PlannedAction, PlanError, new_plan,
)
from offsets_platform.cleanup.reset_targets import (
    BY_DURATION, BY_TIME, FROM_FILE, SHIFT_BY, SPECIFIERS, TO_DATETIME, TO_EARLIEST, TO_LATEST, TO_OFFSET,
    PartitionFacts, ResetSpec, ResetSpecError, ResetTarget, parse_datetime_ms, parse_duration, parse_reset_file,
    target_of,
)
from offsets_platform.kafka.admin_calls import CALL_ERRORS, SnapshotAdminClient, error_name
from offsets_platform.kafka.admin_describe import DEAD, SHARE, STREAMS

INACTIVE_STATES = ("Empty", DEAD)
# the specifiers Kafka 4.3's kafka-share-groups --reset-offsets takes (ShareGroupCommandOptions:
# allResetOffsetScenarioOpts; later versions add --to-current, --to-offset and --from-file)
SHARE_SPECIFIERS = (TO_EARLIEST, TO_LATEST, TO_DATETIME)
# what each reset action shows beside its new offset: a title and its key in the facts
FACT_COLUMNS = (("CURRENT-OFFSET", "current_offset"), ("LOG-START", "log_start_offset"),
                ("LOG-END", "log_end_offset"), ("READ-AGAIN", "messages_read_again"),
                ("SKIPPED", "messages_skipped"), ("CLAMPED-TO", "clamped_to"))
# Kafka's --dry-run columns, then those facts: the head of `reset_rows`
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", *(title for title, _ in FACT_COLUMNS))


@dataclass(frozen=True)
class ResetRequest:
    """What the operator asked: one group, which partitions, one specifier.

    `topics` empty with `all_topics` False is allowed only with --from-file (its partitions)."""

    group: str
    spec: ResetSpec
    topics: tuple[TopicRequest, ...] = ()
    all_topics: bool = False
    file_offsets: dict[tuple[str, int], int] | None = None  # this group's lines of --from-file
    # a group the cluster does not know may be given offsets (as Kafka's tool does) only when asked:
    # otherwise a misspelt name would make a new group instead of failing
    allow_new_group: bool = False


def reset_request(group: str, kind: str, value: str | None, topics: list, all_topics: bool,
                  file_text: str | None = None, allow_new_group: bool = False) -> ResetRequest:
    """A ResetRequest from what the command line or Dagster's config gives: the specifier's name
    (`SPECIFIERS`, as Kafka's options without the dashes) and its value as typed (N for to-offset and
    shift-by, a time for to-datetime, a duration for by-duration; none for the others), the topics
    as --topic takes them (`T` or `T:P,P`, or TopicRequest), and the CSV text of --from-file.

    Raises:
        ResetSpecError: a value Kafka's tool would refuse, or neither topics nor --all-topics (but
            with --from-file, whose lines name the partitions).
    """
    if kind not in SPECIFIERS:
        raise ResetSpecError(f"unknown specifier {kind!r}: one of {', '.join(SPECIFIERS)}")
    needs_value = kind in (TO_OFFSET, SHIFT_BY, TO_DATETIME, BY_DURATION)
    if needs_value and value is None:
        raise ResetSpecError(f"--{kind} needs a value")
    if kind in (TO_OFFSET, SHIFT_BY):
        try:
            spec = ResetSpec(kind, int(value), value)
        except ValueError:
            raise ResetSpecError(f"--{kind} {value!r}: not a whole number") from None
    elif kind == TO_DATETIME:
        spec = ResetSpec(kind, parse_datetime_ms(value), value)
    elif kind == BY_DURATION:
        spec = ResetSpec(kind, parse_duration(value) // timedelta(milliseconds=1), value)
    else:
        spec = ResetSpec(kind, None, "" if kind != FROM_FILE else (value or "the file"))
    file_offsets = None
    if kind == FROM_FILE:
        if file_text is None:
            raise ResetSpecError("--from-file needs the CSV's lines")
        file_offsets = parse_reset_file(file_text, [group]).get(group)
    elif not topics and not all_topics:
        raise ResetSpecError("one of the reset scopes should be defined: --all-topics, --topic")
    try:
        scope = tuple(t if isinstance(t, TopicRequest) else parse_topic_argument(t) for t in topics)
    except ValueError as error:
        raise ResetSpecError(str(error)) from None
    return ResetRequest(group, spec, scope, all_topics, file_offsets, allow_new_group)


def build_reset_plan(admin: SnapshotAdminClient, request: ResetRequest, created_by: str, *,
                     valid_hours: int = DEFAULT_VALID_HOURS, now: datetime | None = None) -> CleanupPlan:
    """Resolve `request` against the broker now and return the plan (not stored: save_plan does).

    Raises:
        ResetSpecError: the request names what the cluster does not have: a group it does not know
            (unless `allow_new_group`), an unknown topic or partition, a group absent from the file,
            a topic that is not part of a streams group.
        PlanError: Kafka would refuse the reset (a group with members, --shift-by without a
            committed offset, a specifier Kafka 4.3's kafka-share-groups lacks for a share group);
            the message says which.
        GroupCallError: the broker refused to describe the group.
        BrokerUnreachable: the connection failed.
    """
    now = now or datetime.now(timezone.utc)
    live = group_calls.live_group(admin, request.group)
    if not live.exists and not live.committed_offsets and not request.allow_new_group:
        raise ResetSpecError(f"--group {request.group}: the cluster knows no such group; to give a new group its "
                             "first offsets, as Kafka's tool would, ask for it (--allow-new-group)")
    check_resettable(live, request.spec)
    current = current_offsets(live)
    partitions = _partitions(admin, request, live, current)
    at_ms = _time_ms(request.spec, now)
    try:
        logs = group_calls.log_offsets(admin, partitions, at_ms)
    except CALL_ERRORS as error:
        raise PlanError(f"ListOffsets of {len(partitions)} partitions failed: {error_name(error)}: "
                        f"{group_calls.error_message(error)}") from None
    actions = []
    for topic, partition in partitions:
        log = logs[(topic, partition)]
        facts = PartitionFacts(log.log_start, log.log_end, current.get((topic, partition)), log.at_time)
        try:
            target = target_of(request.spec, facts, (request.file_offsets or {}).get((topic, partition)))
        except ResetSpecError as error:
            raise PlanError(f"{error}: {topic}-{partition} of {request.group}") from None
        actions.append(_reset_action(request, live, topic, partition, facts, target, at_ms))
    return new_plan(actions, created_by, valid_hours, now)


def current_offsets(live: group_calls.LiveGroupState) -> dict[tuple[str, int], int]:
    """Where the group is on each partition, as the reset of its kind reads it: a share group's
    share-partition start offsets (`ShareGroupCommand` reads DescribeShareGroupOffsets); a streams
    group's committed offsets on its topology's topics (`StreamsGroupCommand.getCommittedOffsets`);
    any other group's committed offsets."""
    if live.group_type == SHARE:
        return {tp: offset for tp, offset in live.share_start_offsets.items() if offset is not None and offset >= 0}
    if live.group_type == STREAMS:
        return {tp: offset for tp, offset in live.committed_offsets.items() if tp[0] in (live.source_topics or ())}
    return dict(live.committed_offsets)


def check_resettable(live: group_calls.LiveGroupState, spec: ResetSpec) -> None:
    """Kafka's tools reset only an inactive group (Empty or Dead), each refusing in its own words.

    Raises:
        PlanError: the group has members or is not inactive, or a share group was asked a
            specifier Kafka 4.3's kafka-share-groups lacks.
    """
    inactive = live.state in INACTIVE_STATES and not live.member_count
    if live.group_type == SHARE:
        if not inactive:
            raise PlanError(f"Share group '{live.group}' is not empty.")  # ShareGroupCommand.resetOffsets
        if spec.kind not in SHARE_SPECIFIERS:
            raise PlanError(f"{live.group} is a share group: Kafka 4.3's kafka-share-groups --reset-offsets has no "
                            f"--{spec.kind}; it takes --{', --'.join(SHARE_SPECIFIERS)}")
    elif not inactive:
        # the words of ConsumerGroupCommand.resetOffsets and StreamsGroupCommand.resetOffsets
        raise PlanError(f"Assignments can only be reset if the group '{live.group}' is inactive, but the current "
                        f"state is {live.state}.")


def _partitions(admin: SnapshotAdminClient, request: ResetRequest, live: group_calls.LiveGroupState,
                current: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    """The partitions to reset, sorted: the file's (--from-file); with --all-topics those the group
    is on (a streams group: on its topology's source topics, as --all-input-topics); or those named
    (--topic), each checked to exist as Kafka's tools check (and, for a streams group, to hold an
    offset of the group, as `StreamsGroupCommand.filterExistingGroupTopics` checks)."""
    if request.spec.kind == FROM_FILE:
        if request.file_offsets is None:
            raise ResetSpecError(f"No reset plan for group {request.group} found.")  # Kafka's words
        wanted = sorted(request.file_offsets)
    elif request.all_topics:
        if live.group_type == STREAMS:
            return sorted(tp for tp in live.committed_offsets if tp[0] in (live.input_topics or ()))
        return sorted(current)
    else:
        wanted = [(t.topic, p) for t in request.topics for p in (t.partitions or ())]
    named = {t.topic for t in request.topics if not t.partitions} if request.spec.kind != FROM_FILE else set()
    metadata = group_calls.topic_metadata(admin, {topic for topic, _ in wanted} | named)
    if metadata.errors:
        unknown = ", ".join(sorted(metadata.errors))
        raise ResetSpecError(f"--topic: unknown topic {unknown}: "
                             f"{group_calls.error_message(next(iter(metadata.errors.values())))}")
    missing = [f"{topic}-{partition}" for topic, partition in wanted if partition not in metadata.partitions[topic]]
    if missing:
        raise ResetSpecError(f'--topic: The partitions "{",".join(missing)}" do not exist')  # Kafka's words
    wanted = sorted(set(wanted) | {(topic, partition) for topic in named for partition in metadata.partitions[topic]})
    if live.group_type == STREAMS and request.spec.kind != FROM_FILE \
            and not all(tp in live.committed_offsets for tp in wanted):
        raise ResetSpecError(f"--topic: One or more topics are not part of the group '{live.group}'.")  # Kafka's
    return wanted


def _time_ms(spec: ResetSpec, now: datetime) -> int | None:
    """The time ListOffsets looks up: the given one, or now minus the duration (at planning)."""
    if spec.kind == TO_DATETIME:
        return int(spec.value)
    if spec.kind == BY_DURATION:
        return int(now.timestamp() * 1000) - int(spec.value)
    return None


def _reset_action(request: ResetRequest, live: group_calls.LiveGroupState, topic: str, partition: int,
                  facts: PartitionFacts, target: ResetTarget, at_ms: int | None) -> PlannedAction:
    read_again, skipped = target.messages_read_again(facts), target.messages_skipped(facts)
    if facts.current is None:
        reason = f"reset {request.spec.describe()}: no offset there now; the group starts at {target.target}"
    elif read_again:
        reason = f"reset {request.spec.describe()}: the group reads {read_again} messages again"
    elif skipped:
        reason = f"reset {request.spec.describe()}: the group skips {skipped} messages"
    else:
        reason = f"reset {request.spec.describe()}: the group reads on from where it is"
    action = RESET_SHARE_OFFSET if live.group_type == SHARE else RESET_OFFSET
    return PlannedAction(action, request.group, topic, partition, reason, facts={
        "specifier": request.spec.describe(),
        "group_state": live.state,
        "group_type": live.group_type,
        "member_count": live.member_count,
        # the committed offset; a share group's share-partition start offset
        "current_offset": facts.current,
        "target_offset": target.target,
        "requested_offset": target.requested if target.clamped_to else None,
        "clamped_to": target.clamped_to,
        "log_start_offset": facts.log_start,
        "log_end_offset": facts.log_end,
        "messages_read_again": read_again,
        "messages_skipped": skipped,
        "timestamp_ms": at_ms if request.spec.kind in BY_TIME else None,
    })


def reset_rows(actions: list[PlannedAction]) -> list[tuple[str, ...]]:
    """The resets among `actions` as RESET_COLUMNS, as text ("-" for a fact not known): what the
    command line prints as a table and the Dagster run shows as markdown."""
    return [(a.group, a.topic, str(a.partition), str(a.facts["target_offset"]))
            + tuple("-" if a.facts.get(key) is None else str(a.facts[key]) for _, key in FACT_COLUMNS)
            for a in actions if a.action in RESET_ACTIONS]


def reset_cost(actions: list[PlannedAction]) -> str:
    """What the resets among `actions` cost the group: the messages it reads again and skips."""
    resets = [a for a in actions if a.action in RESET_ACTIONS]
    read_again = sum(a.facts.get("messages_read_again") or 0 for a in resets)
    skipped = sum(a.facts.get("messages_skipped") or 0 for a in resets)
    unknown = sum(a.facts.get("current_offset") is None for a in resets)
    return (f"the reset makes the group read {read_again:,} messages again and skip {skipped:,}"
            + (f"; {unknown} partition{'s' if unknown != 1 else ''} {'have' if unknown != 1 else 'has'} no "
               "offset now (where the group starts there today depends on its auto.offset.reset)"
               if unknown else ""))
