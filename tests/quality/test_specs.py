"""Parsing the YAML test vocabulary into CheckSpecs, and rejecting what is not in it."""

import pytest

from offsets_platform.models.project import Source, default_project
from offsets_platform.quality import ERROR, WARN, CheckSpec, CheckSpecError, specs_for_model, specs_for_source
from tests.quality.helpers import make_model

pytestmark = pytest.mark.fast  # make test-fast


COLUMNS = {"offset": ("bigint", []), "state": ("string", []), "a": ("timestamp", []), "b": ("timestamp", [])}


def column_spec(data_type: str, item) -> CheckSpec:
    [spec] = specs_for_model(make_model({"c": (data_type, [item])}))
    return spec


def table_spec(item) -> CheckSpec:
    [spec] = specs_for_model(make_model(COLUMNS, [item]))
    return spec


@pytest.mark.parametrize("item, data_type, test, args, description", [
    ("not_null", "bigint", "not_null", {}, "c is not null"),
    ("unique", "string", "unique", {}, "c is unique"),
    ({"accepted_values": {"values": ["x", "y"]}}, "string", "accepted_values", {"values": ["x", "y"]},
     "c in ['x', 'y']"),
    ({"range": {"min": -1}}, "bigint", "range", {"min": -1}, "c >= -1"),
    ({"range": {"max": 2.5}}, "double", "range", {"max": 2.5}, "c <= 2.5"),
    ({"range": {"min": 0, "max": 9}}, "int", "range", {"min": 0, "max": 9}, "0 <= c <= 9"),
])
def test_column_tests_become_specs_on_their_column(item, data_type, test, args, description):
    spec = column_spec(data_type, item)
    assert spec == CheckSpec(table="orders", test=test, columns=("c",), args=args, severity=ERROR,
                             description=description)


@pytest.mark.parametrize("item, test, columns, description", [
    ({"unique_combination": {"columns": ["offset", "state"]}}, "unique_combination", ("offset", "state"),
     "(offset, state) is unique"),
    ({"greater_or_equal": {"column": "a", "than": "b"}}, "greater_or_equal", ("a", "b"), "a >= b"),
    ({"row_count": {"min": 1}}, "row_count", (), "row count >= 1"),
    ({"row_count": {"max": 0}}, "row_count", (), "row count <= 0"),
    ({"row_count": {"min": 1, "max": 5}}, "row_count", (), "1 <= row count <= 5"),
])
def test_table_tests_become_specs_on_the_table(item, test, columns, description):
    spec = table_spec(item)
    assert (spec.test, spec.columns, spec.description, spec.severity) == (test, columns, description, ERROR)


def test_severity_warn_is_kept_apart_from_the_arguments():
    spec = column_spec("bigint", {"range": {"min": 0, "severity": "warn"}})
    assert spec.severity == WARN and spec.args == {"min": 0} and not spec.is_error
    assert column_spec("bigint", {"not_null": {"severity": "warn"}}).severity == WARN


def test_column_tests_come_first_then_model_tests_in_yaml_order():
    model = make_model({"x": ("int", ["not_null", "unique"]), "y": ("int", ["not_null"])},
                       [{"row_count": {"min": 1}}, {"unique_combination": {"columns": ["x", "y"]}}])
    assert [(s.test, s.columns) for s in specs_for_model(model)] == [
        ("not_null", ("x",)), ("unique", ("x",)), ("not_null", ("y",)), ("row_count", ()),
        ("unique_combination", ("x", "y"))]


def test_source_tests_are_checked_against_the_registered_schema():
    source = Source(name="rejected_records", layer="bronze",
                    tests=({"row_count": {"max": 0, "severity": "warn"}},
                           {"unique_combination": {"columns": ["source_partition", "source_offset"]}}))
    specs = specs_for_source(source)
    assert [(s.table, s.test, s.severity) for s in specs] == [
        ("rejected_records", "row_count", WARN), ("rejected_records", "unique_combination", ERROR)]
    bad = Source(name="rejected_records", layer="bronze",
                 tests=({"unique_combination": {"columns": ["source_offset", "nope"]}},))
    with pytest.raises(CheckSpecError, match=r"source table 'rejected_records', test 'unique_combination': "
                                             r"unknown columns \['nope'\]"):
        specs_for_source(bad)


