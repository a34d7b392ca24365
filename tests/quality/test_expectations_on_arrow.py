"""The declared tests run by Great Expectations on an Arrow table (through pandas) give what they
give on Spark: every test kind, on a table with nulls, duplicates, values out of range, pairs the
wrong way round and too many rows, and on an empty one; and every shipped model's and source's
tests evaluate on pandas."""

import subprocess
import sys
import textwrap
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from offsets_platform.lake.tables import table_spec
from offsets_platform.quality import specs_for_model
from offsets_platform.quality.expectations import NotComparableOnArrow, validate, validate_arrow
from tests.quality.helpers import make_model
from tests.quality.test_shipped_checks import SHIPPED_TABLES, _broken_rows, _tables_with_tests

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T1 = T0 + timedelta(hours=1)
YEAR_1 = datetime(1, 1, 1, tzinfo=timezone.utc)
YEAR_9999 = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
NAN = float("nan")

# name -> (Arrow type as the lake stores it, Spark SQL type, column tests)
COLUMNS = {
    "i": (pa.int64(), "bigint", ["not_null", "unique", {"range": {"min": -1, "max": 2**61}},
                                 {"accepted_values": {"values": [1, 7.0]}}]),
    "n": (pa.int32(), "int", [{"range": {"min": 0}}]),
    "f": (pa.float64(), "double", ["not_null", "unique", {"range": {"min": 0, "max": 10}},
                                   {"accepted_values": {"values": [0, 0.5]}}]),
    "g": (pa.float64(), "double", []),
    # NaN is a value, not a null, and equal to itself when grouping, on Spark and on pandas
    "nan": (pa.float64(), "double", ["not_null", "unique", {"accepted_values": {"values": [1, 2]}}]),
    "s": (pa.string(), "string", ["not_null", "unique", {"accepted_values": {"values": ["a", "b"]}}]),
    "s2": (pa.string(), "string", []),
    "b": (pa.bool_(), "boolean", ["not_null", "unique"]),
    "b2": (pa.bool_(), "boolean", [{"accepted_values": {"values": [True], "severity": "warn"}}]),
    "t": (pa.timestamp("us", tz="UTC"), "timestamp", ["not_null", "unique"]),
    "u": (pa.timestamp("us", tz="UTC"), "timestamp", []),
    # PySpark's collect() cannot build a timestamp of the first day of year 1 (nor of the last of
    # 9999 east of UTC): GX on Spark reports a test offending with one as not evaluated
    "early": (pa.timestamp("us", tz="UTC"), "timestamp", ["unique"]),
    "raw": (pa.binary(), "binary", ["not_null", "unique"]),
    "tags": (pa.list_(pa.string()), "array<string>", ["not_null"]),
}
TABLE_TESTS = [
    {"unique_combination": {"columns": ["s", "i"]}},
    {"unique_combination": {"columns": ["t", "b", "raw"]}},
    {"unique_combination": {"columns": ["n", "s2"]}},  # rows with some nulls are compared, all nulls not
    {"greater_or_equal": {"column": "t", "than": "u"}},
    {"greater_or_equal": {"column": "i", "than": "n"}},
    {"greater_or_equal": {"column": "f", "than": "g"}},
    {"greater_or_equal": {"column": "s", "than": "s2"}},  # "é" > "e" by code point and by UTF-8 byte
    {"greater_or_equal": {"column": "b", "than": "b2"}},
    {"row_count": {"min": 1, "max": 100}},
    {"row_count": {"max": 3, "severity": "warn"}},
]
SPECS = specs_for_model(make_model({name: (sql_type, tests) for name, (_, sql_type, tests) in COLUMNS.items()},
                                   TABLE_TESTS))
SCHEMA = pa.schema([(name, arrow_type) for name, (arrow_type, _, _) in COLUMNS.items()])

