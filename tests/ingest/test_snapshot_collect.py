"""Admin-API snapshots against the real embedded broker, with groups made by real clients.

The module's cluster: topic `orders` (3 partitions, retention.ms 1 h) and `payments`
(2 partitions) with known message counts; group `live-app`, a static member subscribed to both
topics and kept alive through the snapshot; group `stopped-app`, which committed and closed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.consumer import JoinGroupRequest, SyncGroupRequest

from offsets_platform.codec.consumer_protocol import decode_subscription
from offsets_platform.kafka.admin_calls import error_name, open_admin
from offsets_platform.ingest.snapshot_collect import take_snapshot

ORDERS, PAYMENTS = "orders", "payments"
PRODUCED = {ORDERS: [5, 7, 9], PAYMENTS: [4, 6]}  # messages per partition
ORDERS_RETENTION_MS = 3_600_000
KAFKA_DEFAULT_RETENTION_MS = 604_800_000


# -- helpers shared with tests/ingest/test_snapshots.py -------------------------------------

def create_topics(bootstrap: str, topics: dict[str, tuple[int, dict]], attempts: int = 3) -> None:
    """Create {name: (partitions, config)} and wait for the broker to confirm.

    A connection that broke while the request waited for its answer (librdkafka's _TRANSPORT,
    seen once in CI on a broker just started) is tried again with a new client; a topic that the
    broken attempt did create then answers "already exists", which is what was asked.
    """
    for attempt in range(1, attempts + 1):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)
                                       for name, (partitions, config) in topics.items()])
        errors = []
        for future in futures.values():
            try:
                future.result(timeout=15)
            except KafkaException as error:
                errors.append(error)
        codes = {error.args[0].code() for error in errors}
        if attempt > 1:
            codes.discard(KafkaError.TOPIC_ALREADY_EXISTS)
        if not codes:
            return
        if codes != {KafkaError._TRANSPORT} or attempt == attempts:
            raise next(error for error in errors if error.args[0].code() in codes)


def produce_counts(bootstrap: str, topic: str, counts: list[int]) -> None:
    """Produce counts[p] messages to each partition p."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in enumerate(counts):
        for index in range(count):
            producer.produce(topic, value=f"{topic}-{partition}-{index}".encode(), partition=partition)
    assert producer.flush(30) == 0, "messages still undelivered after 30 s"


def join_group(bootstrap: str, group: str, topics: list[str], partitions: int, **config) -> Consumer:
    """A confluent-kafka consumer in `group`, returned once it holds `partitions` partitions."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **config})
    consumer.subscribe(topics)
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, f"{group} not assigned {partitions} partitions within 30 s"
        consumer.poll(0.2)
    return consumer


def commit(consumer: Consumer, offsets: dict[tuple[str, int], tuple[int, str]]) -> None:
    """Commit {(topic, partition): (offset, metadata)} synchronously."""
    consumer.commit(offsets=[TopicPartition(topic, partition, offset, metadata=metadata)
                             for (topic, partition), (offset, metadata) in offsets.items()], asynchronous=False)


def stored_metadata(metadata: str | None) -> str | None:
    # confluent-kafka sends the C string's terminating NUL as part of the metadata (its
    # metadata_size is strlen + 1), so the broker stores and returns "meta\x00".
    return metadata.rstrip("\x00") if metadata is not None else None


def broker_offsets_retention(bootstrap: str) -> int | None:
    """offsets.retention.minutes as the lowest-numbered broker reports it, asked with confluent-kafka."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, str(broker_id(bootstrap)))
    entry = admin.describe_configs([resource])[resource].result(timeout=15).get("offsets.retention.minutes")
    return int(entry.value) if entry is not None and entry.value is not None else None


def broker_id(bootstrap: str) -> int:
    """The lowest node id in the cluster metadata."""
    return min(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers)


def by(rows: list[dict], *keys: str) -> dict:
    return {tuple(row[key] for key in keys) if len(keys) > 1 else row[keys[0]]: row for row in rows}


# -- the module's cluster --------------------------------------------------------------------

@dataclass
class Cluster:
    bootstrap: str
    live: Consumer
    live_offsets: dict[tuple[str, int], tuple[int, str]]
    stopped_offsets: dict[tuple[str, int], tuple[int, str]]


