"""Wire formats of the describe requests of KIP-848 consumer, streams and share groups, of
DescribeShareGroupOffsets and of AlterShareGroupOffsets.

kafka-python 3.0.12 has DescribeGroups (classic groups only) but none of ConsumerGroupDescribe
(API key 69, KIP-848), StreamsGroupDescribe (89, KIP-1071), ShareGroupDescribe (77, KIP-932),
DescribeShareGroupOffsets (90, KIP-932) or AlterShareGroupOffsets (91, KIP-932).
Its protocol machinery builds a request or response class from a message schema in Kafka's JSON
form (`kafka.protocol.api_message.ApiMessage`); it normally reads that schema from a file of
its own package. The schemas here are written as Python data, in that form, from the message
definitions of Kafka 4.3 (clients/src/main/resources/common/message/<Name>.json), and the
classes are built from them by `_from_schema`. Every version listed is flexible (compact
strings, tagged fields), which kafka-python's encoder handles.

Field order matters: a response is decoded field by field, so every field the broker sends is
declared, including the ones this project does not read.
"""

from __future__ import annotations

from kafka.protocol.api_data import JsonSchemaData
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.data_container import SlotsBuilder
from kafka.protocol.schemas import StructField


def _field(name: str, type_: str, *, versions: str = "0+", nullable: bool = False,
           fields: list[dict] | None = None, default: str | None = None) -> dict:
    field = {"name": name, "type": type_, "versions": versions}
    if nullable:
        field["nullableVersions"] = versions
        field["default"] = "null"
    if default is not None:
        field["default"] = default
    if fields is not None:
        field["fields"] = fields
    return field


def _message(name: str, api_key: int, kind: str, valid_versions: str, fields: list[dict]) -> dict:
    return {"apiKey": api_key, "type": kind, "name": name, "validVersions": valid_versions,
            "flexibleVersions": "0+", "fields": fields}


class _SchemaMessageData(type(ApiMessage)):
    """kafka-python's message metaclass, fed a schema given as data instead of a JSON file.

    It does what `JsonSchemaData.__new__` does after reading the file (set `_json` and `_struct`),
    then lets the rest of kafka-python's class set-up run unchanged.
    """

    def __new__(metacls, name, bases, attrs, schema: dict | None = None, **kw):
        if schema is None:
            return super().__new__(metacls, name, bases, attrs, **kw)
        attrs["_json"] = schema
        attrs["_struct"] = StructField(schema)
        attrs["__license__"] = None
        # JsonSchemaData.__new__ would load a file: go straight to the slots builder after it.
        return SlotsBuilder.__new__(metacls, name, bases, attrs, **kw)

    def __init__(cls, name, bases, attrs, schema: dict | None = None, **kw):
        super().__init__(name, bases, attrs, **kw)


assert JsonSchemaData in _SchemaMessageData.__mro__  # the pinned kafka-python's layout


def _from_schema(schema: dict) -> type:
    return _SchemaMessageData(schema["name"], (ApiMessage,), {"__module__": __name__}, schema=schema)


def _describe_request(name: str, api_key: int, valid_versions: str) -> type:
    # The three requests have the same body: the group ids, and whether to include the
    # authorized operations (not needed here).
    return _from_schema(_message(name, api_key, "request", valid_versions, [
        _field("GroupIds", "[]string"),
        _field("IncludeAuthorizedOperations", "bool"),
    ]))


def _topic_partitions() -> list[dict]:
    return [_field("TopicPartitions", "[]TopicPartitions", fields=[
        _field("TopicId", "uuid"),
        _field("TopicName", "string"),
        _field("Partitions", "[]int32"),
    ])]


def _group_head() -> list[dict]:
    return [
        _field("ErrorCode", "int16"),
        _field("ErrorMessage", "string", nullable=True),
        _field("GroupId", "string"),
        _field("GroupState", "string"),
        _field("GroupEpoch", "int32"),
        _field("AssignmentEpoch", "int32"),
    ]


