"""The cluster report and its figures: Plotly over the silver and gold tables (no Dagster here).

- `figures`: one function per figure, each `f(lake) -> plotly Figure`; `FIGURES` maps the
  report's stable element ids to them.
- the rows that need a person now (offsets expiring soon, retention losses, cleanup
  candidates) come from offsets_platform.views.attention, which every front end shares.
- `html`: `write_report(lake, path)`, one self-contained HTML file with plotly.js inline.
"""

from offsets_platform.views.attention import cleanup_rows, expiring_soon, retention_losses
from offsets_platform.views.report.figures import (FIGURES, build_figures, coordinator_metrics_figure,
                                             expiration_calendar_figure, group_states_figure, key_numbers,
                                             lag_heatmap_figure, retention_figure)
from offsets_platform.views.report.html import report_path, report_size, write_report

__all__ = [
    "FIGURES", "build_figures", "key_numbers", "group_states_figure", "lag_heatmap_figure", "retention_figure",
    "expiration_calendar_figure", "coordinator_metrics_figure", "expiring_soon", "retention_losses",
    "cleanup_rows", "report_path", "report_size", "write_report",
]
