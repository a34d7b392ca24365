"""Consumers as a team runs them: group members (subscribe) and standalone consumers (assign).

Thin wrappers over confluent-kafka's `Consumer` that consume what is ready without blocking
the driver, commit explicit positions synchronously, and close cleanly (a group member's
close sends LeaveGroup; on noida-db a member that vanishes without it is never expired).
"""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as CTopicPartition

from .clients import consumer_config

Offsets = dict[tuple[str, int], int]


class LiveConsumer:
    """One confluent-kafka consumer; subclasses decide how it gets partitions."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str):
        self.group = group
        self.client_id = client_id
        self.consumer = Consumer(consumer_config(bootstrap_servers, group, client_id))
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

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, topics: tuple[str, ...]):
        super().__init__(bootstrap_servers, group, client_id)
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
