"""The live workload against the real embedded broker (Apache Kafka), checked with admin calls only.

One run (seed 7, scale 1.0, members kept alive) serves the module; a second run on a fresh
broker checks determinism and the keep_alive=False path. The stop test runs last.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, OffsetSpec

from offsets_platform.codec.consumer_protocol import decode_subscription
from offsets_platform.broker.embedded import EmbeddedBroker
from proving_ground.workload.live import describe_groups_raw, run_live_workload
from proving_ground.workload.live.clients import confluent_admin, describe_kip848_groups, list_groups_typed
from proving_ground.workload.live.messages import digest_update, plan
from proving_ground.workload.live.scenarios import GROUPS, REGEX, STREAMS_INPUT, STREAMS_OUTPUT, TOPICS

pytestmark = pytest.mark.integration


def native_threads() -> list[str]:
    """Names of this process's librdkafka threads (rdk:main, rdk:broker1, ...).

    Only the Kafka clients' own threads: other native pools in the process (delta-rs's tokio
    runtime, jemalloc) grow and shrink with what other tests did, not with this workload.
    """
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                names.append(comm.read().strip())
        except FileNotFoundError:  # the thread ended between listdir and open
            pass
    return sorted(name for name in names if name.startswith("rdk:"))


def settle_native_threads(expected: list[str], timeout_s: float = 5.0) -> None:
    """A joined thread can outlive join() for a moment at the OS level; wait for that, no more."""
    deadline = time.monotonic() + timeout_s
    while (threads := native_threads()) != expected:
        assert time.monotonic() < deadline, f"threads left: {threads} (before: {expected})"
        time.sleep(0.05)


# Started once by the tqdm progress bars some library uses, and alive for the rest of the process.
LIBRARY_SINGLETON_THREADS = {"tqdm_monitor"}


def python_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name not in LIBRARY_SINGLETON_THREADS)


def settle_python_threads(expected: list[str], timeout_s: float = 10.0) -> list[str]:
    """The Python threads once they match `expected`, or after `timeout_s`: a thread an earlier
    test left finishing may still end; one the workload left behind does not."""
    deadline = time.monotonic() + timeout_s
    while python_threads() != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return python_threads()


@pytest.fixture(scope="module")
def kafka_admin(broker):
    """kafka-python's own admin client: the broker is checked with it, not with the project's."""
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="live-workload-test-check")
    yield client
    client.close()


@pytest.fixture(scope="module")
def baseline(admin, kafka_admin):
    """Threads before the run (both test admin clients' IO threads included)."""
    return {"native": native_threads(), "python": python_threads()}


@pytest.fixture(scope="module")
def workload(broker, baseline):
    lines: list[str] = []
    started = time.monotonic()
    result = run_live_workload(broker.bootstrap_servers, seed=7, scale=1.0, emit=lines.append)
    result.emitted = lines
    result.elapsed = time.monotonic() - started
    yield result
    result.stop()


def offsets(kafka_admin, topic: str, spec: OffsetSpec) -> dict[int, int]:
    tps = [TopicPartition(topic, p) for p in range(TOPICS[topic].partitions)]
    return {tp.partition: o.offset for tp, o in kafka_admin.list_partition_offsets({tp: spec for tp in tps}).items()}


def committed(kafka_admin, group: str) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): m.offset for tp, m in kafka_admin.list_group_offsets({group: None})[group].items()}


def test_run_is_bounded_and_says_what_it_does(workload):
    assert workload.elapsed < 60
    assert any("re-subscribes" in line for line in workload.emitted)
    assert workload.running and workload.keep_alive


