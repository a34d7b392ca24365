"""The end of a run as the broker reports it (admin APIs only), and the checks the run promises.

Everything here is read back from the broker: ListOffsets (log start and end), OffsetFetch,
DescribeGroups (member subscriptions decoded with the project's own consumer-protocol
decoder), ListGroups and DescribeConfigs. `verify` fails the run when the cluster is not in the
state `LiveWorkload` describes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafka.admin import KafkaAdminClient

from offsets_platform.codec.consumer_protocol import decode_subscription

from .clients import committed_offsets, describe_groups_raw, log_offsets
from .producer import TickProducer
from .result import LiveGroup, LiveTopic
from .retention import RetentionWatch
from .scenarios import CHANGED_GROUP, CHANGED_KEPT_TOPIC, CHANGED_LEFT_TOPIC, GROUPS, TOPICS


class LiveWorkloadError(RuntimeError):
    """The cluster did not end in the state the live workload promises."""


@dataclass
class EndState:
    topics: dict[str, LiveTopic]
    groups: dict[str, LiveGroup]
    observations: dict[str, object]


def expected_states(kept_alive: bool) -> dict[str, str]:
    return {g: "Stable" if kept_alive and spec.keep_alive else "Empty" for g, spec in GROUPS.items()}


def wait_for_states(admin: KafkaAdminClient, expected: dict[str, str], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        states = {g: d["state"] for g, d in describe_groups_raw(admin, list(expected)).items()}
        if all(states.get(g) == s for g, s in expected.items()):
            return
        if time.monotonic() > deadline:
            raise LiveWorkloadError(f"groups did not reach {expected} within {timeout_s} s: {states}")
        time.sleep(0.2)


def member_topics(described: dict) -> tuple[str, ...]:
    """Union of the topics the live members of a "consumer" group subscribe to."""
    if described["protocol_type"] != "consumer":
        return ()
    topics = set()
    for member in described["members"]:
        topics.update(decode_subscription(member["metadata"], f"DescribeGroups {member['member_id']}")["topics"])
    return tuple(sorted(topics))


def describe_end_state(admin: KafkaAdminClient, expected: dict[str, str], configs: dict[str, dict[str, str]],
                       producer: TickProducer, watch: RetentionWatch,
                       last_subscriptions: dict[str, tuple[str, ...]]) -> EndState:
    topics = {}
    for name, spec in TOPICS.items():
        start, end = log_offsets(admin, name, spec.partitions)
        produced = {p: producer.counts.get((name, p), 0) for p in range(spec.partitions)}
        digests = producer.partition_digests()
        topics[name] = LiveTopic(
            name=name, partitions=spec.partitions, configs=configs[name], short_retention=spec.short_retention,
            produced=sum(produced.values()), produced_by_partition=produced,
            digests_by_partition={p: digests[(name, p)] for p in range(spec.partitions) if (name, p) in digests},
            log_start_offsets=start, log_end_offsets=end, first_deletion_s=watch.first_deletion_s.get(name))
    described = describe_groups_raw(admin, list(GROUPS))
    groups = {}
    for group, spec in GROUPS.items():
        committed = committed_offsets(admin, group)
        committed_topics = tuple(sorted({t for t, _ in committed}))
        live = member_topics(described[group])
        subscribed = live or last_subscriptions.get(group, ())
        left = tuple(t for t in committed_topics if t not in subscribed) if spec.kind == "consumer" else ()
        groups[group] = LiveGroup(
            group=group, scenario=spec.scenario, kind=spec.kind, protocol_type=described[group]["protocol_type"],
            expected_state=expected[group], members=len(described[group]["members"]), subscribed_topics=subscribed,
            committed_topics=committed_topics, left_behind_topics=left, kept_alive=expected[group] == "Stable",
            committed=committed, story=spec.story)
    listed = {g["group_id"]: g for g in admin.list_groups()}
    standalone = listed.get("ledger-standalone")
    connect = described["connect-sink"]
    observations = {
        "standalone_group_listing": {"listed": standalone is not None,
                                     "protocol_type": standalone and standalone.get("protocol_type"),
                                     "state": standalone and standalone.get("group_state")},
        "connect_group": {"protocol_type": connect["protocol_type"], "protocol": connect["protocol"],
                          "state": connect["state"], "members": len(connect["members"])},
        "retention_first_deletion_s": dict(watch.first_deletion_s),
    }
    return EndState(topics, groups, observations)


def verify(end: EndState, expected: dict[str, str]) -> None:
    """Raise LiveWorkloadError listing every promise the cluster does not keep."""
    problems = []
    groups, topics = end.groups, end.topics
    orders_end = {("orders", p): o for p, o in topics["orders"].log_end_offsets.items()}
    if {tp: o for tp, o in groups["orders-active"].committed.items() if tp[0] == "orders"} != orders_end:
        problems.append(f"orders-active committed {groups['orders-active'].committed} != log end {orders_end}")
    invoices_start = topics["invoices"].log_start_offsets
    if not any(o < invoices_start[p] for (t, p), o in groups["billing-slow"].committed.items() if t == "invoices"):
        problems.append(f"billing-slow committed {groups['billing-slow'].committed} "
                        f"not below log start {invoices_start}")
    changed = groups[CHANGED_GROUP]
    if not {CHANGED_KEPT_TOPIC, CHANGED_LEFT_TOPIC} <= set(changed.committed_topics):
        problems.append(f"{CHANGED_GROUP} committed topics {changed.committed_topics}")
    if changed.subscribed_topics != (CHANGED_KEPT_TOPIC,) or changed.left_behind_topics != (CHANGED_LEFT_TOPIC,):
        problems.append(f"{CHANGED_GROUP} subscribes {changed.subscribed_topics}, left {changed.left_behind_topics}")
    for group in ("reports-stopped", "ledger-standalone", "connect-sink"):
        if not groups[group].committed:
            problems.append(f"{group} has no committed offsets")
    for group, state in expected.items():
        if (groups[group].members > 0) != (state == "Stable"):
            problems.append(f"{group}: {groups[group].members} members but expected {state}")
    if problems:
        raise LiveWorkloadError("the cluster is not in the promised state: " + "; ".join(problems))