@pytest.fixture(scope="module")
def cluster(broker) -> Cluster:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, {ORDERS: (3, {"retention.ms": str(ORDERS_RETENTION_MS)}), PAYMENTS: (2, {})})
    for topic, counts in PRODUCED.items():
        produce_counts(bootstrap, topic, counts)
    stopped_offsets = {(ORDERS, p): (count, "stopped") for p, count in enumerate(PRODUCED[ORDERS])}
    stopped = join_group(bootstrap, "stopped-app", [ORDERS], 3, **{"client.id": "stopped-client"})
    commit(stopped, stopped_offsets)
    stopped.close()
    live_offsets = {(topic, p): (count - 1, f"live:{topic}:{p}")
                    for topic, counts in PRODUCED.items() for p, count in enumerate(counts)}
    live = join_group(bootstrap, "live-app", [ORDERS, PAYMENTS], 5,
                      **{"client.id": "live-client", "group.instance.id": "live-instance-1"})
    commit(live, live_offsets)
    yield Cluster(bootstrap, live, live_offsets, stopped_offsets)
    live.close()


@pytest.fixture(scope="module")
def snapshot(cluster, connection):
    return take_snapshot(connection)


# -- groups ----------------------------------------------------------------------------------

def test_groups_are_stable_or_empty_as_the_broker_reports_them(cluster, snapshot):
    groups = by(snapshot.rows("group_snapshots"), "group")
    live, stopped = groups["live-app"], groups["stopped-app"]
    assert (live["state"], live["protocol_type"], live["protocol"], live["member_count"]) == \
        ("Stable", "consumer", "range", 1)
    assert (stopped["state"], stopped["protocol_type"], stopped["member_count"]) == ("Empty", "consumer", 0)
    assert live["group_type"] == stopped["group_type"] == "classic"
    assert live["coordinator_id"] == stopped["coordinator_id"] == broker_id(cluster.bootstrap)
    assert {row["snapshot_id"] for row in snapshot.rows("group_snapshots")} == {snapshot.snapshot_id}
    assert snapshot.errors == []


def test_live_member_has_client_id_subscription_and_assignment_decoded(snapshot):
    members = [m for m in snapshot.rows("group_member_snapshots") if m["group"] == "live-app"]
    assert len(members) == 1
    member = members[0]
    assert member["client_id"] == "live-client"
    # Kafka names a static member (group.instance.id) after its instance id, not its client id.
    assert member["member_id"].startswith("live-instance-1-")
    assert member["group_instance_id"] == "live-instance-1"
    assert member["client_host"].endswith("127.0.0.1")
    assert sorted(member["subscribed_topics"]) == [ORDERS, PAYMENTS]
    assert member["assigned_partitions"] == [{"topic": ORDERS, "partitions": [0, 1, 2]},
                                             {"topic": PAYMENTS, "partitions": [0, 1]}]
    # The raw bytes are kept exactly as the broker returned them.
    assert decode_subscription(member["subscription_bytes"], "test")["topics"] == member["subscribed_topics"]
    assert member["assignment_bytes"]
    assert not [m for m in snapshot.rows("group_member_snapshots") if m["group"] == "stopped-app"]


