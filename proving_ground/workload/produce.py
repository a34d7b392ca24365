"""Write generated coordinator records into a regular topic laid out like `__consumer_offsets`.

A real broker's `__consumer_offsets` belongs to its group coordinator, which writes it and loads
it (and Kafka refuses produce requests to internal topics from ordinary clients), so generated
history goes to a topic of its own, HISTORY_TOPIC by default, with as many partitions
(`create_history_topic`). Ingest reads it when `offsets_topic` names it (a test and mirror option).

Each record goes to its own partition (Kafka's partition for the group) with its simulated
time as the record timestamp, lz4-compressed and batched (linger.ms 50). The broker must first
accept a TCP connection (`wait_until_reachable`), then answer a metadata request, so an
unreachable address fails within `connect_timeout_s` with `BrokerUnreachable` naming it,
instead of librdkafka retrying in the background until the message timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.kafka.errors import BrokerUnreachable, wait_until_reachable
from offsets_platform.settings import OFFSETS_TOPIC
from proving_ground.workload.partitioning import DEFAULT_PARTITIONS

HISTORY_TOPIC = "coordinator-history"
"""The default topic of generated coordinator history."""


def create_history_topic(bootstrap_servers: str, topic: str = HISTORY_TOPIC,
                         partitions: int = DEFAULT_PARTITIONS, timeout_s: float = 30.0) -> None:
    """Create a regular topic with the layout of `__consumer_offsets` (its partition count) that
    keeps every record (no retention, no compaction), unless it exists."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    wanted = NewTopic(topic, partitions, 1, config={"cleanup.policy": "delete", "retention.ms": "-1",
                                                     "retention.bytes": "-1"})
    try:
        admin.create_topics([wanted], request_timeout=timeout_s)[topic].result(timeout_s)
    except KafkaException as error:
        if error.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise BrokerUnreachable(bootstrap_servers, f"could not create topic {topic} ({error.args[0]})") from None


@dataclass(frozen=True)
class ProduceResult:
    """What `produce_records` wrote."""

    records: int
    tombstones: int
    partitions: int  # distinct partitions written to
    seconds: float

    @property
    def records_per_second(self) -> float:
        """Throughput, records per second of wall time."""
        return self.records / self.seconds if self.seconds > 0 else 0.0


def _partition_count(bootstrap: str, topic: str, timeout_s: float) -> int:
    """Wait for the broker, then return the partitions of `topic` from its metadata."""
    deadline = time.monotonic() + timeout_s
    wait_until_reachable(bootstrap, timeout_s)
    timeout_s = max(deadline - time.monotonic(), 1.0)
    # A separate silent client: the port answers, but librdkafka would log every failed attempt
    # (wrong listener or security protocol) while list_topics waits
    probe = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0,
                         "socket.connection.setup.timeout.ms": max(int(timeout_s * 1000), 1000)})
    try:
        metadata = probe.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        raise BrokerUnreachable(bootstrap, f"no metadata within {timeout_s:.0f} s ({exc.args[0]})") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        reason = found.error if found is not None else "missing"
        raise BrokerUnreachable(bootstrap, f"its metadata has no usable topic {topic!r} ({reason})")
    return len(found.partitions)


def _give_up(producer: Producer, bootstrap: str, failures: list, detail: str = "") -> None:
    producer.purge()  # drop what is still queued so the client does not linger on it
    producer.flush(0)
    reasons = "; ".join(filter(None, [detail] + [str(f) for f in failures]))
    raise BrokerUnreachable(bootstrap, f"not every record was acknowledged ({reasons})")


def produce_records(bootstrap_servers: str, records: Iterable, *, topic: str = HISTORY_TOPIC,
                    progress: Callable[[int], None] | None = None, progress_every: int = 100_000,
                    connect_timeout_s: float = 10.0, flush_timeout_s: float = 120.0,
                    config: dict | None = None) -> ProduceResult:
    """Produce coordinator records, each to its partition with its timestamp, then flush.

    Args:
        bootstrap_servers: Broker address(es), e.g. "127.0.0.1:9092".
        records: `CoordinatorRecord`s (anything with partition, key, value, timestamp_ms).
        topic: Target topic, a regular topic (default HISTORY_TOPIC; see `create_history_topic`).
        progress: Called with the number of records handed to the client so far, every
            `progress_every` records and once at the end.
        progress_every: Records between progress calls.
        connect_timeout_s: How long to wait for the broker to accept a connection and answer.
        flush_timeout_s: How long the final flush may take.
        config: Extra librdkafka settings, overriding the defaults.

    Returns:
        A `ProduceResult` with the counts and the elapsed time.

    Raises:
        BrokerUnreachable: the broker did not answer within `connect_timeout_s`, lacks the
            topic, or did not acknowledge every record (message names the address).
        ValueError: a record's partition does not exist in the topic, or the topic is
            `__consumer_offsets`.
    """
    if topic == OFFSETS_TOPIC:
        raise ValueError(f"generated history never goes into a real coordinator's {OFFSETS_TOPIC}: write it to a "
                         f"regular topic (create_history_topic) and ingest that topic")
    started = time.perf_counter()
    partition_count = _partition_count(bootstrap_servers, topic, connect_timeout_s)
    failures: list = []

    def on_error(err, _msg) -> None:  # only called for failures: delivery.report.only.error
        if err is not None and len(failures) < 5:
            failures.append(err)

    producer = Producer({
        # idempotence keeps each partition's order when a request is retried (a loaded broker
        # times some out): the history stands for a log whose order matters
        "bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "compression.type": "lz4", "linger.ms": 50,
        "batch.num.messages": 10_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576, "message.timeout.ms": int(max(flush_timeout_s, 30) * 1000),
        "delivery.report.only.error": True, "on_delivery": on_error, **(config or {}),
    })
    produce, poll = producer.produce, producer.poll
    count = tombstones = 0
    seen = bytearray(partition_count)
    for record in records:
        partition, value = record.partition, record.value
        if not 0 <= partition < partition_count:
            producer.purge()  # send nothing of a stream that has a bad record in it
            raise ValueError(f"record partition {partition} not in {topic} (0..{partition_count - 1})")
        seen[partition] = 1
        try:  # positional topic, value, key, partition: measurably faster than keywords
            produce(topic, value, record.key, partition, timestamp=record.timestamp_ms)
        except BufferError:  # local queue full: let librdkafka send, then retry once there is room
            while True:
                poll(0.05)
                if failures:
                    _give_up(producer, bootstrap_servers, failures)
                try:
                    produce(topic, value, record.key, partition, timestamp=record.timestamp_ms)
                    break
                except BufferError:
                    pass
        count += 1
        if value is None:
            tombstones += 1
        if count % progress_every == 0:
            poll(0)
            if progress:
                progress(count)
    left = producer.flush(flush_timeout_s)
    if progress:
        progress(count)
    if left or failures:
        _give_up(producer, bootstrap_servers, failures,
                 f"{left} record(s) unsent after {flush_timeout_s:g} s" if left else "")
    return ProduceResult(count, tombstones, sum(seen), time.perf_counter() - started)