def test_topics_have_their_partitions_and_retention_configs(workload, kafka_admin):
    resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in TOPICS]
    described = kafka_admin.describe_configs(resources, config_filter="all")
    for name, spec in TOPICS.items():
        broker_configs = {k: v["value"] for k, v in described["topic"][name].items()}
        assert broker_configs["retention.ms"] == str(spec.retention_ms) == workload.topics[name].configs["retention.ms"]
        assert len(offsets(kafka_admin, name, OffsetSpec.LATEST)) == spec.partitions == workload.topics[name].partitions
        assert spec.partitions >= 2
    short = [t for t in workload.topics.values() if t.short_retention]
    assert {t.name for t in short} == {"invoices", "search-clicks"}
    assert all(t.configs["retention.ms"] == "3000" and t.configs["segment.ms"] == "1000" for t in short)


def test_retention_deleted_messages_during_the_run(workload, kafka_admin):
    # The embedded broker checks retention every second, so retention.ms itself deletes them.
    assert workload.retention_mode == "retention.ms"
    assert workload.retention_mode in workload.retention_note
    start = offsets(kafka_admin, "invoices", OffsetSpec.EARLIEST)
    assert any(o > 0 for o in start.values())
    assert workload.topics["invoices"].first_deletion_s is not None


def test_slow_group_committed_offset_is_below_the_log_start(workload, kafka_admin):
    start = offsets(kafka_admin, "invoices", OffsetSpec.EARLIEST)
    end = offsets(kafka_admin, "invoices", OffsetSpec.LATEST)
    slow = committed(kafka_admin, "billing-slow")
    assert slow and {t for t, _ in slow} == {"invoices"}
    assert any(o < start[p] for (_, p), o in slow.items())
    assert all(o < end[p] for (_, p), o in slow.items())
    assert kafka_admin.describe_groups(["billing-slow"])["billing-slow"]["group_state"] == "Stable"
    assert workload.groups["billing-slow"].expected_state == "Stable"


def test_the_offsets_a_group_left_behind_fall_below_the_log_start(workload, kafka_admin):
    start = offsets(kafka_admin, "search-clicks", OffsetSpec.EARLIEST)
    left = {p: o for (t, p), o in committed(kafka_admin, "search-changed-subscription").items()
            if t == "search-clicks"}
    assert left and any(o < start[p] for p, o in left.items())


def test_active_group_has_no_lag(workload, kafka_admin):
    end = offsets(kafka_admin, "orders", OffsetSpec.LATEST)
    assert committed(kafka_admin, "orders-active") == {("orders", p): o for p, o in end.items()}
    assert all(o > 0 for o in end.values())
    described = kafka_admin.describe_groups(["orders-active"])["orders-active"]
    assert described["group_state"] == "Stable" and len(described["members"]) == 2
    assert all(m["member_metadata"]["topics"] == ["orders"] for m in described["members"])


def test_changed_subscription_group_keeps_offsets_on_the_topic_it_left(workload, kafka_admin, admin):
    group = "search-changed-subscription"
    topics = {t for t, _ in committed(kafka_admin, group)}
    assert topics == {"search-queries", "search-clicks"}
    described = kafka_admin.describe_groups([group])[group]
    assert described["group_state"] == "Stable" and described["members"]
    assert all(m["member_metadata"]["topics"] == ["search-queries"] for m in described["members"])
    for member in describe_groups_raw(admin, [group])[group]["members"]:  # the project's own decoder agrees
        assert decode_subscription(member["metadata"], "test")["topics"] == ["search-queries"]
    info = workload.groups[group]
    assert info.subscribed_topics == ("search-queries",) and info.left_behind_topics == ("search-clicks",)
    assert workload.changed_subscription == {"group": group, "kept_topic": "search-queries",
                                             "left_behind_topic": "search-clicks", "stays_stable": True}


def test_stopped_group_is_empty_with_its_offsets(workload, kafka_admin):
    described = kafka_admin.describe_groups(["reports-stopped"])["reports-stopped"]
    assert (described["group_state"], described["protocol_type"], described["members"]) == ("Empty", "consumer", [])
    offsets_ = committed(kafka_admin, "reports-stopped")
    assert offsets_ and {t for t, _ in offsets_} == {"report-requests"}
    assert workload.groups["reports-stopped"].expected_state == "Empty"