# ConsumerGroupDescribe v0-1 (v1 adds each member's MemberType: -1 unknown, 0 classic, 1 consumer).
ConsumerGroupDescribeRequest = _describe_request("ConsumerGroupDescribeRequest", 69, "0-1")
ConsumerGroupDescribeResponse = _from_schema(_message("ConsumerGroupDescribeResponse", 69, "response", "0-1", [
    _field("ThrottleTimeMs", "int32"),
    _field("Groups", "[]DescribedGroup", fields=[
        *_group_head(),
        _field("AssignorName", "string"),
        _field("Members", "[]Member", fields=[
            _field("MemberId", "string"),
            _field("InstanceId", "string", nullable=True),
            _field("RackId", "string", nullable=True),
            _field("MemberEpoch", "int32"),
            _field("ClientId", "string"),
            _field("ClientHost", "string"),
            _field("SubscribedTopicNames", "[]string"),
            _field("SubscribedTopicRegex", "string", nullable=True),
            _field("Assignment", "Assignment", fields=_topic_partitions()),
            _field("TargetAssignment", "Assignment", fields=_topic_partitions()),
            _field("MemberType", "int8", versions="1+", default="-1"),
        ]),
        _field("AuthorizedOperations", "int32", default="-2147483648"),
    ]),
]))

# ShareGroupDescribe v1 (v0 was early access in Kafka 4.0 and is gone since 4.1).
ShareGroupDescribeRequest = _describe_request("ShareGroupDescribeRequest", 77, "1")
ShareGroupDescribeResponse = _from_schema(_message("ShareGroupDescribeResponse", 77, "response", "1", [
    _field("ThrottleTimeMs", "int32"),
    _field("Groups", "[]DescribedGroup", fields=[
        *_group_head(),
        _field("AssignorName", "string"),
        _field("Members", "[]Member", fields=[
            _field("MemberId", "string"),
            _field("RackId", "string", nullable=True),
            _field("MemberEpoch", "int32"),
            _field("ClientId", "string"),
            _field("ClientHost", "string"),
            _field("SubscribedTopicNames", "[]string"),
            _field("Assignment", "Assignment", fields=_topic_partitions()),
        ]),
        _field("AuthorizedOperations", "int32", default="-2147483648"),
    ]),
]))


def _key_values(name: str) -> dict:
    return _field(name, "[]KeyValue", fields=[_field("Key", "string"), _field("Value", "string")])


def _topic_infos(name: str) -> dict:
    return _field(name, "[]TopicInfo", fields=[
        _field("Name", "string"),
        _field("Partitions", "int32"),
        _field("ReplicationFactor", "int16"),
        _key_values("TopicConfigs"),
    ])


def _task_offsets(name: str) -> dict:
    return _field(name, "[]TaskOffset", fields=[
        _field("SubtopologyId", "string"), _field("Partition", "int32"), _field("Offset", "int64")])


def _tasks(name: str) -> dict:
    return _field(name, "[]TaskIds", fields=[_field("SubtopologyId", "string"), _field("Partitions", "[]int32")])


# StreamsGroupDescribe v0. A member's assignment is a set of tasks (subtopology id, partition),
# not topic partitions; the topology says which topics each subtopology reads.
StreamsGroupDescribeRequest = _describe_request("StreamsGroupDescribeRequest", 89, "0")
StreamsGroupDescribeResponse = _from_schema(_message("StreamsGroupDescribeResponse", 89, "response", "0", [
    _field("ThrottleTimeMs", "int32"),
    _field("Groups", "[]DescribedGroup", fields=[
        *_group_head(),
        _field("Topology", "Topology", nullable=True, fields=[
            _field("Epoch", "int32"),
            _field("Subtopologies", "[]Subtopology", nullable=True, fields=[
                _field("SubtopologyId", "string"),
                _field("SourceTopics", "[]string"),
                _field("RepartitionSinkTopics", "[]string"),
                _topic_infos("StateChangelogTopics"),
                _topic_infos("RepartitionSourceTopics"),
            ]),
        ]),
        _field("Members", "[]Member", fields=[
            _field("MemberId", "string"),
            _field("MemberEpoch", "int32"),
            _field("InstanceId", "string", nullable=True),
            _field("RackId", "string", nullable=True),
            _field("ClientId", "string"),
            _field("ClientHost", "string"),
            _field("TopologyEpoch", "int32"),
            _field("ProcessId", "string"),
            _field("UserEndpoint", "Endpoint", nullable=True, fields=[
                _field("Host", "string"), _field("Port", "uint16")]),
            _key_values("ClientTags"),
            _task_offsets("TaskOffsets"),
            _task_offsets("TaskEndOffsets"),
            _field("Assignment", "Assignment", fields=[
                _tasks("ActiveTasks"), _tasks("StandbyTasks"), _tasks("WarmupTasks")]),
            _field("TargetAssignment", "Assignment", fields=[
                _tasks("ActiveTasks"), _tasks("StandbyTasks"), _tasks("WarmupTasks")]),
            _field("IsClassic", "bool"),
        ]),
        _field("AuthorizedOperations", "int32", default="-2147483648"),
    ]),
]))


