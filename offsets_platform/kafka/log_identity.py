"""Which log a lake reads: the cluster's id and the topic id of its offsets topic.

Offsets alone do not say which log they belong to. A cluster rebuilt at the same address, or a
topic deleted and created again under the same name, starts its offsets at 0 again, and a lake
resuming from its saved positions would skip those records. Kafka gives each cluster an id
(`cluster.id`, fixed when its storage is formatted) and each topic an id (KIP-516, a UUID chosen
when the topic is created), and both come back in DescribeCluster and DescribeTopics answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from offsets_platform.kafka.errors import BrokerUnreachable, not_authorized, reachable_now, sasl_principal
from offsets_platform.settings import KafkaConnection

STEP = "reading the cluster id and the topic id"


@dataclass(frozen=True)
class LogIdentity:
    """The cluster id and the topic id of the log a lake reads."""

    cluster_id: str
    topic_id: str

    def describe(self) -> str:
        return f"cluster {self.cluster_id}, topic id {self.topic_id}"


def read_log_identity(connection: KafkaConnection, timeout_s: float = 15.0) -> LogIdentity:
    """The identity of the connection's offsets topic and of its cluster.

    Raises:
        BrokerUnreachable: the cluster refused the connection, did not answer within `timeout_s`,
            or does not have the topic.
        NotAuthorized: the principal may not describe the topic; the message names the ACL.
    """
    bootstrap = connection.bootstrap_servers
    reachable_now(bootstrap, STEP)
    admin = AdminClient({**connection.confluent_config(), "log_level": 3})
    deadline = time.monotonic() + timeout_s
    try:
        cluster = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s)
        while True:
            try:
                topic_id = _topic_id(admin, connection.offsets_topic, timeout_s)
                break
            except KafkaException as error:
                # A topic created a moment ago is not in every broker's metadata yet.
                if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    except KafkaException as error:
        # Refused Describe on the topic: the ACL named is Read, which the reading of the log that
        # follows needs (Fetch) and which allows Describe as well.
        refusal = not_authorized(bootstrap, sasl_principal(connection.security_protocol, connection.sasl_username),
                                 "Fetch", error.args[0].name(), error.args[0].str(), topic=connection.offsets_topic)
        if refusal is not None:
            raise refusal from error
        raise BrokerUnreachable(bootstrap, f"{STEP} of {connection.offsets_topic}: {error.args[0]}") from error
    except TimeoutError as error:  # concurrent.futures' timeout: the cluster never answered
        raise BrokerUnreachable(bootstrap, f"{STEP}: no answer within {timeout_s:.0f} s") from error
    # Written as Kafka writes a Uuid (kafka-topics --describe): URL-safe base64; the client's
    # str() uses the standard alphabet.
    return LogIdentity(cluster_id=cluster.cluster_id, topic_id=str(topic_id).replace("+", "-").replace("/", "_"))


def _topic_id(admin: AdminClient, topic: str, timeout_s: float):
    (described,) = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s).values()
    return described.result(timeout=timeout_s).topic_id
