"""Records of `__consumer_offsets` past the last stable offset: transactions still open.

A read_committed consumer stops at the last stable offset (LSO), the first record of the oldest
open transaction. Kafka's coordinator never expires an offset while a transactional commit of it
is pending, so ingest also looks at [LSO, high watermark) with read_uncommitted. Records there
belong to open transactions or wait behind one; all are reported as possibly pending, the safe
side for "will this offset expire".
"""

from __future__ import annotations

import time

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition

from offsets_platform.kafka.offsets_topic import RAW_SCHEMA, messages_to_arrow
from offsets_platform.settings import KafkaConnection


def read_past_stable_offsets(connection: KafkaConnection, stable_end: dict[int, int],
                             timeout_s: float = 15.0) -> pa.Table:
    """The records between each partition's LSO (`stable_end`) and its high watermark."""
    config = connection.confluent_config()
    config.update({"group.id": "offsets-platform-open-transactions", "enable.auto.commit": False,
                   "isolation.level": "read_uncommitted", "enable.partition.eof": True})
    consumer = Consumer(config)
    topic = connection.offsets_topic
    try:
        ends = {}
        for partition, lso in stable_end.items():
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > lso:
                ends[partition] = high
        if not ends:
            return RAW_SCHEMA.empty_table()
        consumer.assign([TopicPartition(topic, p, stable_end[p]) for p in sorted(ends)])
        tables, pending, deadline = [], set(ends), time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            messages = consumer.consume(num_messages=10_000, timeout=1.0)
            records = []
            for message in messages:
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                elif error is None and message.offset() < ends[message.partition()]:
                    records.append(message)
                    if message.offset() + 1 >= ends[message.partition()]:
                        pending.discard(message.partition())
            if records:
                tables.append(messages_to_arrow(records))
        return pa.concat_tables(tables) if tables else RAW_SCHEMA.empty_table()
    finally:
        consumer.close()
