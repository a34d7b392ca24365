"""kafka-python's admin client set up for snapshots and cleanup: bounded timeouts, raw results.

kafka-python 3.0.12 post-processes two responses in ways a snapshot cannot use: DescribeGroups
replaces each member's subscription and assignment bytes with its own parse (the raw bytes are
lost, and a parse failure is only logged), and DescribeConfigs drops each resource's error code.
`SnapshotAdminClient` overrides those two post-processing hooks.

kafka-python also caches each group's coordinator for the client's life and never looks it up
again: once the group's partition of `__consumer_offsets` has a new leader, every call about the
group goes to the old broker and gets NOT_COORDINATOR. `SnapshotAdminClient` does what Kafka's
Java admin client does instead (see COORDINATOR_ERRORS): the group calls the project makes
(DescribeGroups and the other describe APIs, OffsetFetch, DescribeShareGroupOffsets,
OffsetDelete, DeleteGroups) forget the coordinator of a group answered NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE and ask again after a fresh FindCoordinator, and ask a loading
coordinator again, for a bounded time. The hooks and the calls it wraps are private: the pin
matters.

kafka-python's blocking calls wait for their IO thread without any timeout of their own, and at
least one failure leaves them waiting forever: a request that cannot be encoded as the first one
on a new connection (measured with a group id that is not valid UTF-8). So every call the
snapshot makes has a deadline; past it the client is stopped, which fails the waiting call with
KafkaConnectionError and so ends the snapshot as unreachable.

Error policy: a call the broker answered with an error code, or that the client refused to send
for one group or topic, is one of CALL_ERRORS (a snapshot records it as a `snapshot_errors` row and
goes on); a lost connection or a timeout is one of CONNECTION_ERRORS, not per group: it ends the
snapshot (see offsets_platform.ingest.snapshot_rows).
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Iterator

import kafka.errors as Errors
from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import CoordinatorType

from offsets_platform.kafka.admin_group_messages import AlterShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest
from offsets_platform.kafka.errors import BrokerUnreachable, reachable_now
from offsets_platform.settings import KafkaConnection

# The connection itself failed: retrying group after group would only repeat the timeout.
CONNECTION_ERRORS = (Errors.KafkaConnectionError, Errors.KafkaTimeoutError, Errors.NodeNotReadyError)
# One call failed for one group or topic: the broker's error code, or input the client refused.
CALL_ERRORS = (Errors.KafkaError, ValueError)

# A group's coordinator moved or is loading. Kafka's admin client (4.3) answers a group call's
# NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE by unmapping the group, so that the next attempt
# sends FindCoordinator again, and COORDINATOR_LOAD_IN_PROGRESS by asking the same coordinator
# again (handleError of DescribeClassicGroupsHandler, DescribeConsumerGroupsHandler,
# DeleteGroupsHandler; handleGroupError of ListConsumerGroupOffsetsHandler and
# DeleteConsumerGroupOffsetsHandler; AdminApiDriver.onResponse -> retryLookup); FindCoordinator's
# own COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS are asked again too
# (CoordinatorStrategy.handleError). It waits retry.backoff.ms (100 ms) before each attempt,
# doubling up to retry.backoff.max.ms (1 s), until the call's timeout.
MOVED_COORDINATOR_ERRORS = (Errors.NotCoordinatorError, Errors.CoordinatorNotAvailableError)
COORDINATOR_ERRORS = (*MOVED_COORDINATOR_ERRORS, Errors.CoordinatorLoadInProgressError)
_MAX_RETRY_PAUSE_S = 1.0

class SnapshotAdminClient(KafkaAdminClient):
    """KafkaAdminClient whose DescribeGroups and DescribeConfigs results keep what a snapshot needs,
    and whose group calls follow a coordinator that moves.

    `describe_groups` returns {group_id: DescribedGroup} as the broker sent it (error_code,
    group_state, protocol_type, protocol_data, members with raw member_metadata and
    member_assignment bytes). `describe_configs` returns {(resource_type, name): ConfigResult}.

    Args:
        call_deadline_s: past this, a blocking call stops the client (see the module docstring).
        coordinator_retry_s: how long one group call keeps asking again while a group's
            coordinator moves or loads; then the last answer stands (an error row, a failed
            deletion). Keep it below `call_deadline_s` less two requests' time.
        coordinator_retry_budget_s: how long the client waits for coordinators over all its
            calls: a snapshot asks group by group, and a partition of `__consumer_offsets` that
            stays without a leader must not cost `coordinator_retry_s` for each of its groups.
        configs: kafka-python's KafkaAdminClient settings.
    """

    def __init__(self, *, call_deadline_s: float = 60.0, coordinator_retry_s: float = 20.0,
                 coordinator_retry_budget_s: float = 60.0, **configs):
        self.call_deadline_s = call_deadline_s
        self.coordinator_retry_s = coordinator_retry_s
        self._coordinator_budget_left_s = coordinator_retry_budget_s
        self.timed_out = False
        try:
            super().__init__(**configs)
        except BaseException:
            # kafka-python started its IO thread before bootstrapping; do not leave it behind.
            if hasattr(self, "_net"):
                self._closed = False
                self.close()
            raise

    def _describe_groups_process_response(self, response):
        return {group.group_id: group for group in response.groups}

    def _describe_configs_process_responses(self, responses, config_filter="modified"):
        results = {}
        for response in responses:
            for result in response.results:
                values = {config.name: config.value for config in result.configs}
                results[(int(result.resource_type), result.resource_name)] = ConfigResult(
                    result.error_code, result.error_message or None, values)
        return results

    def describe_typed_groups(self, request_class, group_ids: list[str]) -> dict:
        """One describe request per coordinator of the groups (ConsumerGroupDescribe,
        StreamsGroupDescribe or ShareGroupDescribe, from `admin_group_messages`), at the highest
        version both sides support; returns {group_id: DescribedGroup} as the broker sent it.

        kafka-python has no call for these APIs; this is its `describe_groups` with another
        request: the same coordinator lookup (FindCoordinator, cached) and the same connections.
        """
        return self._manager.run(self._async_describe_typed_groups, request_class, list(group_ids))

    async def _async_describe_typed_groups(self, request_class, group_ids: list[str]) -> dict:
        return await self._following_coordinators(
            group_ids, lambda groups: self._describe_typed_groups_once(request_class, groups), _described_error)

    async def _describe_typed_groups_once(self, request_class, group_ids: list[str]) -> dict:
        by_coordinator: dict[int, list[str]] = {}
        for group_id, node_id in (await self._find_coordinator_ids(group_ids)).items():
            by_coordinator.setdefault(node_id, []).append(group_id)
        described = {}
        for node_id, groups in by_coordinator.items():
            request = request_class(group_ids=groups, include_authorized_operations=False)
            response = await self._manager.send(request, node_id=node_id)
            described.update({group.group_id: group for group in response.groups})
        return described

    def describe_share_group_offsets(self, group_ids: list[str], topics: dict[str, list[int]] | None = None) -> dict:
        """DescribeShareGroupOffsets (KIP-932), one request per coordinator of the groups, as
        `describe_typed_groups` sends its requests; returns {group_id:
        DescribeShareGroupOffsetsResponseGroup} as the broker sent it.

        `topics` None asks for every share partition whose state is initialized for the group
        (GroupCoordinatorService.describeShareGroupAllOffsets); {topic: partitions} asks the share
        coordinator for these, whatever the group (start offset -1 where it keeps no state).
        """
        return self._manager.run(self._async_describe_share_group_offsets, list(group_ids), topics)

    async def _async_describe_share_group_offsets(self, group_ids: list[str],
                                                  topics: dict[str, list[int]] | None) -> dict:
        return await self._following_coordinators(
            group_ids, lambda groups: self._describe_share_group_offsets_once(groups, topics), _described_error)

    async def _describe_share_group_offsets_once(self, group_ids: list[str],
                                                 topics: dict[str, list[int]] | None) -> dict:
        group_type = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
        asked = None if topics is None else [
            group_type.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=list(partitions))
            for topic, partitions in topics.items()]
        by_coordinator: dict[int, list[str]] = {}
        for group_id, node_id in (await self._find_coordinator_ids(group_ids)).items():
            by_coordinator.setdefault(node_id, []).append(group_id)
        described = {}
        for node_id, groups in by_coordinator.items():
            request = DescribeShareGroupOffsetsRequest(groups=[group_type(group_id=group, topics=asked)
                                                               for group in groups])
            response = await self._manager.send(request, node_id=node_id)
            described.update({group.group_id: group for group in response.groups})
        return described

    def alter_share_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]):
        """AlterShareGroupOffsets (KIP-932) to the group's coordinator: the start offset of each
        (topic, partition); returns the AlterShareGroupOffsetsResponse as the broker sent it (a
        request-level ErrorCode, and one per partition). Asked again while the coordinator moves or
        loads, as the other group calls are."""
        return self._manager.run(self._async_alter_share_group_offsets, group_id, dict(offsets))

    async def _async_alter_share_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]):
        topic_type = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(topic_type.AlterShareGroupOffsetsRequestPartition(
                partition_index=partition, start_offset=offset))
        request = AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
            topic_type(topic_name=topic, partitions=partitions) for topic, partitions in by_topic.items()])

        async def send(groups: list[str]) -> dict:
            node_id = await self._find_coordinator_id(group_id)
            return {group_id: await self._manager.send(request, node_id=node_id)}

        answered = await self._following_coordinators([group_id], send, _altered_error)
        return answered[group_id]

    # kafka-python's group calls, asked again while a coordinator moves or loads. A call given
    # `group_coordinator_id` goes to that broker only, as its caller asked.

    async def _async_describe_groups(self, group_ids, group_coordinator_id=None):
        parent = super()._async_describe_groups
        if group_coordinator_id is not None:
            return await parent(group_ids, group_coordinator_id)
        return await self._following_coordinators(group_ids, parent, _described_error)

    async def _async_list_group_offsets(self, group_specs):
        parent = super()._async_list_group_offsets
        return await self._following_coordinators(
            list(group_specs), lambda groups: parent({group: group_specs[group] for group in groups}))

    async def _async_delete_group_offsets(self, group_id, partitions, group_coordinator_id=None):
        parent = super()._async_delete_group_offsets
        if group_coordinator_id is not None or not partitions:
            return await parent(group_id, partitions, group_coordinator_id)
        return await self._following_coordinators([group_id], lambda groups: parent(group_id, partitions))

    async def _async_alter_group_offsets(self, group_id, offsets, group_coordinator_id=None):
        parent = super()._async_alter_group_offsets
        if group_coordinator_id is not None or not offsets:
            return await parent(group_id, offsets, group_coordinator_id)
        return await self._following_coordinators([group_id], lambda groups: parent(group_id, offsets))

    async def _async_delete_groups(self, group_ids, group_coordinator_id=None):
        parent = super()._async_delete_groups
        if group_coordinator_id is not None:
            return await parent(group_ids, group_coordinator_id)
        return await self._following_coordinators(group_ids, parent, _deleted_error)

    async def _following_coordinators(self, group_ids: Iterable[str], call: Callable[[list[str]], Awaitable],
                                      answer_error: Callable[[object], type | None] | None = None):
        """`await call(groups)`, asked again, for the groups whose coordinator moved or is loading
        (COORDINATOR_ERRORS), while `coordinator_retry_s` since the call began and the client's
        budget last; then the last answer or error stands.

        `call` raises a coordinator error for all its groups (FindCoordinator's, or the answer of a
        call without per-group answers: OffsetFetch, OffsetDelete), or returns {group: answer}
        where `answer_error(answer)` is the error class of one group's answer (None: no error);
        without `answer_error`, its result is returned as it is.
        """
        started = time.monotonic()
        first_error_at = deadline = None
        pause = self.config["retry_backoff_ms"] / 1000
        pending, answers = list(dict.fromkeys(group_ids)), {}
        try:
            while True:
                try:
                    answered = await call(pending)
                except COORDINATOR_ERRORS as error:
                    raised, failed = error, dict.fromkeys(pending, type(error))
                else:
                    if answer_error is None:
                        return answered
                    answers.update(answered)
                    raised = None
                    errors = {group: answer_error(answered.get(group)) for group in pending}
                    failed = {group: error for group, error in errors.items() if _is_one_of(error, COORDINATOR_ERRORS)}
                    if not failed:
                        return answers
                # the next call about these groups, this one's next attempt or a later one, looks them up again
                self._forget_coordinators(group for group, error in failed.items()
                                          if _is_one_of(error, MOVED_COORDINATOR_ERRORS))
                now = time.monotonic()
                if first_error_at is None:
                    first_error_at = now
                    deadline = min(started + self.coordinator_retry_s, now + self._coordinator_budget_left_s)
                if now + pause > deadline:
                    if raised is not None:
                        raise raised
                    return answers
                await self._net.sleep(pause)
                pause = min(2 * pause, _MAX_RETRY_PAUSE_S)
                pending = list(failed)
        finally:
            if first_error_at is not None:
                spent = time.monotonic() - first_error_at
                self._coordinator_budget_left_s = max(0.0, self._coordinator_budget_left_s - spent)

    def _forget_coordinators(self, group_ids: Iterable[str]) -> None:
        # kafka-python 3.0.12 has no call that drops a cached coordinator (ClusterMetadata keeps
        # them in `_coordinators`, keyed by (CoordinatorType, key)); `_find_coordinator_ids` sends
        # FindCoordinator for every group not in it.
        coordinators = self._manager.cluster._coordinators
        for group_id in group_ids:
            coordinators.pop((CoordinatorType.GROUP, group_id), None)

    def coordinator_of(self, group_id: str) -> int | None:
        """The node id of the group's coordinator, as found by the last group call."""
        node_id = self._manager.cluster.get_coordinator(group_id)
        return node_id if isinstance(node_id, int) and node_id >= 0 else None

    def broker_ids(self) -> list[int]:
        """Node ids of the brokers in the cluster metadata, lowest first."""
        return sorted(broker.node_id for broker in self._manager.cluster.brokers())

    def _give_up(self) -> None:
        self.timed_out = True
        self._net.stop(timeout_ms=5000)

