"""Reading `__consumer_offsets` (or a topic of the same layout) with confluent-kafka, in Arrow batches."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from offsets_platform.kafka.errors import (
    BrokerUnreachable, consumer_refusal, not_authorized, sasl_principal, wait_until_reachable,
)
from offsets_platform.settings import KafkaConnection
# Records asked of librdkafka per consume() call; several calls make one yielded batch.
CONSUME_CHUNK = 100_000
# How long one consume() call waits. It returns once it has CONSUME_CHUNK records or events, or
# when this has passed: at the end of a read, with fewer left (a refresh minutes after the last, a
# partition whose last offset is a transaction marker, which only its end-of-partition event
# reports), each read waited the whole of it. With 1 s, the demo's ingest of no new records took
# 1.0 s. A large read fills its chunks long before it.
CONSUME_WAIT_S = 0.1
# How long the broker may hold a fetch that finds no record (librdkafka's fetch.wait.max.ms, 500 ms
# by default). A partition whose last offset is a transaction marker reports its end only in the
# answer to such a fetch, so each read of no new records waited for it. A fetch that finds
# records is answered at once, so a large read does not notice.
FETCH_WAIT_MAX_MS = 100
# The most one fetch response brings (librdkafka's fetch.max.bytes): what librdkafka holds is
# about queued.min.messages plus one such response, whatever the topic's size.
FETCH_MAX_BYTES = 4 * 1024 * 1024

# The consumer's group.id: required by the client, never joined nor committed to (see _client).
INGEST_GROUP = "offsets-platform-ingest"

LEADER_MOVING = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                 KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION}

RAW_SCHEMA = pa.schema(
    [
        pa.field("source_partition", pa.int32(), nullable=False),
        pa.field("source_offset", pa.int64(), nullable=False),
        pa.field("source_timestamp", pa.timestamp("ms", tz="UTC")),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
    ]
)


@dataclass(frozen=True)
class ReadPlan:
    """Where a read starts and stops: partition -> next offset to read, and the end to reach;
    and where each partition's log starts."""

    start: dict[int, int]
    end: dict[int, int]
    log_start: dict[int, int]

    @property
    def records_behind(self) -> int:
        return sum(max(0, self.end[p] - self.start.get(p, 0)) for p in self.end)


