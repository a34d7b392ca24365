"""Create the live workload's topics with their configs, and read the configs back."""

from __future__ import annotations

import time

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from offsets_platform.kafka.admin_calls import SnapshotAdminClient

from .scenarios import TopicSpec

CONFIG_KEYS = ("cleanup.policy", "retention.ms", "segment.ms")


class TopicsAlreadyExist(RuntimeError):
    """The live workload needs a cluster where its topics do not exist yet."""


def create_topics(admin: KafkaAdminClient, topics: dict[str, TopicSpec], timeout_s: float = 15.0) -> None:
    """Create every topic (replication factor 1) with its configs and wait until metadata lists them."""
    existing = set(admin.list_topics()) & set(topics)
    if existing:
        raise TopicsAlreadyExist(f"topics {sorted(existing)} already exist; the live workload needs a "
                                 "cluster without them (a fresh broker, or delete them first)")
    admin.create_topics({name: {"num_partitions": spec.partitions, "replication_factor": 1, "configs": spec.configs}
                         for name, spec in topics.items()})
    deadline = time.monotonic() + timeout_s
    while not set(topics) <= set(admin.list_topics()):
        if time.monotonic() > deadline:
            missing = sorted(set(topics) - set(admin.list_topics()))
            raise TimeoutError(f"topics {missing} not listed after {timeout_s} s")
        time.sleep(0.1)


def topic_configs(admin: SnapshotAdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    """The broker's view of CONFIG_KEYS per topic (DescribeConfigs), as strings."""
    resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
    described = admin.describe_configs(resources)
    found = {name: described.get((ConfigResourceType.TOPIC.value, name)) for name in names}
    return {name: {key: value for key, value in (result.values if result else {}).items() if key in CONFIG_KEYS}
            for name, result in found.items()}