def _with_deadline(method):
    @functools.wraps(method)
    def bounded(self: SnapshotAdminClient, *args, **kwargs):
        timer = threading.Timer(self.call_deadline_s, self._give_up)
        timer.daemon = True
        timer.start()
        try:
            return method(self, *args, **kwargs)
        finally:
            timer.cancel()
    return bounded

for _name in ("list_groups", "describe_groups", "describe_typed_groups", "describe_share_group_offsets",
              "list_group_offsets", "describe_topics", "list_partition_offsets", "describe_configs",
              "delete_group_offsets", "delete_groups"):
    setattr(SnapshotAdminClient, _name, _with_deadline(getattr(SnapshotAdminClient, _name)))

def _is_one_of(error_type: type | None, classes: tuple[type, ...]) -> bool:
    return error_type is not None and issubclass(error_type, classes)


def _described_error(group) -> type | None:
    """The error class of one group of a describe answer (DescribeGroups and its twins)."""
    return Errors.for_code(group.error_code) if group is not None and group.error_code else None


def _altered_error(response) -> type | None:
    """The request-level error class of an AlterShareGroupOffsets answer (a moved or loading
    coordinator is answered there)."""
    return Errors.for_code(response.error_code) if response is not None and response.error_code else None


def _deleted_error(result: str | None) -> type | None:
    """The error class of one group of kafka-python's DeleteGroups answer ('OK' or the class name)."""
    return getattr(Errors, result, None) if result not in (None, "OK") else None


