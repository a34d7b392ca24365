"""Prometheus metrics over the lake's gold tables: an HTTP server for Prometheus to scrape, a file
for node_exporter's textfile collector, and alerting rules for Prometheus (docs/metrics.md).

Everything is read again on each scrape or write, with delta-rs (no Spark), so the numbers are
those of the models' latest refresh and the exporter holds no state of its own. prometheus_client
renders them: OpenMetrics 1.0.0, which Prometheus asks for, or Prometheus's text format 0.0.4,
the only one node_exporter's textfile collector parses.
"""

from __future__ import annotations

from typing import Sequence

from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from offsets_platform.views.attention import DEFAULT_WITHIN_HOURS
from offsets_platform.lake import Lake
from offsets_platform.views.metrics.collector import lake_registry
from offsets_platform.views.metrics.from_lake import collect

__all__ = ["DEFAULT_WITHIN_HOURS", "collect", "exposition", "lake_registry"]


def exposition(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS, openmetrics: bool = True,
               watched_groups: Sequence[str] = ()) -> str:
    """The lake's metrics as OpenMetrics 1.0.0 text, or in Prometheus's text format 0.0.4."""
    render = generate_openmetrics if openmetrics else generate_latest
    return render(lake_registry(lake, within_hours, watched_groups)).decode("utf-8")