def test_a_kip848_group_has_its_type_state_and_members_with_their_subscriptions(cluster, connection):
    # DescribeGroups answers GROUP_ID_NOT_FOUND for a KIP-848 group: ConsumerGroupDescribe describes it.
    members = [Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kip848-app", "group.protocol": "consumer",
                         "client.id": client_id, "enable.auto.commit": False, "log_level": 3})
               for client_id in ("by-name", "by-regex")]
    members[0].subscribe([PAYMENTS])
    members[1].subscribe(["^ord.*"])
    try:
        deadline = time.monotonic() + 60
        while [len(m.assignment()) for m in members] != [2, 3]:
            assert time.monotonic() < deadline, [m.assignment() for m in members]
            for member in members:
                member.poll(0.1)
        # Under load the coordinator can still be reconciling when the clients see their
        # assignments: snapshot once it reports the group Stable.
        while by(take_snapshot(connection, groups=["kip848-app"], topics=[]).rows("group_snapshots"),
                 "group")["kip848-app"]["state"] != "Stable":
            assert time.monotonic() < deadline, "kip848-app became Stable"
            for member in members:
                member.poll(0.5)
        listed = take_snapshot(connection, topics=[])  # types from ListGroups
        asked = take_snapshot(connection, groups=["kip848-app"], topics=[])  # types found by asking
    finally:
        for member in members:
            member.close()
    for snapshot in (listed, asked):
        group = by(snapshot.rows("group_snapshots"), "group")["kip848-app"]
        assert {k: group[k] for k in ("group_type", "state", "protocol_type", "protocol", "member_count")} == \
            {"group_type": "consumer", "state": "Stable", "protocol_type": "consumer", "protocol": "uniform",
             "member_count": 2}
        rows = by([m for m in snapshot.rows("group_member_snapshots") if m["group"] == "kip848-app"], "client_id")
        assert (rows["by-name"]["subscribed_topics"], rows["by-name"]["subscribed_topic_regex"]) == ([PAYMENTS], None)
        assert rows["by-name"]["assigned_partitions"] == [{"topic": PAYMENTS, "partitions": [0, 1]}]
        # librdkafka sends its regexes joined as "(r1)|(r2)"; the broker lists no topic names for them
        assert (rows["by-regex"]["subscribed_topics"], rows["by-regex"]["subscribed_topic_regex"]) == ([], "(^ord.*)")
        assert rows["by-regex"]["assigned_partitions"] == [{"topic": ORDERS, "partitions": [0, 1, 2]}]
        assert rows["by-regex"]["subscription_bytes"] is None and rows["by-regex"]["assignment_bytes"] is None
        assert not [e for e in snapshot.errors if e["name"] == "kip848-app"]


def test_committed_offsets_of_every_partition_with_their_metadata(cluster, snapshot):
    rows = snapshot.rows("committed_offset_snapshots")
    for group, expected in (("live-app", cluster.live_offsets), ("stopped-app", cluster.stopped_offsets)):
        got = {(r["topic"], r["partition"]): (r["committed_offset"], stored_metadata(r["metadata"]))
               for r in rows if r["group"] == group}
        assert got == expected
    assert all(r["leader_epoch"] is None for r in rows)  # committed without a leader epoch


# -- topics ----------------------------------------------------------------------------------

def test_log_offsets_are_what_was_produced_and_internal_topics_are_left_out(snapshot):
    offsets = by(snapshot.rows("log_offset_snapshots"), "topic", "partition")
    for topic, counts in PRODUCED.items():
        for partition, count in enumerate(counts):
            row = offsets[(topic, partition)]
            assert (row["log_start_offset"], row["log_end_offset"]) == (0, count)
    listed = {r["topic"] for r in snapshot.rows("log_offset_snapshots")} | \
        {r["topic"] for r in snapshot.rows("topic_configs")}
    assert not listed & {"__consumer_offsets", "__transaction_state"}


def test_topic_configs_and_offsets_retention(cluster, snapshot, connection):
    configs = by(snapshot.rows("topic_configs"), "topic")
    assert configs[ORDERS]["retention_ms"] == ORDERS_RETENTION_MS
    assert configs[PAYMENTS]["retention_ms"] == KAFKA_DEFAULT_RETENTION_MS
    assert {configs[t]["cleanup_policy"] for t in PRODUCED} == {"delete"}
    assert {configs[t]["retention_bytes"] for t in PRODUCED} == {-1}

    # Kafka's DescribeConfigs of a broker includes offsets.retention.minutes (default 7 days); the
    # snapshot takes it from there, and the fallback is not used.
    assert broker_offsets_retention(cluster.bootstrap) == 10080
    [broker] = snapshot.rows("broker_configs")
    assert (broker["offsets_retention_minutes"], broker["offsets_retention_source"]) == (10080, "broker")
    [other] = take_snapshot(connection, groups=[], topics=[ORDERS],
                            offsets_retention_fallback_minutes=1440).rows("broker_configs")
    assert (other["offsets_retention_minutes"], other["offsets_retention_source"]) == (10080, "broker")


