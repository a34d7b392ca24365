"""Running a table's declared tests as one Great Expectations suite, on Spark or on Arrow.

One ephemeral GX context serves the process: a Spark datasource and a pandas datasource, each
with one DataFrame asset per table, validated whole. Every spec becomes one expectation, tagged
with its position in `meta` because GX does not return results in suite order.

`validate` runs the suite on a Spark DataFrame; `validate_arrow` runs the same suite on a
`pyarrow.Table` through GX's pandas engine, without Spark jobs, and gives the same outcomes. Where
pandas would answer a test otherwise than Spark (NaN, which Spark orders above every number;
values Spark casts to the column's type; nested values pandas cannot group), `validate_arrow`
refuses the table rather than give another answer.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from offsets_platform.quality.pandas_like_spark import (SparkCannotCollect, pandas_frame, sample_as_on_spark,
                                                        why_pandas_differs)
from offsets_platform.quality.specs import ERROR, WARN, CheckSpec, specs_for_model, specs_for_source

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["CheckOutcome", "CheckSpec", "NotComparableOnArrow", "SuiteResult", "load_great_expectations",
           "specs_for_model", "specs_for_source", "validate", "validate_arrow"]

# BASIC gives counts plus a few offending values; SUMMARY adds value histograms (more Spark jobs).
_RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 5}
# Asset names are per datasource: a table has one asset in each, and their batches do not mix.
_SPARK_DATASOURCE = "spark"
_PANDAS_DATASOURCE = "pandas"
_BATCH_DEFINITION = "whole_table"
_LOCK = threading.Lock()  # GX's context and its assets are not safe to mutate from two threads
_context = None


@dataclass(frozen=True)
class CheckOutcome:
    """How one spec fared on the table."""

    spec: CheckSpec
    success: bool
    element_count: int | None  # rows checked
    unexpected_count: int | None  # rows breaking a row-level test; None for row_count
    observed_value: Any = None  # row_count's observed row count
    sample: tuple = ()  # a few offending values (or value pairs)
    error: str | None = None  # GX could not evaluate the expectation

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def severity(self) -> str:
        return self.spec.severity

    def explain(self) -> str:
        """One line: the test and what was found, e.g. 'offset >= -1: 2 of 10 rows fail'."""
        if self.error:
            return f"{self.description}: could not be evaluated: {self.error}"
        if self.spec.test == "row_count":
            return f"{self.description}: {self.observed_value} rows"
        text = f"{self.description}: {self.unexpected_count} of {self.element_count} rows fail"
        return text + (f" (e.g. {', '.join(map(repr, self.sample))})" if self.sample else "")


@dataclass(frozen=True)
class SuiteResult:
    table: str
    outcomes: tuple[CheckOutcome, ...]

    @property
    def passed(self) -> bool:
        return all(outcome.success for outcome in self.outcomes)

    @property
    def failed_errors(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.success and o.severity == ERROR]

    @property
    def failed_warnings(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.success and o.severity == WARN]

    @property
    def rows_checked(self) -> int | None:
        counts = [o.observed_value if o.spec.test == "row_count" else o.element_count for o in self.outcomes]
        return next((count for count in counts if isinstance(count, int)), None)

    def summary(self) -> str:
        """A headline, then one line per failed test (errors first) with its counts."""
        total = len(self.outcomes)
        if self.passed:
            return f"{self.table}: all {total} checks passed on {self.rows_checked} rows"
        errors, warnings = self.failed_errors, self.failed_warnings
        lines = [f"{self.table}: {len(errors) + len(warnings)} of {total} checks failed "
                 f"({len(errors)} errors, {len(warnings)} warnings) on {self.rows_checked} rows"]
        lines += [f"- [{o.severity}] {o.explain()}" for o in errors + warnings]
        return "\n".join(lines)


class NotComparableOnArrow(ValueError):
    """A test pandas could answer otherwise than Spark on this table; validate it on Spark."""


def validate(df: "DataFrame", table_name: str, specs: list[CheckSpec]) -> SuiteResult:
    """Validate `df` against all `specs` in one GX suite run; a spec naming a column `df` lacks
    is a ValueError (a wrong project, not a data problem)."""
    _require_columns(table_name, specs, df.columns)
    if not specs:
        return SuiteResult(table=table_name, outcomes=())
    # GX scans the table once per metric group; caching makes that one read of the files. Only
    # a cache we made is dropped afterwards.
    cached_here = not df.is_cached
    if cached_here:
        df = df.persist()
    try:
        return _run_suite(_SPARK_DATASOURCE, table_name, specs, df)
    finally:
        if cached_here:
            df.unpersist()


def validate_arrow(table: "pa.Table", table_name: str, specs: list[CheckSpec]) -> SuiteResult:
    """Validate `table` as `validate` does a Spark DataFrame of the same rows, with GX's pandas
    engine instead of Spark jobs: the same outcomes, offending values included as Spark returns
    them (their order aside). A spec naming a column the table lacks is a ValueError; one whose
    answer on pandas could differ from Spark's is a `NotComparableOnArrow` naming the spec."""
    _require_columns(table_name, specs, table.column_names)
    if not specs:
        return SuiteResult(table=table_name, outcomes=())
    refused = [f"{spec.description}: {reason}" for spec in specs if (reason := why_pandas_differs(spec, table))]
    if refused:
        raise NotComparableOnArrow(f"table {table_name!r}: on pandas these tests could give another answer "
                                   f"than on Spark: {'; '.join(refused)}")
    result = _run_suite(_PANDAS_DATASOURCE, table_name, specs, pandas_frame(table))
    types = {field.name: field.type for field in table.schema}
    return replace(result, outcomes=tuple(_as_on_spark(outcome, types) for outcome in result.outcomes))