class OffsetsTopicReader:
    """Reads committed records of the connection's offsets topic (`__consumer_offsets` unless
    configured otherwise) from given positions up to the end seen at start.

    Records of open or aborted transactions are never returned (isolation.level=read_committed),
    so a transactional offset commit counts only once its COMMIT marker is written.
    """

    def __init__(self, connection: KafkaConnection, batch_records: int = 250_000, timeout_s: float = 15.0):
        self.connection = connection
        self.batch_records = batch_records
        self.topic = connection.offsets_topic
        self.timeout_s = timeout_s
        self._consumer: Consumer | None = None

    def connect(self) -> None:
        """Fail fast, before anything else is done, if the cluster does not answer.

        Raises:
            BrokerUnreachable: no bootstrap address accepted a connection within the timeout.
        """
        self._client()

    def _client(self) -> Consumer:
        if self._consumer is None:
            wait_until_reachable(self.connection.bootstrap_servers, self.timeout_s)
            config = self.connection.confluent_config()
            config.update({
                # assign() only: the group id is never joined nor committed to.
                "group.id": INGEST_GROUP,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                # What librdkafka prefetches, bounded so that memory does not grow with the topic.
                # The queue bounds are checked only before a fetch, and a fetch response is queued
                # whole, so the fetch size bounds the rest: a queued record costs about 400 bytes
                # while compressed records take ~20 bytes on the wire (lz4 generated history), so
                # a 64 MB fetch once queued up to 2.5 M records (1 GB) in one go.
                "fetch.max.bytes": FETCH_MAX_BYTES,
                "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
                "queued.min.messages": min(CONSUME_CHUNK, self.batch_records),
                "queued.max.messages.kbytes": 64 * 1024,
                # Fetch again 10 ms after the queue was found full, not librdkafka's 1 s, which
                # left the reader waiting once fetches no longer bring the whole topic at once.
                "fetch.queue.backoff.ms": 10,
            })
            self._consumer = Consumer(config)
        return self._consumer

    def plan(self, start: dict[int, int]) -> ReadPlan:
        """Positions to read from (given, else the log start; never below the log start) and
        the current ends.

        Raises:
            BrokerUnreachable: no metadata or offsets within the timeout.
            NotAuthorized: the principal may not describe the topic; the message names the ACL.
        """
        consumer = self._client()
        try:
            metadata = consumer.list_topics(self.topic, timeout=self.timeout_s)
            topic = metadata.topics.get(self.topic)
            if topic is not None and topic.error is not None:
                # Refused Describe: the ACL named is Read, which reading the topic needs (Fetch)
                # and which allows Describe as well.
                refusal = not_authorized(self.connection.bootstrap_servers, self._principal(), "Fetch",
                                         topic.error.name(), topic.error.str(), topic=self.topic)
                if refusal is not None:
                    raise refusal
            if topic is None or topic.error is not None:
                raise BrokerUnreachable(self.connection.bootstrap_servers,
                                        f"topic {self.topic} is not readable ({topic.error if topic else 'missing'})")
            plan_start, plan_end, log_start = {}, {}, {}
            for partition in sorted(topic.partitions):
                low, high = self._watermarks(consumer, partition)
                plan_start[partition] = max(start.get(partition, low), low)
                plan_end[partition] = high
                log_start[partition] = low
        except KafkaException as error:
            raise BrokerUnreachable(self.connection.bootstrap_servers, str(error)) from error
        return ReadPlan(plan_start, plan_end, log_start)

    def _watermarks(self, consumer: Consumer, partition: int) -> tuple[int, int]:
        """A partition's log start and end (its last stable offset, as read_committed reads).

        A leader moving or not elected yet (right after a topic was created or a broker restarted)
        is retried until the timeout; other errors raise at once."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=self.timeout_s)
            except KafkaException as error:
                if error.args[0].code() not in LEADER_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def read(self, plan: ReadPlan) -> Iterator[pa.Table]:
        """Yield Arrow batches (RAW_SCHEMA) of up to `batch_records` records until every
        partition reached its planned end.

        Raises:
            BrokerUnreachable: no records within the timeout, or a partition's error.
            NotAuthorized: the principal may not read the topic or describe the consumer's group
                (INGEST_GROUP); the message names the ACL.
        """
        pending = {p for p in plan.end if plan.start[p] < plan.end[p]}
        if not pending:
            return
        consumer = self._client()
        consumer.assign([TopicPartition(self.topic, p, plan.start[p]) for p in sorted(pending)])
        chunks, buffered, idle_since = [], 0, time.monotonic()
        while pending:
            # no more than the batch still has room for: a batch is what ingest holds and commits at once
            messages = consumer.consume(num_messages=min(CONSUME_CHUNK, self.batch_records - buffered),
                                        timeout=CONSUME_WAIT_S)
            if messages:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.timeout_s:
                raise BrokerUnreachable(self.connection.bootstrap_servers,
                                        f"no records for {self.timeout_s:.0f} s while {len(pending)} "
                                        f"partitions of {self.topic} were still behind")
            if any(map(Message.error, messages)):  # end-of-partition events, rarely errors
                messages = self._drop_events(messages, pending)
            if messages:
                chunk = messages_to_arrow(messages)
                for partition, next_offset in _next_offsets(chunk).items():
                    if next_offset >= plan.end[partition]:
                        pending.discard(partition)
                chunks.append(chunk)
                buffered += chunk.num_rows
            if chunks and (buffered >= self.batch_records or not pending):
                yield pa.concat_tables(chunks)
                chunks, buffered = [], 0

    def _drop_events(self, messages: list, pending: set[int]) -> list:
        """Handle end-of-partition events (the partition is done) and fail on real errors."""
        records = []
        for message in messages:
            error = message.error()
            if error is None:
                records.append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                pending.discard(message.partition())
            else:
                refusal = consumer_refusal(self.connection.bootstrap_servers, self._principal(), error.name(),
                                           error.str(), self.topic, INGEST_GROUP)
                if refusal is not None:
                    raise refusal
                raise BrokerUnreachable(self.connection.bootstrap_servers, str(error))
        return records

    def _principal(self) -> str | None:
        return sasl_principal(self.connection.security_protocol, self.connection.sasl_username)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> "OffsetsTopicReader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def messages_to_arrow(messages: list) -> pa.Table:
    # map() over the unbound methods is the cheapest way out of librdkafka's Message objects
    # (about 3.5 M messages/s per column here).
    return pa.table(
        [
            pa.array(list(map(Message.partition, messages)), pa.int32()),
            pa.array(list(map(Message.offset, messages)), pa.int64()),
            pa.array([stamp[1] for stamp in map(Message.timestamp, messages)],
                     pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            pa.array(list(map(Message.key, messages)), pa.binary()),
            pa.array(list(map(Message.value, messages)), pa.binary()),
        ],
        schema=RAW_SCHEMA,
    )


def _next_offsets(batch: pa.Table) -> dict[int, int]:
    """partition -> (highest offset in the batch) + 1."""
    grouped = batch.group_by("source_partition").aggregate([("source_offset", "max")])
    return {p: o + 1 for p, o in zip(grouped["source_partition"].to_pylist(),
                                      grouped["source_offset_max"].to_pylist())}
