"""Prometheus metrics over the lake's gold tables: the exposition text, an HTTP server for
Prometheus to scrape, and a file for node_exporter's textfile collector (docs/metrics.md).

Everything is read again on each scrape or write, with delta-rs (no Spark), so the numbers are
those of the models' latest refresh and the exporter holds no state of its own.
"""

from __future__ import annotations

from offsets_platform.views.attention import DEFAULT_WITHIN_HOURS
from offsets_platform.lake import Lake
from offsets_platform.metrics.exposition import (
    OPENMETRICS_CONTENT_TYPE,
    PROMETHEUS_CONTENT_TYPE,
    Family,
    escape_label_value,
    render,
)
from offsets_platform.metrics.from_lake import collect

__all__ = ["DEFAULT_WITHIN_HOURS", "Family", "OPENMETRICS_CONTENT_TYPE", "PROMETHEUS_CONTENT_TYPE", "collect",
           "escape_label_value", "exposition", "render"]


def exposition(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS, openmetrics: bool = True) -> str:
    """The lake's metrics as OpenMetrics 1.0.0 text, or in Prometheus's text format 0.0.4."""
    return render(collect(lake, within_hours), openmetrics=openmetrics)
