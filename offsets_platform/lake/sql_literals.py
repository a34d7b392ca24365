"""String literals for SQL text: the one place values are quoted for either engine.

Plan ids, group and topic names come from people and from clusters, and a group name may hold
any character. Pasted between quotes as they are, a quote in one ends the literal early: the
query breaks or, worse, means something else. The two engines read literals differently, so
each has its own function:

- delta-rs's SQL engine (DataFusion, `Lake.query`) follows standard SQL: a quote is written
  twice and a backslash is an ordinary character.
- Spark SQL (the models) reads a backslash as an escape, so both a backslash and a quote are
  escaped with one.
"""

from __future__ import annotations

from datetime import datetime, timezone


def lake_string(value: object) -> str:
    """`value` as a string literal for `Lake.query` (DataFusion)."""
    return "'" + str(value).replace("'", "''") + "'"


def lake_timestamp(value: datetime) -> str:
    """`value` as a UTC timestamp literal for `Lake.query` (a naive time is taken as UTC)."""
    utc = value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return f"to_timestamp_micros({lake_string(utc.strftime('%Y-%m-%dT%H:%M:%S.%fZ'))})"


def spark_string(value: object) -> str:
    """`value` as a string literal for Spark SQL (the models; the `sql_string` template filter)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_identifier(value: object) -> str:
    """`value` as a quoted identifier for Spark SQL (a table's path in `delta.<path>`)."""
    return "`" + str(value).replace("`", "``") + "`"
