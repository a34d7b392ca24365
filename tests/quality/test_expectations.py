"""Every test type run by Great Expectations on real Spark DataFrames: good data passes, broken
data fails with the number of offending rows."""

from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.quality import ERROR, WARN, specs_for_model, validate
from tests.quality.helpers import make_model

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T1 = T0 + timedelta(hours=1)

# (test item, is it a column test, column types, good rows, broken rows, offending rows)
CASES = {
    "not_null": ("not_null", True, {"x": "bigint"}, [(1,), (2,)], [(1,), (None,), (None,)], 2),
    "unique": ("unique", True, {"x": "bigint"}, [(1,), (2,), (None,), (None,)], [(1,), (1,), (2,), (3,)], 2),
    "accepted_values": ({"accepted_values": {"values": ["Stable", "Empty"]}}, True, {"x": "string"},
                        [("Stable",), ("Empty",), (None,)], [("Stable",), ("Dead",), ("Gone",)], 2),
    "range": ({"range": {"min": -1, "max": 10}}, True, {"x": "bigint"}, [(-1,), (10,), (None,)],
              [(-2,), (5,), (11,), (12,)], 3),
    "unique_combination": ({"unique_combination": {"columns": ["x", "y"]}}, False, {"x": "int", "y": "string"},
                           [(1, "a"), (1, "b"), (2, "a")], [(1, "a"), (1, "a"), (1, "b")], 2),
    "greater_or_equal": ({"greater_or_equal": {"column": "x", "than": "y"}}, False,
                         {"x": "timestamp", "y": "timestamp"}, [(T1, T0), (T0, T0), (None, T1)],
                         [(T0, T1), (T0, T1), (T1, T0), (None, T1)], 2),
    "greater_or_equal_numbers": ({"greater_or_equal": {"column": "x", "than": "y"}}, False,
                                 {"x": "bigint", "y": "bigint"}, [(5, 3), (3, 3)], [(2, 3), (4, 3)], 1),
}


def specs_for(item, column_test: bool, types: dict[str, str]):
    columns = {name: (data_type, [item] if column_test and name == "x" else []) for name, data_type in types.items()}
    return specs_for_model(make_model(columns, [] if column_test else [item]))


def frame(spark, types: dict[str, str], rows):
    return spark.createDataFrame(rows, ", ".join(f"{name} {data_type}" for name, data_type in types.items()))


@pytest.mark.parametrize("case", CASES)
def test_good_data_passes_and_broken_data_fails_with_its_count(spark, case):
    item, column_test, types, good, broken, offending = CASES[case]
    specs = specs_for(item, column_test, types)

    passed = validate(frame(spark, types, good), "orders", specs)
    assert passed.passed, passed.summary()
    assert [(o.success, o.unexpected_count, o.element_count) for o in passed.outcomes] == [(True, 0, len(good))]

    failed = validate(frame(spark, types, broken), "orders", specs)
    [outcome] = failed.outcomes
    assert not failed.passed and failed.failed_errors == [outcome] and failed.failed_warnings == []
    assert (outcome.success, outcome.unexpected_count, outcome.element_count) == (False, offending, len(broken))
    assert outcome.error is None and outcome.sample


def test_row_count_reports_the_observed_count(spark):
    specs = specs_for_model(make_model({"x": ("bigint", [])}, [{"row_count": {"min": 1, "max": 2}}]))
    assert validate(frame(spark, {"x": "bigint"}, [(1,), (2,)]), "orders", specs).passed
    failed = validate(frame(spark, {"x": "bigint"}, [(1,), (2,), (3,)]), "orders", specs)
    [outcome] = failed.failed_errors
    assert (outcome.success, outcome.observed_value, outcome.unexpected_count) == (False, 3, None)
    assert failed.rows_checked == 3
    assert "1 <= row count <= 2: 3 rows" in failed.summary()