def test_log_start_moves_after_delete_records(cluster, connection):
    create_topics(cluster.bootstrap, {"trimmed": (1, {})})
    produce_counts(cluster.bootstrap, "trimmed", [10])
    before = by(take_snapshot(connection, topics=["trimmed"]).rows("log_offset_snapshots"), "partition")
    with KafkaAdminClient(bootstrap_servers=[cluster.bootstrap]) as admin:
        admin.delete_records({KafkaTopicPartition("trimmed", 0): 6})
    after = by(take_snapshot(connection, topics=["trimmed"]).rows("log_offset_snapshots"), "partition")
    assert (before[0]["log_start_offset"], before[0]["log_end_offset"]) == (0, 10)
    assert (after[0]["log_start_offset"], after[0]["log_end_offset"]) == (6, 10)


def test_each_read_carries_its_time_offsets_before_log_offsets(snapshot):
    # a commit made while the snapshot runs is placed by these, not by snapshot_at
    fetched = [r["fetched_at"] for r in snapshot.rows("committed_offset_snapshots")]
    listed = [r["listed_at"] for r in snapshot.rows("log_offset_snapshots")]
    assert fetched and listed
    assert snapshot.snapshot_at <= min(fetched) and max(fetched) <= min(listed)


def test_max_timestamps_are_the_largest_record_timestamps_of_each_timestamp_type(cluster, connection):
    create_topics(cluster.bootstrap, {"stamped": (1, {"message.timestamp.type": "CreateTime", "retention.ms": "-1"}),
                                      "appended": (1, {"message.timestamp.type": "LogAppendTime"}),
                                      "unwritten": (1, {})})
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for stamp in (1_000_000, 3_000_000, 2_000_000):  # a mirror's old timestamps, out of order
        producer.produce("stamped", value=b"x", partition=0, timestamp=stamp)
    before = int(time.time() * 1000)
    producer.produce("appended", value=b"x", partition=0, timestamp=1_000_000)  # the broker stamps it
    assert producer.flush(30) == 0
    after = int(time.time() * 1000)
    snapshot = take_snapshot(connection, groups=[], topics=["stamped", "appended", "unwritten"])
    logs = by(snapshot.rows("log_offset_snapshots"), "topic")
    assert logs["stamped"]["max_timestamp_ms"] == 3_000_000  # the largest, not the last
    assert before <= logs["appended"]["max_timestamp_ms"] <= after
    assert logs["unwritten"]["max_timestamp_ms"] is None  # an empty partition has none
    types = {r["topic"]: r["message_timestamp_type"] for r in snapshot.rows("topic_configs")}
    assert types == {"stamped": "CreateTime", "appended": "LogAppendTime", "unwritten": "CreateTime"}
    assert not snapshot.errors


# -- errors stay per group or topic ----------------------------------------------------------

def join_with_raw_bytes(bootstrap: str, group: str, subscription: bytes, assignment: bytes,
                        session_timeout_ms: int = 30000) -> KafkaAdminClient:
    """Make `group` Stable with one consumer-protocol member whose subscription and assignment
    are exactly the given bytes, through real JoinGroup and SyncGroup requests. No client sends
    such bytes on its own, so the requests are built here; the returned client owns the link and
    never heartbeats."""
    client = KafkaAdminClient(bootstrap_servers=[bootstrap], client_id="raw-member")
    manager = client._manager  # kafka-python has no public way to send an arbitrary request

    async def send(request):
        return await manager.send(request, node_id=await client._find_coordinator_id(group))

    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription)]
    member_id = ""
    for _ in range(2):  # the first join may answer MEMBER_ID_REQUIRED with the id to use
        joined = manager.run(send, JoinGroupRequest(
            group_id=group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=30000, member_id=member_id,
            group_instance_id=None, protocol_type="consumer", protocols=protocols))
        member_id = joined.member_id
        if joined.error_code == 0:
            break
    assert joined.error_code == 0, joined
    synced = manager.run(send, SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=member_id, group_instance_id=None,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=assignment)]))
    assert synced.error_code == 0, synced
    return client


def subscription_v0(*topics: str) -> bytes:
    """A consumer-protocol subscription, version 0: the topics and no user data."""
    encoded = b"".join(len(topic).to_bytes(2, "big") + topic.encode() for topic in topics)
    return b"\x00\x00" + len(topics).to_bytes(4, "big") + encoded + b"\xff\xff\xff\xff"