# DescribeShareGroupOffsets v0-1 (API key 90, KIP-932; v1 adds each partition's Lag, KIP-1226):
# the share-partition start offsets a share group's state in __share_group_state holds. Topics
# null asks for every share partition whose state is initialized
# (GroupCoordinatorService.describeShareGroupAllOffsets).
DescribeShareGroupOffsetsRequest = _from_schema(_message("DescribeShareGroupOffsetsRequest", 90, "request", "0-1", [
    _field("Groups", "[]DescribeShareGroupOffsetsRequestGroup", fields=[
        _field("GroupId", "string"),
        _field("Topics", "[]DescribeShareGroupOffsetsRequestTopic", nullable=True, fields=[
            _field("TopicName", "string"),
            _field("Partitions", "[]int32"),
        ]),
    ]),
]))
DescribeShareGroupOffsetsResponse = _from_schema(_message("DescribeShareGroupOffsetsResponse", 90, "response", "0-1", [
    _field("ThrottleTimeMs", "int32"),
    _field("Groups", "[]DescribeShareGroupOffsetsResponseGroup", fields=[
        _field("GroupId", "string"),
        _field("Topics", "[]DescribeShareGroupOffsetsResponseTopic", fields=[
            _field("TopicName", "string"),
            _field("TopicId", "uuid"),
            _field("Partitions", "[]DescribeShareGroupOffsetsResponsePartition", fields=[
                _field("PartitionIndex", "int32"),
                _field("StartOffset", "int64"),
                _field("LeaderEpoch", "int32"),
                _field("Lag", "int64", versions="1+", default="-1"),
                _field("ErrorCode", "int16"),
                _field("ErrorMessage", "string", nullable=True),
            ]),
        ]),
        _field("ErrorCode", "int16"),
        _field("ErrorMessage", "string", nullable=True),
    ]),
]))


# AlterShareGroupOffsets v0 (API key 91, KIP-932): sets a share group's share-partition start
# offsets; the coordinator takes it only from an Empty share group, or one it creates for it
# (GroupMetadataManager.alterShareGroupOffsets: throwIfShareGroupIsNotEmpty, NON_EMPTY_GROUP).
AlterShareGroupOffsetsRequest = _from_schema(_message("AlterShareGroupOffsetsRequest", 91, "request", "0", [
    _field("GroupId", "string"),
    _field("Topics", "[]AlterShareGroupOffsetsRequestTopic", fields=[
        _field("TopicName", "string"),
        _field("Partitions", "[]AlterShareGroupOffsetsRequestPartition", fields=[
            _field("PartitionIndex", "int32"),
            _field("StartOffset", "int64"),
        ]),
    ]),
]))
AlterShareGroupOffsetsResponse = _from_schema(_message("AlterShareGroupOffsetsResponse", 91, "response", "0", [
    _field("ThrottleTimeMs", "int32"),
    _field("ErrorCode", "int16"),
    _field("ErrorMessage", "string", nullable=True),
    _field("Responses", "[]AlterShareGroupOffsetsResponseTopic", fields=[
        _field("TopicName", "string"),
        _field("TopicId", "uuid"),
        _field("Partitions", "[]AlterShareGroupOffsetsResponsePartition", fields=[
            _field("PartitionIndex", "int32"),
            _field("ErrorCode", "int16"),
            _field("ErrorMessage", "string", nullable=True),
        ]),
    ]),
]))