def test_the_shipped_project_declares_only_known_tests():
    project = default_project()
    specs = [s for m in project.models for s in specs_for_model(m)]
    specs += [s for source in project.sources.values() for s in specs_for_source(source)]
    assert any(s.table == "rejected_records" and s.test == "row_count" and s.severity == WARN for s in specs)


@pytest.mark.parametrize("item, data_type, message", [
    ("not_nul", "bigint", r"model 'orders', column 'c': unknown test 'not_nul'; known tests here: not_null"),
    ("row_count", "bigint", r"column 'c': unknown test 'row_count'; 'row_count' is a table test"),
    ({"not_null": {"strict": True}}, "bigint", r"test 'not_null': .*unexpected arguments \['strict'\]"),
    ({"accepted_values": {}}, "string", r"test 'accepted_values': missing arguments \['values'\]"),
    ({"accepted_values": {"values": []}}, "string", r"values must be a non-empty list"),
    ({"accepted_values": ["x"]}, "string", r"the arguments of test 'accepted_values' must be a mapping"),
    ({"range": {}}, "bigint", r"test 'range': give min, max or both"),
    ({"range": {"min": "0"}}, "bigint", r"min and max must each be a number, not '0'"),
    ({"range": {"min": True}}, "bigint", r"min and max must each be a number, not True"),
    ({"range": {"min": 5, "max": 1}}, "bigint", r"min 5 is greater than max 1"),
    ({"range": {"min": 0}}, "string", r"test 'range' needs a numeric column, not 'string'"),
    ({"not_null": {"severity": "fatal"}}, "bigint", r"severity must be one of \('error', 'warn'\), not 'fatal'"),
    ({"not_null": {}, "unique": {}}, "bigint", r"a test is a name or a one-key mapping"),
    (42, "bigint", r"a test is a name or a one-key mapping"),
])
def test_bad_column_tests_raise_naming_the_model_column_and_test(item, data_type, message):
    with pytest.raises(CheckSpecError, match=message):
        column_spec(data_type, item)


@pytest.mark.parametrize("item, message", [
    ("unique", r"model 'orders': unknown test 'unique'; 'unique' is a column test"),
    ({"unique_combination": {"columns": "offset"}}, r"columns must be a list of column names"),
    ({"unique_combination": {"columns": ["offset"]}}, r"give two or more distinct columns \(for one, use the "
                                                      r"column test 'unique'\)"),
    ({"unique_combination": {"columns": ["offset", "nope"]}}, r"unknown columns \['nope'\]"),
    ({"greater_or_equal": {"column": "a"}}, r"test 'greater_or_equal': missing arguments \['than'\]"),
    ({"greater_or_equal": {"column": "a", "than": "zz"}}, r"unknown columns \['zz'\]"),
    ({"row_count": {"min": -1}}, r"min and max must each be a non-negative integer, not -1"),
    ({"row_count": {"max": 1.5}}, r"min and max must each be a non-negative integer, not 1.5"),
    ({"freshness": {"hours": 1}}, r"unknown test 'freshness'"),
])
def test_bad_model_tests_raise_naming_the_model_and_test(item, message):
    with pytest.raises(CheckSpecError, match=message):
        table_spec(item)


def test_a_test_declared_twice_is_rejected_whatever_its_severity():
    model = make_model({"x": ("int", ["not_null", {"not_null": {"severity": "warn"}}])})
    with pytest.raises(CheckSpecError, match=r"model 'orders': test 'not_null' on \['x'\] is declared twice"):
        specs_for_model(model)


def test_spec_errors_are_value_errors():
    assert issubclass(CheckSpecError, ValueError)
