"""The product run as least-privilege principals against a broker with SASL/SCRAM and StandardAuthorizer.

One secured embedded broker for the module, with three users besides the admin (the super user
who creates topics, groups and ACLs):
- `monitor`: Describe on every group and topic but one (`secret`, denied), Read on
  `__consumer_offsets`, DescribeConfigs on the topics and the cluster. It ingests, snapshots and
  refreshes; it may not delete.
- `cleaner`: Delete on the groups named `app-*` (which also allows Describe), Describe on
  `orders`, Read on `payments` (which also allows Describe). It deletes what it may, and is
  refused the rest.
- `reader`: Read on `__consumer_offsets` and nothing else.

Every refusal names the ACL an operator adds, and the cleanup audits it. Kafka 4.3's checks are
KafkaApis.handleOffsetDeleteRequest (Delete on the group, Read on each topic),
handleDeleteGroupsRequest (Delete on the group), handleConsumerGroupDescribe (Describe on the group
and on every topic assigned to a member), handleFetchRequest (Read on the topic) and
ConfigHelper.handleDescribeConfigsRequest (DescribeConfigs on the cluster for a broker's configs).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
)

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.broker.security import BrokerSecurity
from offsets_platform.cleanup.apply import apply_plan
from offsets_platform.views.candidates import MODEL_TABLES
from offsets_platform.cleanup.plans import build_plan
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshot_collect import take_snapshot
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.kafka.errors import BrokerUnreachable, NotAuthorized
from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.project import default_project
from tests.cleanup.apply_helpers import QUIET, approved_plan, delete_group_action, plan_audit
from tests.cleanup.direct_helpers import audit_rows, run_cli

ORDERS, PAYMENTS, SECRET = "orders", "payments", "secret"
LIVE_848 = "live-848"  # a KIP-848 group on orders and secret, with a member for the whole module
REPORTS = "app-reports"  # a classic group that consumed orders and payments, then stopped: Empty
OFFSETS_TOPIC = "__consumer_offsets"
PRODUCED = 5  # messages in each partition


def allow(user: str, resource_type: ResourceType, name: str, operation: AclOperation,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL,
          permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(resource_type, name, pattern, f"User:{user}", "*", operation, permission)


MONITOR_ACLS = [
    allow("monitor", ResourceType.GROUP, "*", AclOperation.DESCRIBE),
    allow("monitor", ResourceType.TOPIC, "*", AclOperation.DESCRIBE),
    allow("monitor", ResourceType.TOPIC, SECRET, AclOperation.DESCRIBE, permission=AclPermissionType.DENY),
    allow("monitor", ResourceType.TOPIC, OFFSETS_TOPIC, AclOperation.READ),
    allow("monitor", ResourceType.TOPIC, "*", AclOperation.DESCRIBE_CONFIGS),
    allow("monitor", ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS),
]
CLEANER_ACLS = [
    allow("cleaner", ResourceType.GROUP, "app-", AclOperation.DELETE, ResourcePatternType.PREFIXED),
    allow("cleaner", ResourceType.TOPIC, ORDERS, AclOperation.DESCRIBE),
    allow("cleaner", ResourceType.TOPIC, PAYMENTS, AclOperation.READ),
]
READER_ACLS = [allow("reader", ResourceType.TOPIC, OFFSETS_TOPIC, AclOperation.READ)]


class SecuredCluster:
    """The module's broker, its admin's client settings and the KIP-848 member kept running."""

    def __init__(self, broker: EmbeddedBroker):
        self.broker = broker
        self.admin = broker.connection_as().confluent_config()
        self.member: Consumer | None = None

    def connection(self, user: str):
        return self.broker.connection_as(user)

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """Commit without joining (a standalone group, Empty), as the admin."""
        consumer = Consumer({**self.admin, "group.id": group, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        consumer.close()


def _produce(admin: dict, topic: str, partitions: int, per_partition: int) -> None:
    producer = Producer({**admin, "linger.ms": 5})
    for partition in range(partitions):
        for index in range(per_partition):
            producer.produce(topic, value=f"{topic}-{index}".encode(), partition=partition)
    assert producer.flush(30) == 0


def _consume_and_commit(admin: dict, group: str, topics: list[str], partitions: int, **config) -> Consumer:
    """A member of `group` that read every partition of `topics` and committed; returned running."""
    consumer = Consumer({**admin, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "log_level": 3, **config})
    consumer.subscribe(topics)
    deadline, seen = time.monotonic() + 60, set()
    while len(seen) < partitions:
        assert time.monotonic() < deadline, f"{group} read {sorted(seen)} only"
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            seen.add((message.topic(), message.partition()))
    consumer.commit(asynchronous=False)
    return consumer


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    security = BrokerSecurity.for_users("monitor", "cleaner", "reader")
    with EmbeddedBroker(tmp_path_factory.mktemp("secured"), security=security) as broker:
        cluster = SecuredCluster(broker)
        admin = AdminClient(cluster.admin)
        for future in admin.create_topics([NewTopic(ORDERS, 2, 1), NewTopic(PAYMENTS, 1, 1),
                                           NewTopic(SECRET, 1, 1)]).values():
            future.result(15)
        for future in admin.create_acls(MONITOR_ACLS + CLEANER_ACLS + READER_ACLS).values():
            future.result(15)
        for topic, partitions in ((ORDERS, 2), (PAYMENTS, 1), (SECRET, 1)):
            _produce(cluster.admin, topic, partitions, PRODUCED)
        _consume_and_commit(cluster.admin, REPORTS, [ORDERS, PAYMENTS], 3).close()
        # never polled again: librdkafka would leave the group after max.poll.interval.ms (5 min)
        cluster.member = _consume_and_commit(cluster.admin, LIVE_848, [ORDERS, SECRET], 3,
                                             **{"group.protocol": "consumer", "max.poll.interval.ms": 3_600_000})
        try:
            _wait_until_stable(cluster)
            yield cluster
        finally:
            cluster.member.close()


def _wait_until_stable(cluster: SecuredCluster) -> None:
    deadline = time.monotonic() + 30
    while True:
        with open_admin(cluster.connection("monitor"), 10, 10) as admin:
            listed = {g["group_id"]: g for g in admin.list_groups()}
        if listed.get(LIVE_848, {}).get("group_state") == "Stable":
            return
        assert time.monotonic() < deadline, listed
        cluster.member.poll(0.5)


def test_only_a_valid_login_gets_in(cluster):
    wrong = replace(cluster.connection("monitor"), sasl_password="not-the-password")
    with pytest.raises(BrokerUnreachable):
        with open_admin(wrong, 2, 2):
            pass


def run_plan_models(spark, lake) -> None:
    """A refresh of the models a cleanup plan reads, with every model they ref. The others
    (metrics, consumer status, losses) read only the lake, whoever filled it: here they would add
    nothing but time."""
    refs = {model.name: model.refs for model in default_project().models}
    needed, waiting = set(), list(MODEL_TABLES)
    while waiting:
        name = waiting.pop()
        if name not in needed:
            needed.add(name)
            waiting += refs[name]
    as_of = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    ModelRunner(spark, lake, variables={"as_of": as_of}, emit=lambda line: None).run_all(select=sorted(needed))


@pytest.fixture(scope="module")
def snapshot_lake(cluster, spark, tmp_path_factory):
    """A lake the monitor fills with an admin-API snapshot only (as on a cluster that hides
    `__consumer_offsets`), then the models a cleanup plan reads."""
    lake = lake_for_models(tmp_path_factory.mktemp("snapshot-lake"))
    result = snapshot_cluster(cluster.connection("monitor"), lake, emit=lambda line: None)
    run_plan_models(spark, lake)
    return lake, result


def test_a_describe_refused_for_one_topic_is_an_error_row_beside_the_listed_group(snapshot_lake):
    lake, result = snapshot_lake
    refused = [e for e in result.errors if e["name"] == LIVE_848]
    assert [(e["scope"], e["operation"], e["error"]) for e in refused] == \
        [("group", "ConsumerGroupDescribe", "TOPIC_AUTHORIZATION_FAILED")]
    assert "allows User:monitor Describe on every topic of group 'live-848'" in refused[0]["message"]
    listed = [g for g in lake.read_arrow("group_snapshots").to_pylist() if g["group"] == LIVE_848]
    assert [(g["group_type"], g["state"], g["member_count"]) for g in listed] == [("consumer", "Stable", None)]
    # OffsetFetch leaves out, without an error, the topics the caller may not describe
    fetched = {r["topic"] for r in lake.read_arrow("committed_offset_snapshots").to_pylist() if r["group"] == LIVE_848}
    assert fetched == {ORDERS}


def test_a_live_group_the_monitor_cannot_fully_describe_keeps_its_offsets(snapshot_lake):
    # A failed describe is not "no members" (docs/models.md): nothing of the group is stale nor expiring.
    lake, _ = snapshot_lake
    rows = [r for r in lake.read_arrow("expirable_offsets").to_pylist() if r["group_id"] == LIVE_848]
    assert {(r["topic"], r["partition_id"]) for r in rows} == {(ORDERS, 0), (ORDERS, 1)}
    assert not [r for r in rows if r["rule"] and r["rule"].endswith("unsubscribed_topic")], rows
    assert not [r for r in rows if r["is_expired"]], rows
    plan = build_plan(lake, "monitor")
    assert not [a for a in plan.actions if a.group == LIVE_848], plan.actions


def test_the_monitors_snapshot_refreshes_the_models(snapshot_lake):
    lake, _ = snapshot_lake
    states = {r["group_id"]: r["state"] for r in lake.read_arrow("group_state").to_pylist()}
    assert (states[REPORTS], states[LIVE_848]) == ("Empty", "Stable")
    committed = {(r["topic"], r["partition"]): r["committed_offset"]
                 for r in lake.read_arrow("committed_offset_snapshots").to_pylist() if r["group"] == REPORTS}
    lag = {(r["topic"], r["partition_id"]): r["lag_messages"]
           for r in lake.read_arrow("consumer_lag").to_pylist() if r["group_id"] == REPORTS}
    assert set(committed) == {(ORDERS, 0), (ORDERS, 1), (PAYMENTS, 0)}
    assert lag == {key: PRODUCED - offset for key, offset in committed.items()}


def test_the_monitor_ingests_the_log(cluster, tmp_path):
    # The models read the log's tables as they read the snapshot's (see snapshot_lake): a second
    # refresh would only repeat them.
    lake = lake_for_models(tmp_path / "lake")
    ingested = ingest_offsets_topic(cluster.connection("monitor"), lake, emit=lambda line: None)
    assert ingested.records_read > 0 and ingested.rejected == 0
    # Read on __consumer_offsets shows every group's commits, whatever the topic ACLs say
    commits = {(r["group"], r["topic"]) for r in lake.read_arrow("offset_commit_records").to_pylist()}
    assert {(LIVE_848, ORDERS), (LIVE_848, SECRET), (REPORTS, ORDERS), (REPORTS, PAYMENTS)} <= commits


def test_reading_the_log_without_its_acls_is_refused_naming_them(cluster, tmp_path):
    # The cleaner may not even describe __consumer_offsets.
    with pytest.raises(NotAuthorized, match=r"needs an ACL that allows User:cleaner Read on Topic '__consumer_offsets' "
                                            r"\(kafka-acls .*--allow-principal User:cleaner --operation Read "
                                            r"--topic __consumer_offsets\)"):
        ingest_offsets_topic(cluster.connection("cleaner"), lake_for_models(tmp_path / "a"), emit=lambda line: None)
    # The reader may, but librdkafka looks up the coordinator of the ingest consumer's group.id.
    with pytest.raises(NotAuthorized, match=r"FindCoordinator needs an ACL that allows User:reader Describe on "
                                            r"Group 'offsets-platform-ingest'"):
        ingest_offsets_topic(cluster.connection("reader"), lake_for_models(tmp_path / "b"), emit=lambda line: None)


def test_a_snapshot_without_describe_configs_records_the_acl_it_needs(cluster):
    snapshot = take_snapshot(cluster.connection("cleaner"), groups=[], topics=[])
    assert [(e["scope"], e["operation"], e["error"]) for e in snapshot.errors] == \
        [("broker", "DescribeConfigs", "CLUSTER_AUTHORIZATION_FAILED")]
    assert "allows User:cleaner DescribeConfigs on Cluster 'kafka-cluster' (kafka-acls " in snapshot.errors[0]["message"]
    assert "--operation DescribeConfigs --cluster)" in snapshot.errors[0]["message"]
    assert snapshot.rows("broker_configs")[0]["offsets_retention_source"] == "fallback"


def _as(monkeypatch, cluster: SecuredCluster, user: str, home) -> None:
    """The command line's settings: the cluster and the user's SASL login from the environment."""
    connection = cluster.connection(user)
    for name, value in (("BOOTSTRAP_SERVERS", connection.bootstrap_servers),
                        ("SECURITY_PROTOCOL", connection.security_protocol),
                        ("SASL_MECHANISM", connection.sasl_mechanism), ("SASL_USERNAME", user),
                        ("SASL_PASSWORD", connection.sasl_password), ("HOME", str(home)), ("USER", user)):
        monkeypatch.setenv(f"OFFSETS_PLATFORM_{name}", value)


def test_the_monitor_may_not_delete_and_the_cleaner_may(cluster, monkeypatch, capsys, tmp_path):
    group = "app-direct"
    cluster.commit(group, {(PAYMENTS, 0): 3, (ORDERS, 0): 2})
    _as(monkeypatch, cluster, "monitor", tmp_path)
    status, out, _ = run_cli(["delete-offsets", "--group", group, "--topic", PAYMENTS], capsys)
    delete_acl = (f"allows User:monitor Delete on Group '{group}' (kafka-acls --bootstrap-server HOST:PORT --add "
                  f"--allow-principal User:monitor --operation Delete --group {group})")
    assert status == 1 and out[1] == f"Error: Group authorization failed. OffsetDelete needs an ACL that {delete_acl}."
    status, out, _ = run_cli(["delete-groups", "--group", group], capsys)
    assert status == 1 and out[2] == (f"* Group '{group}' could not be deleted due to: GROUP_AUTHORIZATION_FAILED: "
                                      f"Group authorization failed. DeleteGroups needs an ACL that {delete_acl}.")
    refused = audit_rows(tmp_path, group)
    assert [(r["action"], r["topic"], r["outcome"], r["error"], r["requested_by"]) for r in refused] == [
        ("OffsetDelete", PAYMENTS, "failed", "GROUP_AUTHORIZATION_FAILED", "monitor"),
        ("DeleteGroups", None, "failed", "GROUP_AUTHORIZATION_FAILED", "monitor")]
    assert all(delete_acl in row["detail"] for row in refused)

    _as(monkeypatch, cluster, "cleaner", tmp_path)
    status, out, _ = run_cli(["delete-offsets", "--group", group, "--topic", f"{ORDERS}:0", "--topic", PAYMENTS],
                             capsys)
    assert status == 1, out  # Read on payments only
    rows = {(r["topic"], r["outcome"], r["error"]): r["detail"] for r in audit_rows(tmp_path, group)[2:]}
    assert set(rows) == {(PAYMENTS, "deleted", None), (ORDERS, "failed", "TOPIC_AUTHORIZATION_FAILED")}
    assert (f"OffsetDelete needs an ACL that allows User:cleaner Read on Topic '{ORDERS}' (kafka-acls "
            f"--bootstrap-server HOST:PORT --add --allow-principal User:cleaner --operation Read --topic {ORDERS})"
            in rows[(ORDERS, "failed", "TOPIC_AUTHORIZATION_FAILED")])
    assert run_cli(["delete-groups", "--group", group], capsys)[:2] == \
        (0, [f"Deletion of requested consumer groups ('{group}') was successful."])


def test_a_plan_applied_without_the_acls_is_refused_and_audited_then_applied_by_the_cleaner(cluster, tmp_path):
    mine, theirs = "app-planned", "other-team"
    cluster.commit(mine, {(PAYMENTS, 0): 4})
    cluster.commit(theirs, {(PAYMENTS, 0): 1})
    lake = lake_for_models(tmp_path / "lake")
    plan = approved_plan(lake, [delete_group_action(cluster.connection("monitor"), group) for group in (mine, theirs)])

    refused = apply_plan(lake, cluster.connection("monitor"), plan.plan_id, requested_by="monitor", **QUIET)
    assert refused.failed and refused.refused == 2
    assert {(r["group"], r["outcome"], r["error"]) for r in refused.outcomes} == {
        (mine, "failed", "GROUP_AUTHORIZATION_FAILED"), (theirs, "failed", "GROUP_AUTHORIZATION_FAILED")}
    for row in refused.outcomes:
        assert f"DeleteGroups needs an ACL that allows User:monitor Delete on Group '{row['group']}'" in row["detail"]

    applied = apply_plan(lake, cluster.connection("cleaner"), plan.plan_id, requested_by="cleaner", **QUIET)
    assert applied.failed and applied.refused == 1  # the cleaner may not even read the other team's group
    outcomes = {r["group"]: r for r in applied.outcomes}
    assert (outcomes[mine]["outcome"], outcomes[mine]["error"]) == ("deleted", None)
    assert (outcomes[theirs]["outcome"], outcomes[theirs]["error"]) == ("skipped", "GROUP_AUTHORIZATION_FAILED")
    assert f"allows User:cleaner Describe on Group '{theirs}'" in outcomes[theirs]["detail"]
    assert [(r["requested_by"], r["group"], r["outcome"]) for r in plan_audit(lake, plan.plan_id)
            if r["outcome"] != "sending"] == [("monitor", mine, "failed"), ("monitor", theirs, "failed"),
                                              ("cleaner", theirs, "skipped"), ("cleaner", mine, "deleted")]