def test_standalone_consumer_has_offsets_and_no_membership(workload, kafka_admin):
    offsets_ = committed(kafka_admin, "ledger-standalone")
    assert offsets_ and {t for t, _ in offsets_} == {"ledger-entries"}
    described = kafka_admin.describe_groups(["ledger-standalone"])["ledger-standalone"]
    assert (described["group_state"], described["protocol_type"], described["members"]) == ("Empty", "", [])
    listed = {g["group_id"]: g for g in kafka_admin.list_groups()}
    # Kafka lists a group that only committed offsets as a classic group, protocol type "", Empty.
    assert (listed["ledger-standalone"]["protocol_type"], listed["ledger-standalone"]["group_type"]) == ("", "classic")
    assert workload.broker_observations["standalone_group_listing"] == {
        "listed": True, "protocol_type": "", "state": "Empty", "group_type": "classic"}


def test_connect_group_uses_the_connect_protocol(workload, kafka_admin, admin):
    described = describe_groups_raw(admin, ["connect-sink"])["connect-sink"]
    assert (described["state"], described["protocol_type"], described["protocol"]) == ("Stable", "connect", "default")
    assert len(described["members"]) == 2
    for member in described["members"]:
        version, url_length = struct.unpack_from(">hh", member["metadata"])
        assert version == 0 and member["metadata"][4:4 + url_length].startswith(b"http://connect-worker-")
    end = offsets(kafka_admin, "s3-sink-input", OffsetSpec.LATEST)
    assert committed(kafka_admin, "connect-sink") == {("s3-sink-input", p): o for p, o in end.items()}
    assert workload.groups["connect-sink"].protocol_type == "connect"


def test_every_group_kind_is_listed_with_its_type_and_state(workload, kafka_admin):
    listed = list_groups_typed(kafka_admin)
    for group, spec in GROUPS.items():
        assert listed[group]["group_type"] == spec.group_type, group
        assert listed[group]["group_state"] == ("Stable" if spec.keep_alive else "Empty"), group
        assert workload.groups[group].state == listed[group]["group_state"]
    assert {spec.group_type for spec in GROUPS.values()} == {"classic", "consumer", "share", "streams"}


def test_kip848_groups_are_assigned_by_the_broker(workload, kafka_admin, broker):
    admin = confluent_admin(broker.bootstrap_servers)
    described = describe_kip848_groups(admin, ["payments-kip848", "clickstream-regex"])
    payments = described["payments-kip848"]
    assert (payments["type"], payments["state"], len(payments["members"])) == ("consumer", "Stable", 2)
    assert set().union(*(m["assignment"] for m in payments["members"])) == {("payments", p) for p in range(4)}
    end = offsets(kafka_admin, "payments", OffsetSpec.LATEST)
    assert committed(kafka_admin, "payments-kip848") == {("payments", p): o for p, o in end.items()}

    # the regular expression resolved to both clickstream topics, and none other
    regex = described["clickstream-regex"]
    matching = {(t, p) for t in ("clickstream-app", "clickstream-web") for p in range(TOPICS[t].partitions)}
    assert regex["type"] == "consumer" and set().union(*(m["assignment"] for m in regex["members"])) == matching
    assert {t for t, _ in committed(kafka_admin, "clickstream-regex")} == {"clickstream-app", "clickstream-web"}
    assert workload.groups["clickstream-regex"].subscription_regex == REGEX


def test_transactional_committer_commits_with_its_transactions(workload, kafka_admin):
    end = offsets(kafka_admin, "fx-rates", OffsetSpec.LATEST)
    assert committed(kafka_admin, "fx-transactional") == {("fx-rates", p): o for p, o in end.items()}
    # the transformed messages were written in the same transactions (plus one marker per partition
    # and transaction, so the output's end is past the count of messages)
    assert sum(offsets(kafka_admin, "fx-rates-enriched", OffsetSpec.LATEST).values()) > sum(end.values())
    assert workload.broker_observations["transaction"]["state"] == "CompleteCommit"