def test_one_suite_reports_each_test_in_declared_order_with_severities(spark):
    model = make_model(
        {"x": ("bigint", ["not_null", {"range": {"min": 0, "severity": "warn"}}]), "y": ("string", ["unique"])},
        [{"row_count": {"max": 0, "severity": "warn"}}])
    rows = [(None, "a"), (-5, "b"), (-6, "c"), (1, "d")]
    result = validate(frame(spark, {"x": "bigint", "y": "string"}, rows), "orders", specs_for_model(model))

    assert [(o.description, o.severity, o.success) for o in result.outcomes] == [
        ("x is not null", ERROR, False), ("x >= 0", WARN, False), ("y is unique", ERROR, True),
        ("row count <= 0", WARN, False)]
    assert [o.description for o in result.failed_errors] == ["x is not null"]
    assert [o.description for o in result.failed_warnings] == ["x >= 0", "row count <= 0"]
    assert result.summary().splitlines() == [
        "orders: 3 of 4 checks failed (1 errors, 2 warnings) on 4 rows",
        "- [error] x is not null: 1 of 4 rows fail (e.g. None)",
        "- [warn] x >= 0: 2 of 4 rows fail (e.g. -5, -6)",
        "- [warn] row count <= 0: 4 rows",
    ]


def test_only_warnings_failing_leaves_no_errors(spark):
    specs = specs_for_model(make_model({"x": ("bigint", [{"not_null": {"severity": "warn"}}])}))
    result = validate(frame(spark, {"x": "bigint"}, [(None,), (None,), (1,)]), "orders", specs)
    assert not result.passed and result.failed_errors == []
    assert [(o.severity, o.unexpected_count) for o in result.failed_warnings] == [(WARN, 2)]


def test_an_empty_table_passes_everything_but_a_minimum_row_count(spark):
    types = {"x": "bigint", "y": "bigint", "s": "string"}
    model = make_model(
        {"x": ("bigint", ["not_null", "unique", {"range": {"min": 0}}]), "y": ("bigint", []),
         "s": ("string", [{"accepted_values": {"values": ["a"]}}])},
        [{"unique_combination": {"columns": ["x", "y"]}}, {"greater_or_equal": {"column": "x", "than": "y"}},
         {"row_count": {"min": 1}}])
    result = validate(frame(spark, types, []), "orders", specs_for_model(model))
    assert [o.description for o in result.outcomes if not o.success] == ["row count >= 1"]
    assert all(o.unexpected_count == 0 for o in result.outcomes if o.spec.test != "row_count")
    assert result.rows_checked == 0


def test_a_test_on_a_column_the_frame_lacks_is_an_error_not_a_failure(spark):
    specs = specs_for_model(make_model({"x": ("bigint", ["not_null"])}))
    with pytest.raises(ValueError, match=r"table 'orders': tests name columns it does not have: \['x'\]"):
        validate(frame(spark, {"y": "bigint"}, [(1,)]), "orders", specs)


def test_no_specs_means_a_passing_result_without_running_anything(spark):
    result = validate(frame(spark, {"x": "bigint"}, [(1,)]), "orders", [])
    assert result.passed and result.outcomes == ()


def test_a_cache_the_caller_made_is_left_in_place(spark):
    df = frame(spark, {"x": "bigint"}, [(1,)]).cache()
    validate(df, "orders", specs_for_model(make_model({"x": ("bigint", ["not_null"])})))
    assert df.is_cached
    df.unpersist()


def test_an_expectation_spark_cannot_evaluate_fails_with_the_reason(spark):
    # Spark's ANSI mode refuses to compare a bigint column with the string 'x'.
    specs = specs_for_model(make_model({"x": ("bigint", [{"accepted_values": {"values": ["x"]}}])}))
    result = validate(frame(spark, {"x": "bigint"}, [(1,)]), "orders", specs)
    [outcome] = result.failed_errors
    assert "CAST_INVALID_INPUT" in outcome.error
    assert "x in ['x']: could not be evaluated: [CAST_INVALID_INPUT]" in result.summary()
