"""Errors that tell an operator which address failed and what to check, or which ACL is missing."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass


class BrokerUnreachable(RuntimeError):
    """The cluster did not answer; the message names the address and what to check."""

    def __init__(self, bootstrap_servers: str, detail: str):
        self.bootstrap_servers = bootstrap_servers
        super().__init__(
            f"Kafka at {bootstrap_servers} did not answer: {detail}. Check that the broker is "
            "running and listening on that host and port, that this machine can reach it "
            "(firewall, DNS), and that the security protocol and credentials match the "
            "listener (OFFSETS_PLATFORM_BOOTSTRAP_SERVERS / OFFSETS_PLATFORM_SECURITY_PROTOCOL)."
        )


def wait_until_reachable(bootstrap_servers: str, timeout_s: float = 10.0) -> None:
    """Return once a TCP connection to any bootstrap address succeeds.

    Raises:
        BrokerUnreachable: no address accepted a connection within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        failure = _connection_failure(bootstrap_servers)
        if failure is None:
            return
        if time.monotonic() >= deadline:
            raise BrokerUnreachable(bootstrap_servers, f"no connection within {timeout_s:.0f} s ({failure})")
        time.sleep(0.2)


def reachable_now(bootstrap_servers: str, step: str) -> None:
    """Return if any bootstrap address accepts a TCP connection now: one attempt each, so a
    refused connection fails at once (librdkafka would retry it until its own timeout).

    Raises:
        BrokerUnreachable: no address accepted a connection; the message names `step`.
    """
    failure = _connection_failure(bootstrap_servers)
    if failure is not None:
        raise BrokerUnreachable(bootstrap_servers, f"{step}: no connection ({failure})")


def _connection_failure(bootstrap_servers: str) -> str | None:
    """None once one address accepts a TCP connection, else why the last one did not."""
    failure = "no address given"
    for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=1.0):
                return None
        except (OSError, ValueError) as error:
            failure = f"{address}: {error}"
    return failure


# What Kafka 4.3 checks before it answers each request this project sends (KafkaApis.handle*
# and ConfigHelper.handleDescribeConfigsRequest), by the resource type an authorization error
# names: the operation an ACL must allow. StandardAuthorizer lets an ALLOW of Read, Write, Delete
# or Alter stand for Describe (StandardAuthorizerData.IMPLIES_DESCRIBE), so Delete on a group also
# passes the FindCoordinator check (Describe on the group) that precedes every group request.
_ACL_NEEDED = {
    ("FindCoordinator", "Group"): "Describe",  # getCoordinator
    ("DescribeGroups", "Group"): "Describe",  # handleDescribeGroupsRequest
    ("ConsumerGroupDescribe", "Group"): "Describe",  # handleConsumerGroupDescribe
    ("ConsumerGroupDescribe", "Topic"): "Describe",  # ... and every topic assigned to a member
    ("StreamsGroupDescribe", "Group"): "Describe",  # handleStreamsGroupDescribe
    ("StreamsGroupDescribe", "Topic"): "Describe",  # ... and every topic of its topology
    ("ShareGroupDescribe", "Group"): "Describe",  # handleShareGroupDescribe
    ("ShareGroupDescribe", "Topic"): "Describe",  # ... and every topic assigned to a member
    ("DescribeShareGroupOffsets", "Group"): "Describe",  # handleDescribeShareGroupOffsetsRequest
    ("DescribeShareGroupOffsets", "Topic"): "Describe",
    ("OffsetFetch", "Group"): "Describe",  # handleOffsetFetchRequest
    ("OffsetFetch", "Topic"): "Describe",
    ("OffsetDelete", "Group"): "Delete",  # handleOffsetDeleteRequest (KIP-496)
    ("OffsetDelete", "Topic"): "Read",
    ("DeleteGroups", "Group"): "Delete",  # handleDeleteGroupsRequest (KIP-229)
    ("Metadata", "Topic"): "Describe",  # handleTopicMetadataRequest
    ("ListOffsets", "Topic"): "Describe",  # handleListOffsetRequest
    ("Fetch", "Topic"): "Read",  # handleFetchRequest
    ("DescribeConfigs", "Topic"): "DescribeConfigs",  # ConfigHelper.handleDescribeConfigsRequest
    ("DescribeConfigs", "Cluster"): "DescribeConfigs",  # a broker's configs
}
AUTHORIZATION_ERRORS = {"GROUP_AUTHORIZATION_FAILED": "Group", "TOPIC_AUTHORIZATION_FAILED": "Topic",
                        "CLUSTER_AUTHORIZATION_FAILED": "Cluster"}
CLUSTER_NAME = "kafka-cluster"  # the one cluster resource ACLs name
_ACL_OPTION = {"Group": "--group", "Topic": "--topic", "Cluster": "--cluster"}


