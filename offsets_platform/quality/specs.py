"""The data tests declared in the dbt-like project's YAML, parsed into `CheckSpec`s.

A test item is a bare name (`not_null`) or a one-key mapping (`range: {min: -1}`); any mapping
may carry `severity: warn` (the default is `error`). Column tests sit under a column's `tests:`;
table tests under a model's or a source table's `tests:`. Anything outside the vocabulary, or
with arguments it does not take, is a `CheckSpecError` naming the table and the test, so a typo
fails when the project is loaded rather than passing silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Iterable

from offsets_platform.lake.tables import table_spec
from offsets_platform.models.project import Model, Source

ERROR = "error"
WARN = "warn"
SEVERITIES = (ERROR, WARN)

COLUMN_TESTS = ("not_null", "unique", "accepted_values", "range")
TABLE_TESTS = ("unique_combination", "greater_or_equal", "row_count")

# The arguments each test takes: (required, optional).
_ARGUMENTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "not_null": (frozenset(), frozenset()),
    "unique": (frozenset(), frozenset()),
    "accepted_values": (frozenset({"values"}), frozenset()),
    "range": (frozenset(), frozenset({"min", "max"})),
    "unique_combination": (frozenset({"columns"}), frozenset()),
    "greater_or_equal": (frozenset({"column", "than"}), frozenset()),
    "row_count": (frozenset(), frozenset({"min", "max"})),
}
_NUMERIC_TYPES = ("tinyint", "smallint", "int", "bigint", "double")


class CheckSpecError(ValueError):
    """A declared test is not in the vocabulary or has bad arguments; the message says where."""


@dataclass(frozen=True)
class CheckSpec:
    """One declared test of one table."""

    table: str
    test: str  # a name from COLUMN_TESTS or TABLE_TESTS
    columns: tuple[str, ...]  # the column(s) it reads; () for row_count
    args: dict[str, Any] = field(hash=False)  # the YAML arguments, without severity
    severity: str = ERROR
    description: str = ""  # one line for people, e.g. "offset >= -1"

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


def specs_for_model(model: Model) -> list[CheckSpec]:
    """The column tests of every column, then the model-level tests, in YAML order."""
    where = f"model {model.name!r}"
    types = {column.name: column.data_type.strip().lower() for column in model.columns}
    specs = []
    for column in model.columns:
        for item in column.tests:
            spec = _parse(item, model.name, where, allowed=COLUMN_TESTS, column=column.name)
            if spec.test == "range" and types[column.name] not in _NUMERIC_TYPES:
                raise CheckSpecError(f"{where}, column {column.name!r}: test 'range' needs a numeric "
                                     f"column, not {column.data_type!r}")
            specs.append(spec)
    specs += [_parse(item, model.name, where, allowed=TABLE_TESTS, known_columns=types) for item in model.tests]
    return _without_duplicates(specs, where)


def specs_for_source(source: Source) -> list[CheckSpec]:
    """The table-level tests sources.yml declares for a bronze table."""
    where = f"source table {source.name!r}"
    known_columns = set(table_spec(source.name).schema.names)
    specs = [_parse(item, source.name, where, allowed=TABLE_TESTS, known_columns=known_columns)
             for item in source.tests]
    return _without_duplicates(specs, where)


def _parse(item: Any, table: str, where: str, *, allowed: tuple[str, ...], column: str | None = None,
           known_columns: Iterable[str] = ()) -> CheckSpec:
    if column is not None:
        where = f"{where}, column {column!r}"
    name, args = _name_and_args(item, where)
    if name not in allowed:
        raise CheckSpecError(f"{where}: unknown test {name!r}{_hint(name, allowed)}")
    where = f"{where}, test {name!r}"
    severity = args.pop("severity", ERROR)
    if severity not in SEVERITIES:
        raise CheckSpecError(f"{where}: severity must be one of {SEVERITIES}, not {severity!r}")
    required, optional = _ARGUMENTS[name]
    missing = sorted(required - set(args))
    unexpected = sorted(set(args) - required - optional)
    if missing or unexpected:
        expected = ", ".join(sorted(required | optional)) or "no arguments"
        raise CheckSpecError(f"{where}: missing arguments {missing} / unexpected arguments {unexpected}; "
                             f"it takes {expected} (and severity)")
    columns, description = _check_arguments(name, args, column, set(known_columns), where)
    return CheckSpec(table=table, test=name, columns=columns, args=args, severity=severity,
                     description=description)


def _name_and_args(item: Any, where: str) -> tuple[str, dict]:
    if isinstance(item, str):
        return item, {}
    if isinstance(item, dict) and len(item) == 1:
        (name, args), = item.items()
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise CheckSpecError(f"{where}: the arguments of test {name!r} must be a mapping, not {args!r}")
        return str(name), dict(args)
    raise CheckSpecError(f"{where}: a test is a name or a one-key mapping {{name: {{arguments}}}}, not {item!r}")


def _hint(name: str, allowed: tuple[str, ...]) -> str:
    if name in COLUMN_TESTS:
        return f"; {name!r} is a column test: put it under the column's tests"
    if name in TABLE_TESTS:
        return f"; {name!r} is a table test: put it under the model's or table's tests"
    return f"; known tests here: {', '.join(allowed)}"


def _check_arguments(name: str, args: dict, column: str | None, known: set[str],
                     where: str) -> tuple[tuple[str, ...], str]:
    """Check the arguments' values; return the columns the test reads and its description."""
    if name == "not_null":
        return (column,), f"{column} is not null"
    if name == "unique":
        return (column,), f"{column} is unique"
    if name == "accepted_values":
        values = args["values"]
        if not isinstance(values, list) or not values:
            raise CheckSpecError(f"{where}: values must be a non-empty list, not {values!r}")
        return (column,), f"{column} in {values!r}"
    if name == "range":
        return (column,), _bounds(args, column, where, integers=False)
    if name == "row_count":
        return (), _bounds(args, "row count", where, integers=True)
    if name == "unique_combination":
        columns = args["columns"]
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise CheckSpecError(f"{where}: columns must be a list of column names, not {columns!r}")
        if len(set(columns)) < 2:  # and GX's compound expectation refuses fewer
            raise CheckSpecError(f"{where}: give two or more distinct columns (for one, use the column "
                                 f"test 'unique'), not {columns!r}")
        _check_known(columns, known, where)
        return tuple(columns), f"({', '.join(columns)}) is unique"
    if name == "greater_or_equal":
        pair = [args["column"], args["than"]]
        if not all(isinstance(c, str) for c in pair):
            raise CheckSpecError(f"{where}: column and than must be column names, not {pair!r}")
        _check_known(pair, known, where)
        return tuple(pair), f"{pair[0]} >= {pair[1]}"
    raise AssertionError(name)  # _ARGUMENTS and this function list the same tests


