"""The rows of one snapshot, gathered in memory before anything is written, with an error row for
each call that failed for one group or topic (the snapshot goes on) while a lost connection ends it.
An authorization error's row names, after Kafka's message, the ACL the call needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, TypeVar

import kafka.errors as Errors
import pyarrow as pa

from offsets_platform.kafka.admin_calls import CALL_ERRORS, CONNECTION_ERRORS, error_name
from offsets_platform.kafka.errors import refusal_message
from offsets_platform.lake.tables import SNAPSHOT_FIELDS, SNAPSHOT_TABLES, TABLES

T = TypeVar("T")


def sendable(rows: SnapshotRows, scope: str, name: str, operation: str) -> bool:
    """Whether a group id or topic name given by the caller can be sent at all (valid UTF-8).

    kafka-python would hang on one that cannot (see above), so it is refused here instead, as an
    INVALID_GROUP_ID or INVALID_TOPIC_EXCEPTION error row.
    """
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError as error:
        code = Errors.InvalidGroupIdError.errno if scope == "group" else Errors.InvalidTopicError.errno
        rows.error(scope, name, operation, code, f"not sent: the name is not valid UTF-8 ({error})")
        return False


@dataclass
class SnapshotRows:
    """Rows of every snapshot table, gathered before anything is written."""

    tables: dict[str, list[dict]] = field(default_factory=lambda: {name: [] for name in SNAPSHOT_TABLES})
    principal: str | None = None
    """Who the snapshot logs in as (User:<name> for SASL), named in the ACLs its error rows ask for."""

    def add(self, table: str, **row) -> None:
        expected = set(TABLES[table].schema.names) - {f.name for f in SNAPSHOT_FIELDS}
        if set(row) != expected:
            raise ValueError(f"{table} row has columns {sorted(row)}, expected {sorted(expected)}")
        self.tables[table].append(row)

    def error(self, scope: str, name: str | None, operation: str, error: BaseException | int | str,
              message: str | None = None) -> None:
        """Record one failed call (scope 'group', 'topic' or 'broker')."""
        if name is not None:  # a name the client could not encode cannot be stored as UTF-8 either
            name = name.encode("utf-8", "backslashreplace").decode("utf-8")
        if message is None and isinstance(error, BaseException):
            message = str(error)
        error = error if isinstance(error, str) else error_name(error)
        about = {"group": name} if scope == "group" else {"topic": name} if scope == "topic" else {}
        message = refusal_message(operation, error, message, principal=self.principal, **about) or message
        self.add("snapshot_errors", scope=scope, name=name, operation=operation, error=error, message=message)

    def guarded(self, scope: str, name: str | None, operation: str, call: Callable[..., T], *args) -> T | None:
        """`call(*args)`, or None after recording the error if it failed for this group or topic."""
        try:
            return call(*args)
        except CONNECTION_ERRORS:
            raise
        except CALL_ERRORS as error:
            self.error(scope, name, operation, error)
            return None

    def to_arrow(self, snapshot_id: str, snapshot_at: datetime) -> dict[str, pa.Table]:
        """One Arrow table per snapshot table, with the registered schema, every row stamped."""
        stamp = {"snapshot_id": snapshot_id, "snapshot_at": snapshot_at}
        return {name: pa.Table.from_pylist([{**stamp, **row} for row in rows], schema=TABLES[name].schema)
                for name, rows in self.tables.items()}
