"""kafka-python's admin client set up for snapshots and cleanup: bounded timeouts, raw results.

kafka-python 3.0.12 post-processes two responses in ways a snapshot cannot use: DescribeGroups
replaces each member's subscription and assignment bytes with its own parse (the raw bytes are
lost, and a parse failure is only logged), and DescribeConfigs drops each resource's error code.
`SnapshotAdminClient` overrides those two post-processing hooks and nothing else, so routing,
coordinator lookup and retries stay kafka-python's. The hooks are private: the pin matters.

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
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import kafka.errors as Errors
from kafka.admin import KafkaAdminClient

from offsets_platform.kafka.errors import BrokerUnreachable
from offsets_platform.settings import KafkaConnection

# The connection itself failed: retrying group after group would only repeat the timeout.
CONNECTION_ERRORS = (Errors.KafkaConnectionError, Errors.KafkaTimeoutError, Errors.NodeNotReadyError)
# One call failed for one group or topic: the broker's error code, or input the client refused.
CALL_ERRORS = (Errors.KafkaError, ValueError)

class SnapshotAdminClient(KafkaAdminClient):
    """KafkaAdminClient whose DescribeGroups and DescribeConfigs results keep what a snapshot needs.

    `describe_groups` returns {group_id: DescribedGroup} as the broker sent it (error_code,
    group_state, protocol_type, protocol_data, members with raw member_metadata and
    member_assignment bytes). `describe_configs` returns {(resource_type, name): ConfigResult}.
    """

    def __init__(self, *, call_deadline_s: float = 60.0, **configs):
        self.call_deadline_s = call_deadline_s
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
        by_coordinator: dict[int, list[str]] = {}
        for group_id, node_id in (await self._find_coordinator_ids(group_ids)).items():
            by_coordinator.setdefault(node_id, []).append(group_id)
        described = {}
        for node_id, groups in by_coordinator.items():
            request = request_class(group_ids=groups, include_authorized_operations=False)
            response = await self._manager.send(request, node_id=node_id)
            described.update({group.group_id: group for group in response.groups})
        return described

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

for _name in ("list_groups", "describe_groups", "describe_typed_groups", "list_group_offsets", "describe_topics",
              "list_partition_offsets", "describe_configs", "delete_group_offsets", "delete_groups"):
    setattr(SnapshotAdminClient, _name, _with_deadline(getattr(SnapshotAdminClient, _name)))

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
            (a few requests: coordinator lookup, then the call) may take three times that.

    Raises:
        BrokerUnreachable: the cluster accepted TCP but did not answer Kafka within `timeout_s`.
    """
    try:
        admin = SnapshotAdminClient(**connection.kafka_python_config(),
                                    call_deadline_s=3 * request_timeout_s,
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
