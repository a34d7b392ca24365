"""The producer side: one idempotent confluent-kafka producer writing each tick's messages.

It records, from the delivery reports, where every message landed: the log end it produced
up to per partition, and a sha256 of each partition's (key, value) sequence, so two runs (or a
run and a read-back of the topic) can be compared message for message.
"""

from __future__ import annotations

import hashlib

from confluent_kafka import Producer

from .clients import producer_config
from .messages import digest_update


class TickProducer:
    def __init__(self, bootstrap_servers: str):
        self.producer = Producer(producer_config(bootstrap_servers))
        self.ends: dict[tuple[str, int], int] = {}
        self.counts: dict[tuple[str, int], int] = {}
        self._digests: dict[tuple[str, int], object] = {}
        self.errors: list[str] = []
        self.closed = False

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.errors.append(f"{message.topic()}: {error}")
            return
        where = (message.topic(), message.partition())
        self.ends[where] = message.offset() + 1
        self.counts[where] = self.counts.get(where, 0) + 1
        digest_update(self._digests.setdefault(where, hashlib.sha256()), message.key(), message.value())

    def produce(self, batches: dict[str, list[tuple[bytes, bytes]]], timeout_s: float = 30.0) -> int:
        """Produce every (key, value) of every topic, in order, and wait until all are delivered."""
        count = 0
        for topic, messages in batches.items():
            for key, value in messages:
                while True:
                    try:
                        self.producer.produce(topic, value=value, key=key, on_delivery=self._delivered)
                        break
                    except BufferError:  # local queue full: serve delivery reports, then retry
                        self.producer.poll(0.05)
                count += 1
        remaining = self.producer.flush(timeout_s)
        if remaining or self.errors:
            raise RuntimeError(f"producer: {remaining} messages undelivered after {timeout_s} s; "
                               f"errors: {self.errors[:5]}")
        return count

    def partition_digests(self) -> dict[tuple[str, int], str]:
        return {where: digest.hexdigest() for where, digest in sorted(self._digests.items())}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.producer.flush(10)
            self.producer.close()
