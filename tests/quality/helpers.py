"""Models built from YAML-like test items, for the quality tests."""

from __future__ import annotations

from pathlib import Path

from offsets_platform.models.project import Column, Model


def make_model(columns: dict[str, tuple[str, list]], tests: list = (), name: str = "orders") -> Model:
    """A model whose columns map name -> (Spark SQL type, column tests)."""
    return Model(name=name, layer="silver", sql="select 1", sql_path=Path(f"silver/{name}.sql"),
                 description="", grain="", materialized="table", unique_key=(),
                 columns=tuple(Column(name=column, data_type=data_type, tests=tuple(column_tests))
                               for column, (data_type, column_tests) in columns.items()),
                 tests=tuple(tests))
