"""A group as the broker has it now (`describe GROUP --live`; see `offsets_platform.views`).

The rows and their order are those of Kafka's `kafka-consumer-groups --describe`
(ConsumerGroupCommand.collectGroupsOffsets in Kafka 4.x): first the partitions assigned to a
member, members with the most partitions first, each member's partitions by topic and
partition; then the partitions with a committed offset that no member is assigned, by topic and
partition. The log end offset is ListOffsets "latest"; the lag is the log end offset minus the
committed offset, unknown ("-") when either is.
"""

from __future__ import annotations

from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.kafka.admin_describe import DEAD, MemberDescription
from offsets_platform.kafka.group_calls import live_group, log_offsets
from offsets_platform.settings import KafkaConnection
from offsets_platform.views import GroupView, subscription

TIMEOUT_S = 15.0


def describe_group(connection: KafkaConnection, group: str, timeout_s: float = TIMEOUT_S) -> GroupView | None:
    """The group now: state, offsets with lag, members; None when no group API knows it and it
    has no committed offsets (Kafka 4.x's tool: "Group g not found.").

    Raises:
        BrokerUnreachable: the cluster did not answer.
        GroupCallError: the broker answered the describe or OffsetFetch with an error for the group.
    """
    with open_admin(connection, timeout_s, request_timeout_s=timeout_s) as admin:
        live = live_group(admin, group)
        if live.state == DEAD and not live.committed_offsets:
            return None
        assigned = _assigned_rows(live.members)
        unassigned = sorted(set(live.committed_offsets) - {(row["topic"], row["partition_id"]) for row in assigned})
        rows = assigned + [{"topic": topic, "partition_id": partition, "consumer_id": None, "host": None,
                            "client_id": None} for topic, partition in unassigned]
        logs = log_offsets(admin, [(row["topic"], row["partition_id"]) for row in rows])
    for row in rows:
        current = live.committed_offsets.get((row["topic"], row["partition_id"]))
        log = logs.get((row["topic"], row["partition_id"]))
        end = log.log_end if log is not None else None
        row.update(current_offset=current, log_end_offset=end,
                   lag=end - current if current is not None and end is not None else None)
    members = [{"consumer_id": m.member_id, "group_instance_id": m.group_instance_id, "host": m.client_host,
                "client_id": m.client_id, "partitions": _partition_count(m),
                "subscription": subscription(m.subscribed_topics, m.subscribed_topic_regex)} for m in live.members]
    return GroupView(group_id=group, state=live.state, kind=live.group_type or "", protocol=live.protocol_type,
                     source=f"the broker at {connection.bootstrap_servers}, now", offsets=rows, members=members)


def _assigned_rows(members: tuple[MemberDescription, ...]) -> list[dict]:
    # Python's sort is stable, as Java's: members with equal counts keep the broker's order.
    with_partitions = sorted((m for m in members if _partition_count(m)), key=lambda m: -_partition_count(m))
    return [{"topic": entry["topic"], "partition_id": partition, "consumer_id": member.member_id,
             "host": member.client_host, "client_id": member.client_id}
            for member in with_partitions
            for entry in sorted(member.assigned_partitions, key=lambda e: e["topic"])
            for partition in sorted(entry["partitions"])]


def _partition_count(member: MemberDescription) -> int:
    return sum(len(entry["partitions"]) for entry in member.assigned_partitions or [])
