"""The end of a run as the broker reports it (admin APIs only), and the checks the run promises.

Everything here is read back from the broker: ListOffsets (log start and end), OffsetFetch,
ListGroups v5 (every group's type and state), DescribeGroups for classic groups (member
subscriptions decoded with the project's own consumer-protocol decoder), ConsumerGroupDescribe
for KIP-848 groups, DescribeTransactions and DescribeConfigs. `verify` fails the run when the
cluster is not in the state `LiveWorkload` describes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from offsets_platform.codec.consumer_protocol import decode_subscription

from .clients import committed_offsets, describe_groups_raw, describe_kip848_groups, list_groups_typed, log_offsets
from .jvm_members import JvmMembers
from .producer import TickProducer
from .result import LiveGroup, LiveTopic
from .retention import RetentionWatch
from .scenarios import (CHANGED_GROUP, CHANGED_KEPT_TOPIC, CHANGED_LEFT_TOPIC, CLASSIC, GROUPS, KIP848_REGEX, REGEX,
                        STREAMS_INPUT, STREAMS_OUTPUT, TOPICS, TRANSACTIONAL_OUTPUT)


class LiveWorkloadError(RuntimeError):
    """The cluster did not end in the state the live workload promises."""


@dataclass
class EndState:
    topics: dict[str, LiveTopic]
    groups: dict[str, LiveGroup]
    observations: dict[str, object]


def expected_states(kept_alive: bool) -> dict[str, str]:
    return {g: "Stable" if kept_alive and spec.keep_alive else "Empty" for g, spec in GROUPS.items()}


def wait_for_states(admin: KafkaAdminClient, expected: dict[str, str], timeout_s: float = 20.0) -> None:
    """Poll ListGroups until every group is in its expected state (ListGroups answers for every
    group type; DescribeGroups only for classic groups)."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = list_groups_typed(admin)
        states = {g: listed.get(g, {}).get("group_state") for g in expected}
        if states == expected:
            return
        if time.monotonic() > deadline:
            raise LiveWorkloadError(f"groups did not reach {expected} within {timeout_s} s: {states}")
        time.sleep(0.2)


def member_topics(described: dict) -> tuple[str, ...]:
    """Union of the topics the live members of a classic "consumer" group subscribe to."""
    if described["protocol_type"] != "consumer":
        return ()
    topics = set()
    for member in described["members"]:
        topics.update(decode_subscription(member["metadata"], f"DescribeGroups {member['member_id']}")["topics"])
    return tuple(sorted(topics))


def describe_end_state(admin: KafkaAdminClient, cadmin: AdminClient, expected: dict[str, str],
                       configs: dict[str, dict[str, str]], producer: TickProducer, watch: RetentionWatch,
                       last_subscriptions: dict[str, tuple[str, ...]], jvms: JvmMembers | None,
                       share_printed: dict[str, int], transactional_id: str) -> EndState:
    """What the broker reports at the end. `share_printed`: records each share consumer printed."""
    topics = {}
    digests = producer.partition_digests()
    for name, spec in TOPICS.items():
        start, end = log_offsets(admin, name, spec.partitions)
        produced = {p: producer.counts.get((name, p), 0) for p in range(spec.partitions)}
        topics[name] = LiveTopic(
            name=name, partitions=spec.partitions, configs=configs[name], short_retention=spec.short_retention,
            produced=sum(produced.values()), produced_by_partition=produced,
            digests_by_partition={p: digests[(name, p)] for p in range(spec.partitions) if (name, p) in digests},
            log_start_offsets=start, log_end_offsets=end, first_deletion_s=watch.first_deletion_s.get(name))
    listed = list_groups_typed(admin)
    classic = describe_groups_raw(admin, [g for g, s in GROUPS.items() if s.group_type == "classic"])
    kip848 = describe_kip848_groups(cadmin, [g for g, s in GROUPS.items() if s.group_type == "consumer"])
    groups = {}
    for group, spec in GROUPS.items():
        committed = committed_offsets(admin, group)
        committed_topics = tuple(sorted({t for t, _ in committed}))
        seen = listed.get(group, {})
        if group in classic:
            members = len(classic[group]["members"])
            subscribed = member_topics(classic[group]) or last_subscriptions.get(group, ())
        elif group in kip848:
            members = len(kip848[group]["members"])
            assigned = {t for m in kip848[group]["members"] for t, _ in m["assignment"]}
            subscribed = tuple(sorted(assigned)) if spec.kind == KIP848_REGEX else last_subscriptions[group]
            subscribed = subscribed or spec.topics  # Empty: its last subscription
        else:  # share, streams: the Java member, while it runs and the group lists as Stable
            running = jvms is not None and group in jvms.processes and jvms.processes[group].running
            members = int(running and seen.get("group_state") == "Stable")
            subscribed = spec.topics
        left = tuple(t for t in committed_topics if t not in subscribed) if spec.kind == CLASSIC else ()
        groups[group] = LiveGroup(
            group=group, scenario=spec.scenario, kind=spec.kind, group_type=seen.get("group_type") or "",
            protocol_type=seen.get("protocol_type") or "", expected_state=expected[group],
            state=seen.get("group_state") or "", members=members, subscribed_topics=tuple(subscribed),
            subscription_regex=REGEX if spec.kind == KIP848_REGEX else None, committed_topics=committed_topics,
            left_behind_topics=left, kept_alive=expected[group] == "Stable", committed=committed, story=spec.story)
    standalone = listed.get("ledger-standalone")
    connect = classic["connect-sink"]
    transaction = admin.describe_transactions([transactional_id]).get(transactional_id)
    observations = {
        "group_types": {g: listed.get(g, {}).get("group_type") for g in GROUPS},
        "standalone_group_listing": {"listed": standalone is not None,
                                     "protocol_type": standalone and standalone.get("protocol_type"),
                                     "group_type": standalone and standalone.get("group_type"),
                                     "state": standalone and standalone.get("group_state")},
        "connect_group": {"protocol_type": connect["protocol_type"], "protocol": connect["protocol"],
                          "state": connect["state"], "members": len(connect["members"])},
        "kip848_assignor": {g: d["assignor"] for g, d in kip848.items()},
        "transaction": {"transactional_id": transactional_id,
                        "state": getattr(transaction.state, "value", transaction.state) if transaction else None,
                        "producer_id": transaction.producer_id if transaction else None},
        "share_records_printed": dict(share_printed),
        "retention_first_deletion_s": dict(watch.first_deletion_s),
    }
    return EndState(topics, groups, observations)


