"""Realistic coordinator traffic for `__consumer_offsets`: a generator, Kafka's partitioning, a producer.

`generate` / `generate_batches` simulate a cluster's group coordinator (deterministic from a
seed); `SCENARIOS` names the stories every run tells; `produce_records` writes the records
into a regular topic laid out like `__consumer_offsets` (`create_history_topic`; an unreachable
broker raises `offsets_platform.kafka.errors.BrokerUnreachable`).
"""

from .coordinator_history import (
    BATCH_SCHEMA,
    KEY_TYPE_NAMES,
    CoordinatorRecord,
    default_start_ms,
    generate,
    generate_batches,
    summarize,
)
from .partitioning import DEFAULT_PARTITIONS, java_string_hashcode, kafka_abs, partition_for
from .produce import HISTORY_TOPIC, ProduceResult, create_history_topic, produce_records
from .scenarios import RETENTION_CHECK_INTERVAL_MS, RETENTION_MS, SCENARIOS, Scenario

__all__ = [
    "BATCH_SCHEMA", "DEFAULT_PARTITIONS", "HISTORY_TOPIC", "create_history_topic", "KEY_TYPE_NAMES", "RETENTION_CHECK_INTERVAL_MS", "RETENTION_MS",
    "SCENARIOS", "CoordinatorRecord", "ProduceResult", "Scenario", "default_start_ms", "generate",
    "generate_batches", "java_string_hashcode", "kafka_abs", "partition_for", "produce_records", "summarize",
]
