"""Consumers as a team runs them: classic and KIP-848 group members (subscribe), standalone
consumers (assign), and a consume-transform-produce member whose offsets a transaction commits.

Thin wrappers over confluent-kafka's `Consumer` that consume what is ready without blocking
the driver, commit explicit positions synchronously, and close cleanly: a classic member's
close sends LeaveGroup, a KIP-848 member's a ConsumerGroupHeartbeat with member epoch -1, so
the group goes Empty at once instead of after the session timeout.
"""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from .clients import consumer_config, kip848_consumer_config, transactional_producer_config

Offsets = dict[tuple[str, int], int]


class LiveConsumer:
    """One confluent-kafka consumer; subclasses decide how it gets partitions."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, config: dict | None = None):
        self.group = group
        self.client_id = client_id
        self.consumer = Consumer(config or consumer_config(bootstrap_servers, group, client_id))
        self.consumed = 0
        self.errors: list[str] = []
        self.closed = False

    def poll(self, max_messages: int = 100_000, timeout: float = 0.0) -> int:
        """Consume up to `max_messages` already fetched (waiting at most `timeout` s); returns the count."""
        count = 0
        for message in self.consumer.consume(max_messages, timeout):
            if message.error() is not None:
                self.errors.append(str(message.error()))
            else:
                count += 1
        self.consumed += count
        return count

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def positions(self) -> Offsets:
        """The next offset to consume per assigned partition that has a valid position."""
        assigned = self.consumer.assignment()
        if not assigned:
            return {}
        return {(tp.topic, tp.partition): tp.offset for tp in self.consumer.position(assigned) if tp.offset >= 0}

    def commit(self, offsets: Offsets | None = None) -> Offsets:
        """Commit `offsets` (default: current positions) synchronously; {} if nothing or it failed."""
        offsets = self.positions() if offsets is None else offsets
        if not offsets:
            return {}
        try:
            result = self.consumer.commit(offsets=[CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
                                          asynchronous=False)
        except KafkaException as error:  # e.g. REBALANCE_IN_PROGRESS: the next tick retries
            self.errors.append(f"commit: {error}")
            return {}
        failed = [tp for tp in result or [] if tp.error is not None]
        if failed:
            self.errors.append(f"commit: {failed}")
            return {}
        return dict(offsets)

    def pause_all(self) -> None:
        self.consumer.pause(self.consumer.assignment())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


class GroupMember(LiveConsumer):
    """A member of a classic consumer group (JoinGroup / SyncGroup through subscribe())."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, topics: tuple[str, ...],
                 config: dict | None = None):
        super().__init__(bootstrap_servers, group, client_id, config)
        self.subscribe(topics)

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """(Re)subscribe; a changed topic list makes the member rejoin, i.e. a new generation."""
        self.topics = tuple(topics)
        self.consumer.subscribe(list(topics))


class StandaloneConsumer(LiveConsumer):
    """assign() with a group.id: commits offsets but never joins the group (a "simple" group)."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, topic: str, partitions: int):
        super().__init__(bootstrap_servers, group, client_id)
        self.topics = (topic,)
        self.consumer.assign([CTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])


class Kip848Member(GroupMember):
    """A member of a KIP-848 consumer group (group.protocol=consumer): it heartbeats its
    subscription, topic names or one regular expression ("^..."), and the broker computes the
    assignment and resolves the expression."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, subscription: tuple[str, ...]):
        super().__init__(bootstrap_servers, group, client_id, subscription,
                         kip848_consumer_config(bootstrap_servers, group, client_id))


class TransactionalMember(GroupMember):
    """Consume-transform-produce with exactly-once: a classic member reads its input with
    read_committed and never commits itself; a transactional producer writes the transformed
    messages and the consumed positions (TxnOffsetCommit, with the member's generation for
    fencing, KIP-447) in one transaction, so Kafka writes transactional offset commits."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, topics: tuple[str, ...],
                 output_topic: str, transactional_id: str):
        config = {**consumer_config(bootstrap_servers, group, client_id), "isolation.level": "read_committed"}
        super().__init__(bootstrap_servers, group, client_id, topics, config)
        self.output_topic = output_topic
        self.producer = Producer(transactional_producer_config(bootstrap_servers, transactional_id))
        self.transactions = 0
        self._in_transaction = False
        self._last_committed: dict[tuple[str, int], int] = {}
        try:
            self.producer.init_transactions(30)
        except BaseException:
            self.close()
            raise

    def poll(self, max_messages: int = 100_000, timeout: float = 0.0) -> int:
        """Consume what is ready and produce each transformed message inside the open transaction."""
        count = 0
        for message in self.consumer.consume(max_messages, timeout):
            if message.error() is not None:
                self.errors.append(str(message.error()))
                continue
            if not self._in_transaction:
                self.producer.begin_transaction()
                self._in_transaction = True
            self.producer.produce(self.output_topic, key=message.key(), value=b'{"enriched":' + message.value() + b"}")
            count += 1
        self.consumed += count
        return count

    def commit(self, offsets=None):
        """Commit the open transaction with the consumed positions (`offsets` default: positions);
        on failure abort it and rewind to the committed offsets, so nothing is skipped."""
        offsets = self.positions() if offsets is None else offsets
        if not self._in_transaction:
            if not offsets:
                return {}
            if offsets == self._last_committed:  # already committed: nothing to do
                return dict(offsets)
            self.producer.begin_transaction()  # positions moved without output (e.g. drained to the end)
            self._in_transaction = True
        try:
            self.producer.send_offsets_to_transaction(
                [CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
                self.consumer.consumer_group_metadata(), 15)
            self.producer.commit_transaction(15)
        except KafkaException as error:  # e.g. a rebalance fenced the generation: abort, rewind, retry
            self.errors.append(f"transaction: {error}")
            self._abort()
            return {}
        finally:
            self._in_transaction = False
        self.transactions += 1
        self._last_committed = dict(offsets)
        return dict(offsets)

    def _abort(self) -> None:
        try:
            self.producer.abort_transaction(15)
        except KafkaException as error:
            self.errors.append(f"abort: {error}")
        assigned = self.consumer.assignment()
        if assigned:
            committed = self.consumer.committed(assigned, timeout=10)
            for tp in committed:
                self.consumer.seek(CTopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    def close(self) -> None:
        if not self.closed:
            try:
                if self._in_transaction:
                    self.producer.abort_transaction(10)
                self.producer.flush(10)
            finally:
                self.producer.close()
                super().close()