def verify(end: EndState, expected: dict[str, str]) -> None:
    """Raise LiveWorkloadError listing every promise the cluster does not keep."""
    problems = []
    groups, topics = end.groups, end.topics

    def at_log_end(group: str, topic_names) -> None:
        want = {(t, p): o for t in topic_names for p, o in topics[t].log_end_offsets.items()}
        got = {tp: o for tp, o in groups[group].committed.items() if tp[0] in topic_names}
        if got != want:
            problems.append(f"{group} committed {got} != log end {want}")

    at_log_end("orders-active", ("orders",))
    at_log_end("payments-kip848", ("payments",))
    at_log_end("clickstream-regex", GROUPS["clickstream-regex"].topics)
    at_log_end("fx-transactional", ("fx-rates",))
    at_log_end("wordcount-streams", (STREAMS_INPUT,))
    invoices_start = topics["invoices"].log_start_offsets
    if not any(o < invoices_start[p] for (t, p), o in groups["billing-slow"].committed.items() if t == "invoices"):
        problems.append(f"billing-slow committed {groups['billing-slow'].committed} "
                        f"not below log start {invoices_start}")
    changed = groups[CHANGED_GROUP]
    if not {CHANGED_KEPT_TOPIC, CHANGED_LEFT_TOPIC} <= set(changed.committed_topics):
        problems.append(f"{CHANGED_GROUP} committed topics {changed.committed_topics}")
    left_start = topics[CHANGED_LEFT_TOPIC].log_start_offsets
    if not any(o < left_start[p] for (t, p), o in changed.committed.items() if t == CHANGED_LEFT_TOPIC):
        problems.append(f"{CHANGED_GROUP} committed {changed.committed} not below the {CHANGED_LEFT_TOPIC} "
                        f"log start {left_start}")
    if changed.subscribed_topics != (CHANGED_KEPT_TOPIC,) or changed.left_behind_topics != (CHANGED_LEFT_TOPIC,):
        problems.append(f"{CHANGED_GROUP} subscribes {changed.subscribed_topics}, left {changed.left_behind_topics}")
    for group in ("reports-stopped", "ledger-standalone", "connect-sink"):
        if not groups[group].committed:
            problems.append(f"{group} has no committed offsets")
    for output in (TRANSACTIONAL_OUTPUT, STREAMS_OUTPUT):
        if not any(topics[output].log_end_offsets.values()):
            problems.append(f"{output} is empty: its application wrote nothing")
    for group, printed in end.observations["share_records_printed"].items():
        if printed < topics[GROUPS[group].topics[0]].produced:
            problems.append(f"{group} received {printed} records of {topics[GROUPS[group].topics[0]].produced}")
    if groups["alerts-share"].committed:
        problems.append(f"the share group has committed offsets: {groups['alerts-share'].committed}")
    for group, state in expected.items():
        found = groups[group]
        if found.state != state:
            problems.append(f"{group}: state {found.state!r}, expected {state}")
        if found.group_type != GROUPS[group].group_type:
            problems.append(f"{group}: ListGroups type {found.group_type!r}, expected {GROUPS[group].group_type}")
        if (found.members > 0) != (state == "Stable"):
            problems.append(f"{group}: {found.members} members but expected {state}")
    if problems:
        raise LiveWorkloadError("the cluster is not in the promised state: " + "; ".join(problems))
