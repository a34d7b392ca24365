"""The rows the vector paths leave over, decoded one at a time by ``decode_record``.

KIP-848, share and streams group records always come here, being rare; so do flexible
versions, malformed records (which land in ``rejected`` with the scalar decoder's message) and
record types Kafka 4.3 does not define (in ``rejected`` too, marked ``skipped_by_kafka``).
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pyarrow as pa

from .records import RECORD_SPECS, DecodeError, decode_record
from .schemas import (CONSUMER_GROUP_RECORD_SCHEMA, GROUP_MEMBER_SCHEMA, GROUP_METADATA_SCHEMA,
                      OFFSET_COMMIT_SCHEMA, REJECTED_SCHEMA)
from .streams_group import subscribed_topic_regexes, subscribed_topics

# The records whose "epoch" is the group epoch (a topology's Epoch is the topology's own).
_GROUP_EPOCH_TYPES = frozenset({"consumer_group_metadata", "share_group_metadata", "streams_group_metadata"})


def unsupported_reason(key_type: int) -> str:
    """The rejected-table reason for a record type Kafka 4.3 does not define."""
    return (f"unknown record type {key_type}, skipped as Kafka's loader does "
            "(unsupported: not defined by Kafka 4.3's group coordinator); kept raw")


def _json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def value_json(record: dict) -> str | None:
    """JSON of a group record's value fields, bytes as base64.

    Args:
        record: A decode_record result for a key type of ``consumer_group_records``.

    Returns:
        The JSON text, or None for a tombstone.
    """
    if record["tombstone"]:
        return None
    names = RECORD_SPECS[record["key_version"]][3]
    return json.dumps({name: record[name] for name in names}, default=_json_default, separators=(",", ":"))


def group_record_columns(record: dict) -> dict:
    """A ``consumer_group_records`` row (without ``row``) from a decode_record result.

    Key fields and same-named value fields map to their columns; the derived typed columns
    (group_epoch, member_state, resolved_topics, source_topics, source_topic_regexes) are set
    only for the record types they describe, so each stays null elsewhere.
    """
    kind = record["record_type"]
    subtopologies = record.get("subtopologies") if kind == "streams_group_topology" else None
    return {
        **record,
        "group_epoch": record.get("epoch") if kind in _GROUP_EPOCH_TYPES else None,
        "member_state": record.get("state"),
        "resolved_topics": record.get("topics") if kind == "consumer_group_regular_expression" else None,
        "source_topics": subscribed_topics(subtopologies),
        "source_topic_regexes": subscribed_topic_regexes(subtopologies),
        "value_json": value_json(record),
    }


class _Rows:
    """Column lists for one output table, filled row by row."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.columns = {name: [] for name in schema.names}

    def add(self, **values) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))

    def table(self) -> pa.Table:
        return pa.Table.from_arrays([pa.array(self.columns[f.name], f.type) for f in self.schema], schema=self.schema)


class ScalarTables:
    """The rows decoded one at a time by ``decode_record``, one ``_Rows`` per output table."""

    def __init__(self):
        self.offset_commits = _Rows(OFFSET_COMMIT_SCHEMA)
        self.group_metadata = _Rows(GROUP_METADATA_SCHEMA)
        self.group_members = _Rows(GROUP_MEMBER_SCHEMA)
        self.consumer_group_records = _Rows(CONSUMER_GROUP_RECORD_SCHEMA)
        self.rejected = _Rows(REJECTED_SCHEMA)

    def decode_rows(self, keys: pa.Array, values: pa.Array, rows: np.ndarray,
                    key_type: np.ndarray, has_type: np.ndarray) -> None:
        """Decode the records at ``rows`` of the batch, given every record's key type and whether it has one."""
        if not len(rows):
            return
        take = pa.array(rows)
        for row, key, value in zip(rows.tolist(), keys.take(take).to_pylist(), values.take(take).to_pylist()):
            self.decode(row, key, value, int(key_type[row]) if has_type[row] else None)

    def decode(self, row: int, key: bytes | None, value: bytes | None, key_type: int | None) -> None:
        """Decode one record and append it to the table it belongs in."""
        try:
            record = decode_record(key, value)
        except DecodeError as exc:
            self.rejected.add(row=row, key_version=key_type, reason=str(exc), skipped_by_kafka=False)
            return
        kind = record["record_type"]
        if kind == "unknown":
            self.rejected.add(row=row, key_version=key_type, reason=unsupported_reason(key_type),
                              skipped_by_kafka=True)
        elif kind == "offset_commit":
            self.offset_commits.add(row=row, **record)
        elif kind == "group_metadata":
            self._group(row, record)
        else:
            self.consumer_group_records.add(row=row, **group_record_columns(record))

    def _group(self, row: int, record: dict) -> None:
        members = record["members"]
        self.group_metadata.add(row=row, **record, member_count=None if members is None else len(members))
        for index, member in enumerate(members or ()):
            sub = member["subscription"] or {}
            assignment = member["assignment"] or {}
            partitions = assignment.get("partitions")
            self.group_members.add(
                row=row, group=record["group"], member_index=index, **member,
                subscription_version=sub.get("version"), subscribed_topics=sub.get("topics"),
                subscription_user_data=sub.get("user_data"), owned_partitions=sub.get("owned_partitions"),
                subscription_generation_id=sub.get("generation_id"), rack_id=sub.get("rack_id"),
                assignment_version=assignment.get("version"),
                assigned_partitions=None if partitions is None else [
                    {"topic": topic, "partitions": parts} for topic, parts in partitions.items()],
                assignment_user_data=assignment.get("user_data"))