def test_undecodable_member_bytes_give_null_columns_and_an_error_row(cluster, connection):
    # Kafka parses a consumer member's subscription itself: measured on Kafka 4.3.1, a JoinGroup
    # whose subscription does not parse is never answered (the coordinator logs the parse error),
    # so no member can hold such bytes. The assignment is opaque to Kafka: it can be garbled.
    subscription = subscription_v0(ORDERS)
    assignment = b"\x00\x00\x00\x00\x00\x09\x00"  # v0 claiming 9 topics, then one byte
    client = join_with_raw_bytes(cluster.bootstrap, "garbled-app", subscription, assignment)
    try:
        snapshot = take_snapshot(connection)
    finally:
        client.close()
    groups = by(snapshot.rows("group_snapshots"), "group")
    assert (groups["garbled-app"]["state"], groups["garbled-app"]["member_count"]) == ("Stable", 1)
    [member] = [m for m in snapshot.rows("group_member_snapshots") if m["group"] == "garbled-app"]
    assert (member["subscribed_topics"], member["assigned_partitions"]) == ([ORDERS], None)
    assert (member["subscription_bytes"], member["assignment_bytes"]) == (subscription, assignment)
    [error] = snapshot.errors
    assert (error["scope"], error["name"], error["operation"], error["error"]) == \
        ("group", "garbled-app", "DecodeAssignment", "DecodeError")
    assert "assignment.assigned_partitions" in error["message"] and member["member_id"] in error["message"]
    # The other groups are complete.
    assert sorted(by(snapshot.rows("group_member_snapshots"), "group")["live-app"]["subscribed_topics"]) == \
        [ORDERS, PAYMENTS]
    assert len([r for r in snapshot.rows("committed_offset_snapshots") if r["group"] == "live-app"]) == 5


def test_a_member_that_stops_heartbeating_leaves_after_its_session_timeout(cluster, connection):
    # A classic member that joined with session.timeout.ms=6000 (Kafka's minimum by default) and
    # then sends nothing: the coordinator removes it and the group becomes Empty, while the
    # member's connection stays open.
    client = join_with_raw_bytes(cluster.bootstrap, "silent-app", subscription_v0(ORDERS), b"",
                                 session_timeout_ms=6000)
    joined = time.monotonic()
    try:
        before = by(take_snapshot(connection, groups=["silent-app"], topics=[]).rows("group_snapshots"), "group")
        assert (before["silent-app"]["state"], before["silent-app"]["member_count"]) == ("Stable", 1)
        while True:
            after = take_snapshot(connection, groups=["silent-app"], topics=[])
            state = by(after.rows("group_snapshots"), "group")["silent-app"]
            if state["member_count"] == 0 or time.monotonic() - joined > 30:
                break
            time.sleep(0.5)
        left_after = time.monotonic() - joined
    finally:
        client.close()
    assert (state["state"], state["member_count"]) == ("Empty", 0)
    assert after.rows("group_member_snapshots") == []
    assert 5.5 <= left_after <= 20, f"the member left after {left_after:.1f} s"


def test_unknown_topic_is_an_error_row_and_the_other_topics_are_complete(cluster, connection):
    snapshot = take_snapshot(connection, groups=[], topics=[ORDERS, "no-such-topic"])
    [error] = snapshot.errors
    assert (error["scope"], error["name"], error["operation"], error["error"]) == \
        ("topic", "no-such-topic", "Metadata", "UNKNOWN_TOPIC_OR_PARTITION")
    offsets = by(snapshot.rows("log_offset_snapshots"), "topic", "partition")
    assert sorted(offsets) == [(ORDERS, 0), (ORDERS, 1), (ORDERS, 2)]
    assert [offsets[(ORDERS, p)]["log_end_offset"] for p in range(3)] == PRODUCED[ORDERS]
    assert [r["topic"] for r in snapshot.rows("topic_configs")] == [ORDERS]
    assert snapshot.rows("group_snapshots") == []


