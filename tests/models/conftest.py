"""Fixtures for the model tests: run the real project on Spark over a hand-built lake."""

from __future__ import annotations

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models import ModelRunner, default_project, lake_for_models


def run_models(spark, lake: Lake, as_of, select: list[str] | None = None, **variables) -> ModelRunner:
    """Refresh the lake's models (`select`: only these) as of a time, with the given variables."""
    runner = ModelRunner(spark, lake, variables={"as_of": as_of.strftime("%Y-%m-%d %H:%M:%S"), **variables},
                         emit=lambda line: None)
    runner.run_all(select)
    return runner


def needed_for(*models: str) -> list[str]:
    """The models to select for a refresh of just these: them and every model they ref."""
    return [model.name for model in default_project().upstream(set(models))]


def rows_by(lake: Lake, table: str, *key: str) -> dict:
    """A table's rows keyed by the given columns (one column: the value itself)."""
    result = {}
    for row in lake.read_arrow(table).to_pylist():
        k = tuple(row[c] for c in key)
        result[k[0] if len(k) == 1 else k] = row
    return result


@pytest.fixture(scope="module")
def module_lake(tmp_path_factory) -> Lake:
    return lake_for_models(tmp_path_factory.mktemp("lake"))
