"""Value decoders for the streams group records (KIP-1071, key types 17 and 19-23).

Layouts follow Kafka 4.3's group-coordinator schema files (StreamsGroup*Value.json), all at
version 0 and flexible. No Kafka release defines type 18 (it was used only during KIP-1071's
development), so it is an unknown type here as it is for Kafka's loader.

Which topics a streams group consumes is in its topology (type 23): every subtopology's
SourceTopics, SourceTopicRegex and RepartitionSourceTopics; ``subscribed_topics`` collects the
named ones for the typed column. Each decoder takes a reader positioned after the value
version and returns the value fields under snake_case names.
"""

from __future__ import annotations

from ._flexible import nullable_int32_array, tagged_int32, tagged_int64, text, texts
from .reader import ByteReader


def _key_values(reader: ByteReader, field: str, nullable: bool = False) -> list[dict] | None:
    # []{Key string, Value string}: KeyValue, LastAssignmentConfig and TopicConfig alike.
    if nullable:
        count = reader.nullable_array_length(field, flexible=True, min_item_size=3)
        if count is None:
            return None
    else:
        count = reader.array_length(field, flexible=True, min_item_size=3)
    items = []
    for i in range(count):
        path = f"{field}[{i}]"
        items.append({"key": text(reader, f"{path}.key"), "value": text(reader, f"{path}.value")})
        reader.tagged_fields(path)
    return items


def _nullable_key_values(reader: ByteReader, field: str) -> list[dict] | None:
    return _key_values(reader, field, nullable=True)


def streams_group_metadata(reader: ByteReader, version: int) -> dict:
    """StreamsGroupMetadataValue: Epoch, MetadataHash; tagged ValidatedTopologyEpoch (0), LastAssignmentConfigs (1).

    Kafka after 4.3 adds more tagged fields here (4.4: tags 2 and 3) without a new version;
    like Kafka's own reader, unknown tags are skipped.
    """
    value = {"epoch": reader.int32("epoch"), "metadata_hash": reader.int64("metadata_hash")}
    tagged = reader.tagged_fields("", {0: ("validated_topology_epoch", tagged_int32),
                                         1: ("last_assignment_configs", _nullable_key_values)})
    value["validated_topology_epoch"] = tagged.get("validated_topology_epoch", -1)
    value["last_assignment_configs"] = tagged.get("last_assignment_configs")
    return value


def _endpoint(reader: ByteReader, field: str) -> dict | None:
    # An untagged nullable struct starts with an int8: negative = null (Kafka's generated
    # reader tests "< 0"; it writes -1 for null and 1 for present).
    if reader.int8(f"{field}.present") < 0:
        return None
    endpoint = {"host": text(reader, f"{field}.host"), "port": reader.uint16(f"{field}.port")}
    reader.tagged_fields(field)
    return endpoint


def streams_group_member_metadata(reader: ByteReader, version: int) -> dict:
    """StreamsGroupMemberMetadataValue: the member's identity, topology epoch, endpoint and tags."""
    value = {
        "instance_id": reader.string("instance_id", flexible=True),
        "rack_id": reader.string("rack_id", flexible=True),
        "client_id": text(reader, "client_id"),
        "client_host": text(reader, "client_host"),
        "rebalance_timeout_ms": reader.int32("rebalance_timeout_ms"),
        "topology_epoch": reader.int32("topology_epoch"),
        "process_id": text(reader, "process_id"),
        "user_endpoint": _endpoint(reader, "user_endpoint"),
        "client_tags": _key_values(reader, "client_tags"),
    }
    reader.tagged_fields("")
    return value


def streams_group_target_assignment_metadata(reader: ByteReader, version: int) -> dict:
    """StreamsGroupTargetAssignmentMetadataValue: AssignmentEpoch; tagged AssignmentTimestamp (tag 0, 4.3)."""
    epoch = reader.int32("assignment_epoch")
    tagged = reader.tagged_fields("", {0: ("assignment_timestamp", tagged_int64)})
    return {"assignment_epoch": epoch, "assignment_timestamp": tagged.get("assignment_timestamp", 0)}


def _task_ids(reader: ByteReader, field: str, assignment_epochs: bool) -> list[dict]:
    # []TaskIds {SubtopologyId string, Partitions []int32}; in the current-assignment record the
    # struct also has the tagged, nullable AssignmentEpochs (tag 0).
    tasks = []
    for i in range(reader.array_length(field, flexible=True, min_item_size=3)):
        path = f"{field}[{i}]"
        task = {
            "subtopology_id": text(reader, f"{path}.subtopology_id"),
            "partitions": reader.int32_array(f"{path}.partitions", flexible=True),
        }
        if assignment_epochs:
            tagged = reader.tagged_fields(path, {0: ("assignment_epochs", nullable_int32_array)})
            task["assignment_epochs"] = tagged.get("assignment_epochs")
        else:
            reader.tagged_fields(path)
        tasks.append(task)
    return tasks


_TASK_KINDS = ("active_tasks", "standby_tasks", "warmup_tasks")


def streams_group_target_assignment_member(reader: ByteReader, version: int) -> dict:
    """StreamsGroupTargetAssignmentMemberValue: ActiveTasks, StandbyTasks, WarmupTasks."""
    value = {kind: _task_ids(reader, kind, assignment_epochs=False) for kind in _TASK_KINDS}
    reader.tagged_fields("")
    return value