def _require_columns(table_name: str, specs: list[CheckSpec], columns: list[str]) -> None:
    missing = sorted({c for spec in specs for c in spec.columns} - set(columns))
    if missing:
        raise ValueError(f"table {table_name!r}: tests name columns it does not have: {missing}")


def _run_suite(datasource: str, table_name: str, specs: list[CheckSpec], frame) -> SuiteResult:
    """One GX suite of `specs` on `frame`, a DataFrame of the named datasource's engine."""
    with _LOCK:
        suite = _suite(table_name, specs)
        batch = _batch_definition(datasource, table_name).get_batch(batch_parameters={"dataframe": frame})
        result = batch.validate(suite, result_format=_RESULT_FORMAT)
    by_index = {r.expectation_config.meta["check"]: r for r in result.results}
    return SuiteResult(table=table_name, outcomes=tuple(_outcome(spec, by_index[i]) for i, spec in enumerate(specs)))


def _suite(table_name: str, specs: list[CheckSpec]):
    import great_expectations as gx  # imported here: it takes seconds, and Dagster loads this module

    _gx_context()  # a suite can only be built once a context is active
    suite = gx.ExpectationSuite(name=f"{table_name}_expectations")
    for index, spec in enumerate(specs):
        suite.add_expectation(_expectation(spec, index))
    if len(suite.expectations) != len(specs):  # GX merges equal expectations; specs_for_* prevent it
        raise ValueError(f"table {table_name!r}: some tests are declared twice")
    return suite


def _expectation(spec: CheckSpec, index: int):
    import great_expectations.expectations as gxe

    common = {"meta": {"check": index}}
    args = spec.args
    if spec.test == "not_null":
        return gxe.ExpectColumnValuesToNotBeNull(column=spec.columns[0], **common)
    if spec.test == "unique":
        return gxe.ExpectColumnValuesToBeUnique(column=spec.columns[0], **common)
    if spec.test == "accepted_values":
        return gxe.ExpectColumnValuesToBeInSet(column=spec.columns[0], value_set=args["values"], **common)
    if spec.test == "range":
        return gxe.ExpectColumnValuesToBeBetween(column=spec.columns[0], min_value=args.get("min"),
                                                 max_value=args.get("max"), **common)
    if spec.test == "unique_combination":
        return gxe.ExpectCompoundColumnsToBeUnique(column_list=list(spec.columns), **common)
    if spec.test == "greater_or_equal":
        # A missing value is not_null's business; here only rows with both values count.
        return gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A=spec.columns[0], column_B=spec.columns[1], or_equal=True,
            ignore_row_if="either_value_is_missing", **common)
    if spec.test == "row_count":
        return gxe.ExpectTableRowCountToBeBetween(min_value=args.get("min"), max_value=args.get("max"), **common)
    raise ValueError(f"table {spec.table!r}: unknown test {spec.test!r}")