def test_a_group_that_cannot_be_asked_is_an_error_row_and_the_other_groups_are_complete(cluster, connection):
    # Two groups fail: one Kafka does not know (DescribeGroups answers GROUP_ID_NOT_FOUND) and one
    # no request can carry (not valid UTF-8, refused before sending).
    bad = "bad-\udcff"
    snapshot = take_snapshot(connection, groups=["live-app", bad, "stopped-app", "never-existed"],
                             topics=[ORDERS, "bad-\udcfe"])
    errors = by(snapshot.errors, "scope", "name")
    assert set(errors) == {("group", "bad-\\udcff"), ("topic", "bad-\\udcfe"), ("group", "never-existed")}
    assert (errors[("group", "never-existed")]["operation"], errors[("group", "never-existed")]["error"]) == \
        ("DescribeGroups", "GROUP_ID_NOT_FOUND")
    assert (errors[("group", "bad-\\udcff")]["operation"], errors[("group", "bad-\\udcff")]["error"]) == \
        ("DescribeGroups", "INVALID_GROUP_ID")
    assert (errors[("topic", "bad-\\udcfe")]["operation"], errors[("topic", "bad-\\udcfe")]["error"]) == \
        ("Metadata", "INVALID_TOPIC_EXCEPTION")
    groups = by(snapshot.rows("group_snapshots"), "group")
    assert set(groups) == {"live-app", "stopped-app"}
    assert (groups["live-app"]["state"], groups["stopped-app"]["state"]) == ("Stable", "Empty")
    committed = snapshot.rows("committed_offset_snapshots")
    assert len([r for r in committed if r["group"] == "live-app"]) == 5
    assert len([r for r in committed if r["group"] == "stopped-app"]) == 3
    assert [r["group"] for r in snapshot.rows("group_member_snapshots")] == ["live-app"]
    assert len(snapshot.rows("log_offset_snapshots")) == 3


def test_a_call_kafka_python_never_answers_is_cut_by_its_deadline(cluster, connection):
    # kafka-python 3.0.12 waits forever when the first request on a new connection cannot be
    # encoded; the client's per-call deadline stops it instead.
    started = time.monotonic()
    with open_admin(connection, timeout_s=10, request_timeout_s=1) as admin:
        with pytest.raises(Errors.KafkaConnectionError):
            admin.describe_groups(["live-app", "bad-\udcff"])
        assert admin.timed_out
    assert time.monotonic() - started < 10


def test_error_names_are_kafkas():
    assert error_name(Errors.GroupAuthorizationFailedError("denied")) == "GROUP_AUTHORIZATION_FAILED"
    assert error_name(15) == "COORDINATOR_NOT_AVAILABLE"
    assert error_name(69) == "GROUP_ID_NOT_FOUND"
    assert error_name(9999) == "ERROR_CODE_9999"
    # Where kafka-python's names are older than Kafka's.
    assert error_name(Errors.InvalidTopicError()) == "INVALID_TOPIC_EXCEPTION"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(Errors.KafkaTimeoutError("slow")) == "KafkaTimeoutError"


def test_a_known_group_deleted_since_is_asked_about_by_name_and_found_nowhere(cluster, connection):
    # A standalone group commits, then Kafka's own DeleteGroups removes it (as another tool would
    # after the lake's last ingest): ListGroups no longer lists it, and asked about by name, no
    # describe API knows it. A known group ListGroups does list is not asked about again.
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "deleted-elsewhere",
                          "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(ORDERS, 0, 1)], asynchronous=False)
    committer.close()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.delete_consumer_groups(["deleted-elsewhere"], request_timeout=15).values():
        future.result(timeout=15)
    snapshot = take_snapshot(connection, known_groups=["deleted-elsewhere", "stopped-app"], topics=[])
    groups = by(snapshot.rows("group_snapshots"), "group")
    assert "deleted-elsewhere" not in groups and "stopped-app" in groups
    errors = [(e["scope"], e["name"], e["operation"], e["error"]) for e in snapshot.errors
              if e["name"] in ("deleted-elsewhere", "stopped-app")]
    assert errors == [("group", "deleted-elsewhere", "DescribeGroups", "GROUP_ID_NOT_FOUND")]
    assert not [row for row in snapshot.rows("committed_offset_snapshots") if row["group"] == "deleted-elsewhere"]