def streams_group_current_member_assignment(reader: ByteReader, version: int) -> dict:
    """StreamsGroupCurrentMemberAssignmentValue: epochs, State, tasks held and tasks pending revocation."""
    value = {
        "member_epoch": reader.int32("member_epoch"),
        "previous_member_epoch": reader.int32("previous_member_epoch"),
        "state": reader.int8("state"),
    }
    for kind in (*_TASK_KINDS, *(f"{k}_pending_revocation" for k in _TASK_KINDS)):
        value[kind] = _task_ids(reader, kind, assignment_epochs=True)
    reader.tagged_fields("")
    return value


def _int16_array(reader: ByteReader, field: str) -> list[int]:
    return [reader.int16(f"{field}[{i}]")
            for i in range(reader.array_length(field, flexible=True, min_item_size=2))]


def _topic_infos(reader: ByteReader, field: str) -> list[dict]:
    # TopicInfo: Name, Partitions int32, ReplicationFactor int16, TopicConfigs []{key, value}.
    topics = []
    for i in range(reader.array_length(field, flexible=True, min_item_size=9)):
        path = f"{field}[{i}]"
        topics.append({
            "name": text(reader, f"{path}.name"),
            "partitions": reader.int32(f"{path}.partitions"),
            "replication_factor": reader.int16(f"{path}.replication_factor"),
            "topic_configs": _key_values(reader, f"{path}.topic_configs"),
        })
        reader.tagged_fields(path)
    return topics


def _copartition_groups(reader: ByteReader, field: str) -> list[dict]:
    groups = []
    for i in range(reader.array_length(field, flexible=True, min_item_size=4)):
        path = f"{field}[{i}]"
        groups.append({
            "source_topics": _int16_array(reader, f"{path}.source_topics"),
            "source_topic_regex": _int16_array(reader, f"{path}.source_topic_regex"),
            "repartition_source_topics": _int16_array(reader, f"{path}.repartition_source_topics"),
        })
        reader.tagged_fields(path)
    return groups


def streams_group_topology(reader: ByteReader, version: int) -> dict:
    """StreamsGroupTopologyValue: Epoch (the topology's, not the group's) and the Subtopologies."""
    epoch = reader.int32("epoch")
    subtopologies = []
    for i in range(reader.array_length("subtopologies", flexible=True, min_item_size=8)):
        path = f"subtopologies[{i}]"
        subtopologies.append({
            "subtopology_id": text(reader, f"{path}.subtopology_id"),
            "source_topics": texts(reader, f"{path}.source_topics"),
            "source_topic_regex": texts(reader, f"{path}.source_topic_regex"),
            "state_changelog_topics": _topic_infos(reader, f"{path}.state_changelog_topics"),
            "repartition_sink_topics": texts(reader, f"{path}.repartition_sink_topics"),
            "repartition_source_topics": _topic_infos(reader, f"{path}.repartition_source_topics"),
            "copartition_groups": _copartition_groups(reader, f"{path}.copartition_groups"),
        })
        reader.tagged_fields(path)
    reader.tagged_fields("")
    return {"epoch": epoch, "subtopologies": subtopologies}


def subscribed_topics(subtopologies: list[dict] | None) -> list[str] | None:
    """The topics a topology reads by name: source and repartition source topics, first seen first.

    Args:
        subtopologies: A decoded topology's "subtopologies", or None (tombstone).

    Returns:
        The distinct topic names, or None for None. Topics matched by SourceTopicRegex are not
        named in the record; ``subscribed_topic_regexes`` gives the regexes.
    """
    if subtopologies is None:
        return None
    names = {}
    for sub in subtopologies:
        for name in sub["source_topics"]:
            names[name] = None
        for topic in sub["repartition_source_topics"]:
            names[topic["name"]] = None
    return list(names)


def subscribed_topic_regexes(subtopologies: list[dict] | None) -> list[str] | None:
    """The distinct SourceTopicRegex entries of a topology, first seen first; None for None."""
    if subtopologies is None:
        return None
    return list(dict.fromkeys(regex for sub in subtopologies for regex in sub["source_topic_regex"]))


# key type -> key fields after the group id
STREAMS_GROUP_KEY_FIELDS = {19: ("member_id",), 21: ("member_id",), 22: ("member_id",)}

# key type -> (record_type, label for messages, value decoder, value field names)
STREAMS_GROUP_RECORDS = {
    17: ("streams_group_metadata", "streams group metadata", streams_group_metadata,
         ("epoch", "metadata_hash", "validated_topology_epoch", "last_assignment_configs")),
    19: ("streams_group_member_metadata", "streams group member metadata", streams_group_member_metadata,
         ("instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms", "topology_epoch",
          "process_id", "user_endpoint", "client_tags")),
    20: ("streams_group_target_assignment_metadata", "streams group target assignment metadata",
         streams_group_target_assignment_metadata, ("assignment_epoch", "assignment_timestamp")),
    21: ("streams_group_target_assignment_member", "streams group target assignment member",
         streams_group_target_assignment_member, _TASK_KINDS),
    22: ("streams_group_current_member_assignment", "streams group current member assignment",
         streams_group_current_member_assignment,
         ("member_epoch", "previous_member_epoch", "state", *_TASK_KINDS,
          *(f"{k}_pending_revocation" for k in _TASK_KINDS))),
    23: ("streams_group_topology", "streams group topology", streams_group_topology, ("epoch", "subtopologies")),
}