def _outcome(spec: CheckSpec, result) -> CheckOutcome:
    details = result.result or {}
    element_count = details.get("element_count")
    unexpected_count = details.get("unexpected_count")
    if spec.test != "row_count" and element_count == 0 and unexpected_count is None:
        unexpected_count = 0  # GX reports None, not 0, for some expectations on an empty table
    return CheckOutcome(
        spec=spec,
        success=bool(result.success),
        element_count=element_count,
        unexpected_count=unexpected_count,
        observed_value=details.get("observed_value"),
        sample=tuple(details.get("partial_unexpected_list") or ()),
        error=_exception_message(result.exception_info),
    )


def _exception_message(info: dict | None) -> str | None:
    # GX gives either one {raised_exception, exception_message} or one such dict per failed metric.
    if not info:
        return None
    entries = [info] if "raised_exception" in info else list(info.values())
    messages = [e.get("exception_message") for e in entries if isinstance(e, dict) and e.get("raised_exception")]
    return messages[0].splitlines()[0] if messages else None


def _as_on_spark(outcome: CheckOutcome, types: dict[str, "pa.DataType"]) -> CheckOutcome:
    """The outcome with its offending values as GX on Spark would give them; where PySpark could
    not collect one, GX on Spark reports the test as not evaluated, and so does this."""
    try:
        return replace(outcome, sample=sample_as_on_spark(outcome.spec, outcome.sample, types))
    except SparkCannotCollect as error:
        return replace(outcome, success=False, element_count=None, unexpected_count=None, observed_value=None,
                       sample=(), error=str(error))


def load_great_expectations() -> None:
    """Import Great Expectations and make the process's context now, so that the first validation
    need not: the import alone takes seconds (scipy, pandas). A Dagster run that will validate a
    table calls this in a thread of its own as it starts (assets/resources.py), while its first
    steps wait on Kafka; a validation meanwhile waits for it."""
    with _LOCK:
        _gx_context()


def _batch_definition(datasource_name: str, table_name: str):
    """The whole-DataFrame batch definition of the table's asset in the datasource (created on
    first use)."""
    data_sources = _gx_context().data_sources
    try:
        datasource = data_sources.get(datasource_name)
    except KeyError:
        datasource = _add_datasource(data_sources, datasource_name)
    try:
        asset = datasource.get_asset(table_name)
    except LookupError:
        asset = datasource.add_dataframe_asset(name=table_name)
    try:
        return asset.get_batch_definition(_BATCH_DEFINITION)
    except KeyError:
        return asset.add_batch_definition_whole_dataframe(_BATCH_DEFINITION)


def _add_datasource(data_sources, name: str):
    """Each datasource is added on its first use: adding GX's Spark datasource starts a
    SparkSession (a default one, without the project's settings, where none runs), which
    validate_arrow must not."""
    if name == _SPARK_DATASOURCE:
        # persist=False: GX would otherwise cache every DataFrame it is given and never release
        # it; validate() caches and uncaches around the run instead.
        return data_sources.add_spark(name, persist=False)
    return data_sources.add_pandas(name)


def _gx_context():
    """The process's ephemeral GX context: in memory, no progress bars, only warnings logged."""
    global _context
    if _context is None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        # The config module sets its own logger to INFO (it announces a temporary docs folder).
        for name in ("great_expectations", "great_expectations.data_context.types.base"):
            logging.getLogger(name).setLevel(logging.WARNING)
        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        _context = context
    return _context
