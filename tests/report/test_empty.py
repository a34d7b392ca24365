"""A lake without data: every figure says "no data", and the report is still written."""

import pyarrow as pa
import pytest

from offsets_platform.models.project import lake_for_models
from offsets_platform.views.report import FIGURES, key_numbers, write_report

TABLES = ["group_state_history", "consumer_lag", "unconsumed_messages", "retention_forecast", "expirable_offsets",
          "coordinator_metrics"]


@pytest.mark.parametrize("tables", ["missing", "empty"])
def test_figures_of_a_lake_without_rows_say_no_data(tmp_path, tables):
    lake = lake_for_models(tmp_path / "lake")
    if tables == "empty":
        for name in TABLES:
            lake.append(name, pa.Table.from_pylist([], schema=lake.spec(name).schema))
    for element_id, make in FIGURES.items():
        figure = make(lake)
        assert figure.layout.title.text.endswith(": no data"), element_id
        assert not figure.data and set(key_numbers(figure).values()) == {0}, element_id

    path = write_report(lake, tmp_path / "reports" / "cluster_report.html")
    page = path.read_text(encoding="utf-8")
    assert page.count(": no data") >= len(FIGURES)
    if tables == "missing":
        assert not lake.root.exists(), "reading for a report creates no table"