BROKEN = {
    "i": [1, None, 1, -5, 2**62 + 1, 7],
    "n": [0, 3, None, 3, None, None],
    "f": [0.5, -0.0, 0.0, None, 12.5, 3.0],
    "g": [1.0, -0.0, 0.5, 1.0, None, 3.0],
    "nan": [NAN, NAN, 1.0, None, 2.0, 1.0],
    "s": ["a", None, "a", "é", "b", "zz"],
    "s2": ["b", "a", None, "e", "zz", "zz"],
    "b": [True, None, True, False, False, True],
    "b2": [False, True, True, True, None, True],
    "t": [T0, None, T0, T0, YEAR_9999, T1],
    "u": [T0, T1, None, T1, YEAR_1, T0],
    "early": [YEAR_1, None, YEAR_1, T0, T1, None],
    "raw": [b"a", None, b"a", b"\x00", b"b", b"c"],
    "tags": [["x"], None, [], ["x"], None, ["y"]],
}
TABLES = {
    "broken": pa.table(BROKEN, schema=SCHEMA),
    "empty": SCHEMA.empty_table(),
}
KINDS = ("not_null", "unique", "accepted_values", "range", "unique_combination", "greater_or_equal", "row_count")


@pytest.fixture(scope="module")
def compared(spark) -> dict:
    """table -> (its outcomes on Arrow, on Spark), the suite run once per table and engine, both
    under the same table (asset) name in the one GX context."""
    return {name: (validate_arrow(table, "orders", SPECS).outcomes,
                   validate(spark.createDataFrame(table), "orders", SPECS).outcomes)
            for name, table in TABLES.items()}


def comparable(outcome) -> tuple:
    # Offending values in no particular order: Spark returns those of a grouping test by group.
    return (outcome.description, outcome.severity, outcome.success, outcome.element_count,
            outcome.unexpected_count, outcome.observed_value, outcome.error,
            Counter(repr(value) for value in outcome.sample))


@pytest.mark.parametrize("kind", KINDS)
def test_arrow_and_spark_give_the_same_outcomes(compared, kind):
    for table, (on_arrow, on_spark) in compared.items():
        assert [comparable(o) for o in on_arrow if o.spec.test == kind] == \
               [comparable(o) for o in on_spark if o.spec.test == kind], table
    broken, empty = compared["broken"][0], compared["empty"][0]
    # The comparison means something: the kind fails on the broken table, with offending values
    # where it has them, and only the year-1 timestamp Spark cannot return is left unevaluated.
    assert any(not o.success and (o.sample or kind == "row_count") for o in broken if o.spec.test == kind)
    assert [o.explain() for o in broken + empty if o.error and o.spec.test == kind] == \
           (["early is unique: could not be evaluated: year 0 is out of range"] if kind == "unique" else [])
    assert [o.description for o in empty if not o.success] == ["1 <= row count <= 100"]


def test_arrow_outcomes_hold_what_spark_returns(compared):
    on_arrow = {o.description: o for o in compared["broken"][0]}
    assert (on_arrow["i is unique"].unexpected_count, on_arrow["i is unique"].sample) == (2, (1, 1))
    assert type(on_arrow["i is unique"].sample[0]) is int and on_arrow["i is not null"].sample == (None,)
    # timestamps as PySpark's collect() gives them: naive, in this process's local time
    assert on_arrow["t >= u"].sample == ((T0.astimezone().replace(tzinfo=None), T1.astimezone().replace(tzinfo=None)),)
    assert on_arrow["(n, s2) is unique"].sample == ({"n": None, "s2": "zz"}, {"n": None, "s2": "zz"})
    assert on_arrow["row count <= 3"].observed_value == 6
    assert type(on_arrow["i is unique"].element_count) is int


def refuse(table: dict, types: dict[str, str], column_tests: list = (), table_tests: list = ()):
    columns = {name: (sql_type, list(column_tests) if name == "x" else []) for name, sql_type in types.items()}
    return validate_arrow(pa.table(table), "orders", specs_for_model(make_model(columns, table_tests)))


