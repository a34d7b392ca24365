"""Spark SQL column types, as models declare them in YAML, mapped to the lake's Arrow types."""

from __future__ import annotations

import re

import pyarrow as pa

from offsets_platform.lake.tables import UTC_MICROS

_SCALARS = {
    "string": pa.string(),
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "timestamp": UTC_MICROS,  # Spark timestamps are instants; the lake stores them as UTC micros
    "date": pa.date32(),
    "binary": pa.binary(),
}
_ARRAY = re.compile(r"^array<(.+)>$")


def arrow_type(data_type: str) -> pa.DataType:
    """`bigint` -> int64, `array<string>` -> list<string>, ...; a ValueError names unknown types."""
    text = data_type.strip().lower()
    array = _ARRAY.match(text)
    if array:
        return pa.list_(arrow_type(array.group(1)))
    try:
        return _SCALARS[text]
    except KeyError:
        raise ValueError(f"unsupported column type {data_type!r}; use one of "
                         f"{', '.join(_SCALARS)} or array<...>") from None


def arrow_schema(columns: list[tuple[str, str]], where: str) -> pa.Schema:
    try:
        return pa.schema([pa.field(name, arrow_type(data_type)) for name, data_type in columns])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
