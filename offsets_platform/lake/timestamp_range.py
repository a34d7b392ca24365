"""The instants the lake's timestamp columns hold, and where Kafka's milliseconds outside them go.

Kafka keeps times as int64 milliseconds, and every value is possible in `__consumer_offsets`: the
coordinator stores commit time + the retention an OffsetCommit v2-v4 client chose as the expire
timestamp (a retention of Long.MAX_VALUE wraps to about -9.2e18), an old v1 client chose the commit
time itself, and a producer chooses a record's timestamp.

The lake's timestamps are Delta timestamps: UTC microseconds, which Delta specifies for the years
1 to 9999. That is also all Python's datetime can represent, so Spark's collect, pyarrow's
to_pylist and the cleanup plans fail on anything later, and microseconds themselves overflow past
about ±292,000 years. A value outside the range lands with its timestamp column null and the
milliseconds as Kafka stored them in `<column>_out_of_range_ms`, which is null for every value
inside the range: a record is never refused for its times, and a lake written before these
columns existed already means the same thing (all its times were in range).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

UTC_MICROS = pa.timestamp("us", tz="UTC")

LAKE_TIMESTAMP_MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
LAKE_TIMESTAMP_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def out_of_range_column(name: str) -> str:
    """The column that keeps the milliseconds of timestamp column `name` that it cannot hold."""
    return f"{name}_out_of_range_ms"


def fit_millisecond_timestamps(table: pa.Table) -> pa.Table:
    """Every millisecond timestamp column of `table` (Kafka's times, as decoded) as the lake's
    timestamps, null where the value is outside the years 1-9999, and for each such column its
    `<column>_out_of_range_ms` appended: the milliseconds where they did not fit, else null."""
    kept = []
    for name in table.column_names:
        column_type = table.schema.field(name).type
        if pa.types.is_timestamp(column_type) and column_type.unit == "ms":
            millis = table[name].cast(pa.int64())
            fits = pc.and_(pc.greater_equal(millis, LAKE_TIMESTAMP_MIN_MS),
                           pc.less_equal(millis, LAKE_TIMESTAMP_MAX_MS))
            none = pa.scalar(None, pa.int64())
            in_range = pc.if_else(fits, millis, none)
            table = table.set_column(table.schema.get_field_index(name), name,
                                     in_range.cast(pa.timestamp("ms", tz="UTC")).cast(UTC_MICROS))
            kept.append((out_of_range_column(name), pc.if_else(fits, none, millis)))
    for name, millis in kept:
        table = table.append_column(pa.field(name, pa.int64()), millis)
    return table


def lake_timestamp_sql(millis: str) -> str:
    """Spark SQL for the lake timestamp of the milliseconds in expression `millis`: null when they
    are outside the years 1-9999 (models compute times in Kafka's milliseconds and show them so)."""
    return (f"(case when ({millis}) between {LAKE_TIMESTAMP_MIN_MS} and {LAKE_TIMESTAMP_MAX_MS} "
            f"then timestamp_millis({millis}) end)")