def test_share_and_streams_groups_run_kafkas_own_programs(workload, kafka_admin):
    # a share group commits no offsets: its members acknowledge records (KIP-932)
    assert committed(kafka_admin, "alerts-share") == {}
    assert min(workload.broker_observations["share_records_printed"].values()) > 0
    # the streams group commits its input's positions and writes its counts
    end = offsets(kafka_admin, STREAMS_INPUT, OffsetSpec.LATEST)
    assert committed(kafka_admin, "wordcount-streams").items() >= {(STREAMS_INPUT, p): o for p, o in end.items()}.items()
    assert sum(offsets(kafka_admin, STREAMS_OUTPUT, OffsetSpec.LATEST).values()) > 0


def test_message_plan_is_deterministic_and_scaled():
    assert plan(7, 1.0) == plan(7, 1.0)
    assert plan(7, 1.0) != plan(8, 1.0)
    assert sum(len(m) for ticks in plan(7, 0.25).values() for m in ticks) < \
        sum(len(m) for ticks in plan(7, 1.0).values() for m in ticks)


def read_back(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, str]:
    """Read a topic from the beginning and digest each partition's (key, value) sequence."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "live-workload-readback",
                         "enable.auto.commit": False, "log_level": 3})
    try:
        consumer.assign([CTopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        digests, seen = {p: hashlib.sha256() for p in ends}, {p: 0 for p in ends}
        deadline = time.monotonic() + 20
        while any(seen[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.2):
                if message.error() is None:
                    digest_update(digests[message.partition()], message.key(), message.value())
                    seen[message.partition()] += 1
        assert seen == ends
        return {p: d.hexdigest() for p, d in digests.items() if ends[p]}
    finally:
        consumer.close()


def test_same_seed_on_a_fresh_broker_gives_the_same_topics_and_messages(workload, tmp_path):
    threads_before = (native_threads(), python_threads())
    with EmbeddedBroker(tmp_path / "second") as second:
        again = run_live_workload(second.bootstrap_servers, seed=7, scale=1.0, emit=None, keep_alive=False)
        # keep_alive=False: nothing left running, and no group has members.
        assert settle_python_threads(threads_before[1]) == threads_before[1]
        settle_native_threads(threads_before[0])
        assert not again.running and {g.expected_state for g in again.groups.values()} == {"Empty"}
        for name, topic in workload.topics.items():
            other = again.topics[name]
            assert (other.partitions, other.configs, other.produced_by_partition, other.digests_by_partition) == \
                (topic.partitions, topic.configs, topic.produced_by_partition, topic.digests_by_partition)
            # what the broker holds is what the driver reported producing (the output topics are
            # written by the transactional member and the streams app, not by the driver)
            if not topic.short_retention and TOPICS[name].per_tick:
                ends = {p: topic.log_end_offsets[p] for p in range(topic.partitions)}
                assert ends == topic.produced_by_partition
                assert read_back(second.bootstrap_servers, name, ends) == topic.digests_by_partition
        again.stop()  # a no-op without keep-alive


def test_stop_closes_every_client_and_kept_groups_go_empty(workload, kafka_admin, baseline):
    kept = [g for g, spec in GROUPS.items() if spec.keep_alive]
    assert {list_groups_typed(kafka_admin)[g]["group_state"] for g in kept} == {"Stable"}
    workload.stop()
    workload.stop()  # idempotent
    assert not workload.running and workload.keep_alive_errors == []
    assert python_threads() == baseline["python"]
    settle_native_threads(baseline["native"])
    deadline = time.monotonic() + 15
    while True:
        listed = list_groups_typed(kafka_admin)
        states = {g: listed[g]["group_state"] for g in kept}
        if states == dict.fromkeys(kept, "Empty"):
            break
        assert time.monotonic() < deadline, states
        time.sleep(0.2)
    assert committed(kafka_admin, "orders-active")  # offsets outlive the members
