"""Tables given to Great Expectations' pandas engine so that it answers as its Spark engine does.

A small table is validated on pandas instead of Spark (offsets_platform.quality.table_validation);
this module makes the pandas frame of an Arrow table, names the tests whose answer on pandas could
differ from Spark's (so they go to Spark), and gives offending values back as Spark collects them.
tests/quality/test_expectations_on_arrow.py compares both engines on every kind of test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from offsets_platform.quality.specs import CheckSpec

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# Integers in doubles are exact up to here. Spark compares an integer with a fractional number,
# or a double with an integer literal, as doubles; pandas does in some tests, not in others (its
# range test finds 2**53 + 1 above 2.0**53, Spark does not).
_EXACT_IN_DOUBLES = 2**53
_INT64 = range(-(2**63), 2**63)


def pandas_frame(table: "pa.Table") -> "pd.DataFrame":
    """The table as pandas: integers, booleans and floats in pandas' nullable dtypes, so a null
    stays a null (not a float NaN, which Spark does not count as null) and integers stay exact;
    strings and binary values as Python objects; timestamps keep their unit (microseconds:
    years 1-9999 fit) and time zone."""
    import pandas as pd
    import pyarrow as pa

    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype(),
                pa.float32(): pd.Float32Dtype(), pa.float64(): pd.Float64Dtype()}
    return table.to_pandas(types_mapper=nullable.get)


def _kind(data_type: "pa.DataType") -> str | None:
    """What a column's values compare as, alike on Spark and pandas; None for nested and other values."""
    import pyarrow as pa

    if pa.types.is_integer(data_type):
        return "integer"
    if pa.types.is_floating(data_type):
        return "floating"
    if pa.types.is_boolean(data_type):
        return "boolean"
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type) or pa.types.is_string_view(data_type):
        return "string"
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type) or pa.types.is_binary_view(data_type):
        return "binary"
    if pa.types.is_timestamp(data_type):
        # Spark compares a timestamp without a zone with one in the session's zone; pandas refuses.
        return "timestamp" if data_type.tz else "timestamp without time zone"
    if pa.types.is_date(data_type):
        return "date"
    return None


def why_pandas_differs(spec: CheckSpec, table: "pa.Table") -> str | None:
    """Why GX on pandas could answer `spec` on `table` otherwise than GX on Spark; None if it
    cannot (tests/quality/test_expectations_on_arrow.py compares them)."""
    import pyarrow.compute as pc

    types = [table.schema.field(column).type for column in spec.columns]
    kinds = [_kind(data_type) for data_type in types]
    if spec.test in ("unique", "unique_combination") and None in kinds:
        return "pandas cannot group nested values"
    if spec.test == "accepted_values":
        return _why_literals_differ(kinds[0], types[0], spec.args["values"])
    if spec.test == "range":
        if kinds[0] not in ("integer", "floating"):
            return f"a range of {types[0]} values"
        bounds = [bound for bound in (spec.args.get("min"), spec.args.get("max")) if bound is not None]
        reason = _why_literals_differ(kinds[0], types[0], bounds)
    elif spec.test == "greater_or_equal":
        if kinds[0] != kinds[1] or kinds[0] not in ("integer", "floating", "boolean", "string", "timestamp"):
            return f"comparing {types[0]} with {types[1]} values"
        reason = None
    else:
        return None
    # Spark orders NaN above every number and equal to itself; to pandas it is below, above and
    # equal to nothing.
    with_nan = [c for c, kind in zip(spec.columns, kinds) if kind == "floating" and pc.any(pc.is_nan(table[c])).as_py()]
    return reason or (f"NaN in {with_nan}" if with_nan else None)


def _why_literals_differ(kind: str | None, data_type: "pa.DataType", values: list) -> str | None:
    """Why comparing a column of `kind` with the YAML `values` could go otherwise on pandas:
    Spark casts them to the column's type (or fails to), pandas compares them as they are."""
    if kind == "string" and all(isinstance(value, str) for value in values):
        return None
    if kind == "boolean" and all(isinstance(value, bool) for value in values):
        return None
    if kind in ("integer", "floating") and all(type(value) in (int, float) for value in values):
        inexact = [value for value in values if not abs(value) < _EXACT_IN_DOUBLES  # NaN is not either
                   and not (kind == "integer" and isinstance(value, int) and value in _INT64)]
        return f"Spark compares {inexact} with {data_type} values as doubles" if inexact else None
    return f"Spark casts {values!r} to {data_type}"


def _spark_value(value: Any, data_type: "pa.DataType") -> Any:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if pa.types.is_timestamp(data_type):
        timestamp = pd.Timestamp(value)  # numpy's datetime64 (pairs' values) is in UTC, without a zone
        if not data_type.tz:
            return timestamp.to_pydatetime()
        from pyspark.sql.types import TimestampType

        spark_type = TimestampType()
        instant = (timestamp if timestamp.tzinfo else timestamp.tz_localize("UTC")).to_pydatetime()
        try:
            return spark_type.fromInternal(spark_type.toInternal(instant))
        except (ValueError, OverflowError) as error:
            raise SparkCannotCollect(str(error)) from error
    return value.item() if isinstance(value, np.generic) else value




class SparkCannotCollect(Exception):
    """PySpark's collect() fails on this value (GX on Spark then reports the test unevaluated)."""


def sample_as_on_spark(spec: CheckSpec, sample: tuple, types: dict[str, "pa.DataType"]) -> tuple:
    """Offending values as GX on Spark gets them from collect(): Python scalars, not numpy's or
    pandas'; None for a missing value; a timestamp as PySpark builds it, naive, in the process's
    local time. Raises SparkCannotCollect where PySpark cannot build one (a timestamp within a day
    of the years 1 or 9999 there)."""
    columns = spec.columns
    if spec.test == "greater_or_equal":  # (A, B) pairs
        return tuple(tuple(_spark_value(v, types[c]) for v, c in zip(pair, columns)) for pair in sample)
    if spec.test == "unique_combination":  # {column: value} rows
        return tuple({c: _spark_value(row[c], types[c]) for c in columns} for row in sample)
    return tuple(_spark_value(value, types[columns[0]]) for value in sample)