@dataclass(frozen=True)
class MissingAcl:
    """The ACL an operator adds so that a refused request goes through.

    `resource_name` None: Kafka's answer does not say which resource (a KIP-848 group's describe
    refused for one of its topics); `resources` then says which ones are meant.
    """

    request: str
    operation: str
    resource_type: str
    resource_name: str | None
    resources: str | None = None

    def describe(self, principal: str | None = None) -> str:
        """One sentence: which ACL, for whom, and the kafka-acls command that adds it."""
        who = principal or "the principal this client logs in as"
        if self.resource_name is None:
            return (f"{self.request} needs an ACL that allows {who} {self.operation} on {self.resources}; "
                    f"Kafka does not say which one is missing")
        target = f"{self.resource_type} '{self.resource_name}'"
        option = _ACL_OPTION[self.resource_type]
        command = (f"kafka-acls --bootstrap-server HOST:PORT --add --allow-principal {principal or 'User:NAME'} "
                   f"--operation {self.operation} {option}" + ("" if option == "--cluster" else f" {self.resource_name}"))
        return f"{self.request} needs an ACL that allows {who} {self.operation} on {target} ({command})"


def missing_acl(request: str, error: str, *, group: str | None = None, topic: str | None = None,
                resources: str | None = None) -> MissingAcl | None:
    """The ACL a request refused with `error` needs, or None when `error` is no authorization error
    of `request`.

    Args:
        request: the Kafka API, as Kafka names it (OffsetDelete, ConsumerGroupDescribe, ...).
        error: Kafka's error name (GROUP_AUTHORIZATION_FAILED, ...).
        group, topic: the group and the topic the request was about, as far as known; the one of
            the refused resource's type is the ACL's resource (the cluster's name is implied).
        resources: which resources are meant when Kafka does not say which one it refused; by
            default, for a topic refused in a request about a group (a KIP-848 group's describe
            refused for one of its topics, KafkaApis.handleConsumerGroupDescribe), the group's topics.
    """
    resource_type = AUTHORIZATION_ERRORS.get(error)
    operation = _ACL_NEEDED.get((request, resource_type))
    if resource_type is None or operation is None:
        return None
    name = {"Group": group, "Topic": topic, "Cluster": CLUSTER_NAME}[resource_type]
    if name is None and resources is None:
        resources = (f"every topic of group '{group}' (assigned to one of its members, or in a streams "
                     "group's topology)" if resource_type == "Topic" and group is not None
                     else f"the {resource_type.lower()}s concerned")
    return MissingAcl(request, operation, resource_type, name, resources)


def refusal_message(request: str, error: str, kafka_message: str | None, *, group: str | None = None,
                    topic: str | None = None, principal: str | None = None, resources: str | None = None) -> str | None:
    """Kafka's message of an authorization error followed by the ACL it needs, e.g. "Group
    authorization failed. OffsetDelete needs an ACL that allows User:monitor Delete on Group 'g'
    (kafka-acls ...)."; None when `error` is no authorization error of `request`."""
    acl = missing_acl(request, error, group=group, topic=topic, resources=resources)
    if acl is None:
        return None
    return f"{(kafka_message or error).rstrip('.')}. {acl.describe(principal)}."


def sasl_principal(security_protocol: str | None, username: str | None) -> str | None:
    """The principal ACLs name for a SASL login: User:<name> (Kafka's DefaultKafkaPrincipalBuilder);
    None without SASL, where the principal is a TLS certificate's name or ANONYMOUS."""
    if username and (security_protocol or "").upper().startswith("SASL"):
        return f"User:{username}"
    return None


class NotAuthorized(RuntimeError):
    """The cluster refused a request for lack of an ACL; the message names the ACL to add."""

    def __init__(self, bootstrap_servers: str, message: str):
        self.bootstrap_servers = bootstrap_servers
        super().__init__(f"Kafka at {bootstrap_servers} refused: {message}")


def not_authorized(bootstrap_servers: str, principal: str | None, request: str, error: str,
                   kafka_message: str | None, **about: str | None) -> NotAuthorized | None:
    """NotAuthorized naming the ACL `request` needs, when `error` (Kafka's error name) is an
    authorization error of it; None otherwise. `about`: the group or topic, as for missing_acl."""
    message = refusal_message(request, error, kafka_message, principal=principal, **about)
    return NotAuthorized(bootstrap_servers, message) if message else None


def consumer_refusal(bootstrap_servers: str, principal: str | None, error: str, kafka_message: str | None,
                     topic: str, group: str) -> NotAuthorized | None:
    """NotAuthorized for an authorization error a consumer reading `topic` by assign() met: Fetch
    needs Read on the topic, and librdkafka looks up the coordinator of its `group.id` even
    without joining the group (FindCoordinator: Describe on the group). None for other errors."""
    request = "FindCoordinator" if error == "GROUP_AUTHORIZATION_FAILED" else "Fetch"
    return not_authorized(bootstrap_servers, principal, request, error, kafka_message, topic=topic, group=group)