def _bounds(args: dict, subject: str, where: str, *, integers: bool) -> str:
    low, high = args.get("min"), args.get("max")
    if low is None and high is None:
        raise CheckSpecError(f"{where}: give min, max or both")
    for bound in (low, high):
        # bool is a Real in Python; `min: true` is a YAML slip, not a bound.
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int if integers else Real)
                                  or (integers and bound < 0)):
            kind = "a non-negative integer" if integers else "a number"
            raise CheckSpecError(f"{where}: min and max must each be {kind}, not {bound!r}")
    if low is not None and high is not None and low > high:
        raise CheckSpecError(f"{where}: min {low} is greater than max {high}")
    if low is None:
        return f"{subject} <= {high}"
    if high is None:
        return f"{subject} >= {low}"
    return f"{low} <= {subject} <= {high}"


def _check_known(columns: list[str], known: set[str], where: str) -> None:
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise CheckSpecError(f"{where}: unknown columns {unknown}; columns: {', '.join(sorted(known))}")


def _without_duplicates(specs: list[CheckSpec], where: str) -> list[CheckSpec]:
    # Great Expectations keeps one of two equal expectations in a suite, whatever their
    # severities; reject the repeat so every declared test has its own outcome.
    seen = set()
    for spec in specs:
        key = (spec.test, spec.columns, repr(sorted(spec.args.items())))
        if key in seen:
            raise CheckSpecError(f"{where}: test {spec.test!r} on {list(spec.columns) or 'the table'} "
                                 f"is declared twice")
        seen.add(key)
    return specs