@dataclass(frozen=True)
class ConfigResult:
    """One DescribeConfigs resource: its error code (0 = none) and config name -> value."""

    error_code: int
    error_message: str | None
    values: dict[str, str | None]

@contextmanager
def open_admin(connection: KafkaConnection, timeout_s: float,
               request_timeout_s: float) -> Iterator[SnapshotAdminClient]:
    """A connected SnapshotAdminClient, closed on exit.

    Args:
        connection: the cluster and its security settings.
        timeout_s: how long bootstrapping (first metadata answer) may take.
        request_timeout_s: how long any single request may wait for its answer; one admin call
            (a few requests: coordinator lookup, then the call) may take three times that. A
            group call asks again for up to this long while the group's coordinator moves or
            loads, and the client waits so for at most three times this over all its calls.

    Raises:
        BrokerUnreachable: no bootstrap address accepts a connection (at once: the client would
            retry a refused one until `timeout_s`), or the cluster accepted TCP but did not answer
            Kafka within `timeout_s`.
    """
    reachable_now(connection.bootstrap_servers, "the admin client's connection")
    try:
        # A call is a coordinator lookup and a request; its retries for a moving coordinator
        # start within one more request's time, so that the call ends before its deadline.
        admin = SnapshotAdminClient(**connection.kafka_python_config(),
                                    call_deadline_s=3 * request_timeout_s,
                                    coordinator_retry_s=request_timeout_s,
                                    coordinator_retry_budget_s=3 * request_timeout_s,
                                    client_id="offsets-platform-snapshot",
                                    bootstrap_timeout_ms=int(timeout_s * 1000),
                                    request_timeout_ms=int(request_timeout_s * 1000))
    except CONNECTION_ERRORS as error:
        raise BrokerUnreachable(connection.bootstrap_servers,
                                f"no Kafka answer within {timeout_s:.0f} s ({error})") from error
    try:
        yield admin
    finally:
        admin.close()

# kafka-python keeps older names for four codes; these are the names in Kafka's Errors enum.
_KAFKA_NAMES = {-1: "UNKNOWN_SERVER_ERROR", 6: "NOT_LEADER_OR_FOLLOWER", 10: "MESSAGE_TOO_LARGE",
                17: "INVALID_TOPIC_EXCEPTION"}

def error_name(error: BaseException | int) -> str:
    """Kafka's name for a broker error (an error code or kafka-python's exception), e.g.
    "GROUP_AUTHORIZATION_FAILED"; for an error raised on this side, the exception's class name."""
    error_type = Errors.for_code(error) if isinstance(error, int) else type(error)
    if not issubclass(error_type, Errors.BrokerResponseError):
        return error_type.__name__
    code = error_type.errno
    if code in _KAFKA_NAMES:
        return _KAFKA_NAMES[code]
    if error_type.message == Errors.UnknownError.message:  # kafka-python's class for a code it does not know
        return f"ERROR_CODE_{code}"
    return error_type.message
