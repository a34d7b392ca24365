"""When retention is too slow, the live workload moves the log start with DeleteRecords itself."""

from __future__ import annotations

import time

import pytest
from kafka import TopicPartition
from kafka.admin import OffsetSpec

from proving_ground.workload.live.cluster_setup import TopicsAlreadyExist, create_topics, topic_configs
from proving_ground.workload.live.producer import TickProducer
from proving_ground.workload.live.retention import DELETE_RECORDS, RETENTION, RetentionWatch
from proving_ground.workload.live.scenarios import DAY_MS, TopicSpec

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = TickProducer(bootstrap)
    try:
        producer.produce({topic: [(b"key-%d" % i, b"value-%d" % i) for i in range(count)]})
    finally:
        producer.close()


def log(admin, spec: TopicSpec, which: OffsetSpec) -> dict[int, int]:
    tps = [TopicPartition(spec.name, p) for p in range(spec.partitions)]
    return {tp.partition: o.offset for tp, o in admin.list_partition_offsets({tp: which for tp in tps}).items()}


def test_delete_records_stands_in_for_slow_retention(broker, admin):
    spec = TopicSpec("fallback-long-retention", 2, 7 * DAY_MS, 1)
    create_topics(admin, {spec.name: spec})
    produce(broker.bootstrap_servers, spec.name, 40)
    end = log(admin, spec, OffsetSpec.LATEST)
    committed = {p: 1 for p, o in end.items() if o > 1}
    watch = RetentionWatch(admin, [spec], time.monotonic())
    assert watch.wait_past(spec, committed, wait_s=0.5) == DELETE_RECORDS
    start = log(admin, spec, OffsetSpec.EARLIEST)
    assert all(start[p] == end[p] > offset for p, offset in committed.items())


def test_real_retention_is_reported_as_such(broker, admin):
    spec = TopicSpec("fallback-short-retention", 1, 1_000, 1, 500)
    create_topics(admin, {spec.name: spec})
    assert topic_configs(admin, [spec.name])[spec.name] == {
        "cleanup.policy": "delete", "retention.ms": "1000", "segment.ms": "500"}
    produce(broker.bootstrap_servers, spec.name, 10)
    watch = RetentionWatch(admin, [spec], time.monotonic())
    # Seconds on a quiet machine (a check every second); the margin is for a loaded one, where
    # the broker's retention task once took longer than 15 s, and once longer than 60 s, to act.
    # The wait ends as soon as the log start moves, so the margin costs nothing when it passes.
    assert watch.wait_past(spec, {0: 1}, wait_s=180) == RETENTION
    assert watch.first_deletion_s[spec.name] is not None


def test_existing_topics_are_refused(admin):
    spec = TopicSpec("fallback-existing", 2, 7 * DAY_MS, 1)
    create_topics(admin, {spec.name: spec})
    with pytest.raises(TopicsAlreadyExist, match="fallback-existing"):
        create_topics(admin, {spec.name: spec})
