"""Validating a lake table: from Arrow when it is small, on Spark when it is not.

A Great Expectations run on Spark costs seconds of jobs however few the rows (most model tables
of a refresh hold tens to thousands); the same suite on the table's rows read through delta-rs
costs milliseconds. Both give the same outcomes (tests/quality/test_expectations_on_arrow.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from offsets_platform.lake import Lake
from offsets_platform.quality.expectations import NotComparableOnArrow, SuiteResult, validate, validate_arrow
from offsets_platform.quality.specs import CheckSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Up to this many rows a table is read whole into this process and validated there.
ARROW_MAX_ROWS = 100_000


def validate_table(lake: Lake, spark: Callable[[], "SparkSession"], name: str, specs: list[CheckSpec],
                   rows: int | None = None) -> SuiteResult:
    """Validate the table's latest version against `specs`. `rows`, when the caller knows it, is
    its row count; `spark` is called only for a table too large to read here, or one whose tests
    pandas could answer otherwise than Spark (NaN among the values of a range test, say)."""
    if not specs:
        return SuiteResult(table=name, outcomes=())
    if (lake.count(name) if rows is None else rows) <= ARROW_MAX_ROWS:
        try:
            return validate_arrow(lake.read_arrow(name), name, specs)
        except NotComparableOnArrow:
            pass
    return validate(lake.spark_read(spark(), name), name, specs)