@pytest.mark.parametrize("table,types,column_tests,table_tests,reason", [
    # Spark orders NaN above every number: NaN >= 0 holds there, not in pandas.
    ({"x": [1.0, NAN]}, {"x": "double"}, [{"range": {"min": 0}}], [], "NaN in ['x']"),
    ({"x": [1.0, NAN], "y": [0.0, 1.0]}, {"x": "double", "y": "double"}, [],
     [{"greater_or_equal": {"column": "x", "than": "y"}}], "NaN in ['x']"),
    # Spark casts '1' to the bigint 1 (and fails on 'x'); pandas finds no 1 in ['1'].
    ({"x": [1, 2]}, {"x": "bigint"}, [{"accepted_values": {"values": ["1"]}}], [], "Spark casts ['1'] to int64"),
    ({"x": [True]}, {"x": "boolean"}, [{"accepted_values": {"values": ["true"]}}], [], "Spark casts ['true'] to bool"),
    # Spark compares a bigint with a double bound as doubles, inexact beyond 2**53.
    ({"x": [2**53 + 1]}, {"x": "bigint"}, [{"range": {"max": float(2**53)}}], [], "as doubles"),
    ({"x": [1], "y": [1.0]}, {"x": "bigint", "y": "double"}, [],
     [{"greater_or_equal": {"column": "x", "than": "y"}}], "comparing int64 with double values"),
    ({"x": [T0], "y": ["2024"]}, {"x": "timestamp", "y": "string"}, [],
     [{"greater_or_equal": {"column": "x", "than": "y"}}], "comparing timestamp[us, tz=UTC] with string"),
    # pandas cannot hash lists; Spark groups them
    ({"x": [["a"], ["a"]], "y": [1, 1]}, {"x": "array<string>", "y": "int"}, [],
     [{"unique_combination": {"columns": ["x", "y"]}}], "pandas cannot group nested values"),
], ids=["range-nan", "pair-nan", "values-cast", "boolean-cast", "inexact-bound", "int-vs-double",
        "timestamp-vs-string", "nested-unique"])
def test_a_test_pandas_could_answer_otherwise_is_refused(table, types, column_tests, table_tests, reason):
    with pytest.raises(NotComparableOnArrow, match="table 'orders': on pandas these tests could give another "
                                                   "answer than on Spark: ") as refused:
        refuse(table, types, column_tests, table_tests)
    assert reason in str(refused.value)


def test_nan_is_refused_only_where_spark_and_pandas_order_it():
    # NaN in a column not compared with anything, or with no NaN at all: evaluated
    result = refuse({"x": [1.0, NAN], "y": [1.0, 2.0]}, {"x": "double", "y": "double"},
                    ["not_null", "unique"], [{"greater_or_equal": {"column": "y", "than": "y"}}])
    assert result.passed, result.summary()


def test_a_test_on_a_column_the_table_lacks_is_an_error_as_on_spark():
    specs = specs_for_model(make_model({"x": ("bigint", ["not_null"])}))
    with pytest.raises(ValueError, match=r"table 'orders': tests name columns it does not have: \['x'\]"):
        validate_arrow(pa.table({"y": [1]}), "orders", specs)


def test_no_specs_means_a_passing_result():
    result = validate_arrow(pa.table({"x": [1]}), "orders", [])
    assert result.passed and result.outcomes == ()


def test_validating_arrow_starts_no_spark():
    # Adding GX's Spark datasource starts a SparkSession; a process validating only Arrow tables
    # (a fresh one: this one's may run Spark already) must not get one.
    script = textwrap.dedent("""
        import pyarrow as pa
        from pyspark import SparkContext
        from offsets_platform.quality import specs_for_model
        from offsets_platform.quality.expectations import validate_arrow
        from tests.quality.helpers import make_model

        specs = specs_for_model(make_model({"x": ("bigint", ["unique"])}))
        assert not validate_arrow(pa.table({"x": [1, 1]}), "orders", specs).passed
        assert SparkContext._active_spark_context is None, "a SparkSession was started"
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300, cwd=Path(__file__).parents[2])


@pytest.mark.parametrize("table,specs", _tables_with_tests(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_shipped_test_evaluates_on_pandas(table, specs):
    schema = table_spec(table, SHIPPED_TABLES).schema
    empty = validate_arrow(schema.empty_table(), table, specs)
    assert not [o.explain() for o in empty.outcomes if o.error]
    assert empty.rows_checked == 0
    # and fails on the table built to break it (tests/quality/test_shipped_checks.py)
    broken = validate_arrow(pa.Table.from_pylist(_broken_rows(table, specs), schema=schema), table, specs)
    assert not [o.explain() for o in broken.outcomes if o.error]
    assert not [o.description for o in broken.outcomes if o.success]
