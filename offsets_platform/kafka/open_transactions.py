"""Records of `__consumer_offsets` past the last stable offset: transactions still open.

A read_committed consumer stops at the last stable offset (LSO), the first record of the oldest
open transaction. Kafka's coordinator never expires an offset while a transactional commit of it
is pending, so ingest also looks at [LSO, high watermark) with read_uncommitted. Records there
belong to open transactions or wait behind one; all are reported as possibly pending, the safe
side for "will this offset expire".

The answer is all of that range or BrokerUnreachable, never part of it: a pending commit left out
is an offset the models would let expire while Kafka keeps it. Every Kafka call here raises that
error, which names the address and what to check. A refused connection fails at once, and a
broker lost while reading fails as soon as librdkafka reports every broker down, not at the end
of the timeout.
"""

from __future__ import annotations

import time

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from offsets_platform.kafka.errors import BrokerUnreachable, consumer_refusal, reachable_now, sasl_principal
from offsets_platform.kafka.offsets_topic import RAW_SCHEMA, messages_to_arrow
from offsets_platform.settings import KafkaConnection

STEP = "the open-transaction check"
# The consumer's group.id: required by the client, never joined nor committed to.
CHECK_GROUP = "offsets-platform-open-transactions"
# Client-wide errors after which waiting longer cannot give the answer: librdkafka keeps
# retrying them (or, for fatal ones, has given up) and would only run out the timeout.
_LOST = {KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION}
_REFUSED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}


class _Lost(Exception):
    """The check cannot complete; the message says why."""


class _Refused(Exception):
    """The broker refused the check for lack of an ACL (TOPIC_ or GROUP_AUTHORIZATION_FAILED)."""


def read_past_stable_offsets(connection: KafkaConnection, stable_end: dict[int, int],
                             timeout_s: float = 15.0) -> pa.Table:
    """Every record between each partition's LSO (`stable_end`) and its high watermark.

    Raises:
        BrokerUnreachable: the cluster refused the connection, was lost, or did not give every
            partition's records within `timeout_s` (all of them, for all the calls).
        NotAuthorized: the principal may not read the topic or describe the consumer's group
            (CHECK_GROUP); the message names the ACL.
    """
    bootstrap = connection.bootstrap_servers
    reachable_now(bootstrap, STEP)
    deadline = time.monotonic() + timeout_s
    client_errors: list[KafkaError] = []  # librdkafka's client-wide errors, delivered during consume()
    config = connection.confluent_config()
    config.update({"group.id": CHECK_GROUP, "enable.auto.commit": False,
                   "isolation.level": "read_uncommitted", "enable.partition.eof": True,
                   "error_cb": client_errors.append})
    try:
        consumer = Consumer(config)
    except KafkaException as error:
        raise BrokerUnreachable(bootstrap, f"{STEP}: no client ({error})") from error
    try:
        return _read(consumer, connection.offsets_topic, stable_end, deadline, client_errors, timeout_s)
    except _Refused as refused:
        error = refused.args[0]
        raise consumer_refusal(bootstrap, sasl_principal(connection.security_protocol, connection.sasl_username),
                               error.name(), error.str(), connection.offsets_topic, CHECK_GROUP) from None
    except KafkaException as error:
        raise BrokerUnreachable(bootstrap, f"{STEP}: {error}") from error
    except _Lost as lost:
        raise BrokerUnreachable(bootstrap, f"{STEP}: {lost}") from None
    finally:
        try:
            consumer.close()
        except KafkaException:
            pass  # the answer, or the error being raised, is complete without a clean close


def _read(consumer: Consumer, topic: str, stable_end: dict[int, int], deadline: float,
          client_errors: list[KafkaError], timeout_s: float) -> pa.Table:
    ends = {}
    for partition, lso in stable_end.items():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Lost(f"no high watermarks of {topic} within {timeout_s:.0f} s")
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=remaining)
        if high > lso:
            ends[partition] = high
    if not ends:
        return RAW_SCHEMA.empty_table()
    consumer.assign([TopicPartition(topic, p, stable_end[p]) for p in sorted(ends)])
    tables, pending = [], set(ends)
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Lost(f"{len(pending)} of {len(ends)} partitions of {topic} were not read up to their "
                        f"high watermark within {timeout_s:.0f} s")
        messages = consumer.consume(num_messages=10_000, timeout=min(1.0, remaining))
        lost = [error for error in client_errors if error.code() in _LOST or error.fatal()]
        if lost:
            raise _Lost(str(lost[0]))
        records = []
        for message in messages:
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                pending.discard(message.partition())
            elif error is not None and error.code() in _REFUSED:
                raise _Refused(error)
            elif error is not None:
                raise _Lost(f"partition {message.partition()} of {topic}: {error}")
            elif message.offset() < ends[message.partition()]:
                records.append(message)
                if message.offset() + 1 >= ends[message.partition()]:
                    pending.discard(message.partition())
        if records:
            tables.append(messages_to_arrow(records))
    return pa.concat_tables(tables) if tables else RAW_SCHEMA.empty_table()
