"""Every expectation the shipped project declares fails on a table built to break it.

For each model and source with tests, four rows are built from the declared tests alone: row 0
is null wherever a column must not be null, rows 1 and 2 are identical (so every uniqueness test
sees a duplicate) and hold values outside every accepted set and range, and row 3 has each
`greater_or_equal` pair the wrong way round. A check that could not fail would pass here.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql.pandas.types import from_arrow_schema

from offsets_platform.lake.tables import TABLES, table_spec, with_model_tables
from offsets_platform.models import default_project
from offsets_platform.models.project import model_table_specs
from offsets_platform.quality import CheckSpec, specs_for_model, specs_for_source, validate

# the shipped project's tables, its models' and the bronze tables it reads
SHIPPED_TABLES = with_model_tables(TABLES, model_table_specs())
LOW_TIME, HIGH_TIME = datetime(2000, 1, 1, tzinfo=timezone.utc), datetime(2030, 1, 1, tzinfo=timezone.utc)


def _bad_value(arrow_type, specs: list[CheckSpec], column: str, pair_row: bool):
    """A value breaking every value test of the column (for strings: outside any accepted set).
    In the pair row, the right-hand side of each `greater_or_equal` is made the larger one."""
    import pyarrow as pa

    greater = pair_row and any(s.test == "greater_or_equal" and s.args["than"] == column for s in specs)
    if pa.types.is_timestamp(arrow_type):
        return HIGH_TIME if greater else LOW_TIME
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        value = 10**6 if greater else -5
        for spec in [s for s in specs if s.test == "range" and s.columns == (column,) and not greater]:
            value = spec.args["min"] - 5 if "min" in spec.args else spec.args["max"] + 5
        return float(value) if pa.types.is_floating(arrow_type) else value
    if pa.types.is_boolean(arrow_type):
        return True
    if pa.types.is_list(arrow_type):
        return ["x"]
    if pa.types.is_binary(arrow_type):
        return b"\x00"
    return "not-a-valid-value"


def _broken_rows(table: str, specs: list[CheckSpec]) -> list[dict]:
    """Row 0 nulls, rows 1 and 2 duplicates of bad values, row 3 with every pair reversed."""
    schema = table_spec(table, SHIPPED_TABLES).schema
    must_not_be_null = {s.columns[0] for s in specs if s.test == "not_null"}
    bad = {f.name: _bad_value(f.type, specs, f.name, pair_row=False) for f in schema}
    nulls = {name: (None if name in must_not_be_null else value) for name, value in bad.items()}
    reversed_pairs = {f.name: _bad_value(f.type, specs, f.name, pair_row=True) for f in schema}
    return [nulls, dict(bad), dict(bad), reversed_pairs]


def _tables_with_tests() -> list[tuple[str, list[CheckSpec]]]:
    project = default_project()
    tables = [(m.name, specs_for_model(m)) for m in project.models]
    tables += [(s.name, specs_for_source(s)) for s in project.sources.values()]
    return [(name, specs) for name, specs in tables if specs]


@pytest.mark.parametrize("table,specs", _tables_with_tests(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_declared_check_fails_on_a_broken_table(spark, table, specs):
    schema = from_arrow_schema(table_spec(table, SHIPPED_TABLES).schema)
    frame = spark.createDataFrame(_broken_rows(table, specs), schema)
    result = validate(frame, table, specs)
    passing = [outcome.description for outcome in result.outcomes if outcome.success]
    assert not passing, f"{table}: these checks passed on broken data: {passing}"
    assert not result.passed
