"""The cluster report as a Dagster asset: one offline HTML file next to the lake.

It is written to `<lake root>/../reports/cluster_report.html` (offsets_platform.views.report; beside the
prefix, on the same storage, for a lake on S3), after the
gold tables it draws and the cleanup plan whose candidates it lists.
"""

# No `from __future__ import annotations` here: Dagster inspects the `context` annotation.
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from offsets_platform_dagster.resources import LakeResource
from offsets_platform.views.report import build_figures, key_numbers, report_path, report_size, write_report

# Every table the report reads: the figures' tables, then models_summary's and the cleanup
# candidates' (group_state, committed_offsets, group_subscriptions).
REPORT_INPUTS = ["group_state_history", "consumer_lag", "unconsumed_messages", "retention_forecast",
                 "expirable_offsets", "coordinator_metrics", "group_state", "committed_offsets",
                 "group_subscriptions", "cleanup_plans"]


@asset(
    name="cluster_report",
    group_name="reports",
    description="One self-contained HTML report (Plotly, works offline): group states, lag, retention loss, "
                "expirations, coordinator metrics and what needs attention.",
    deps=REPORT_INPUTS,
    kinds={"html", "plotly"},
)
def cluster_report(context: AssetExecutionContext, lake: LakeResource) -> MaterializeResult:
    the_lake = lake.lake()
    figures = build_figures(the_lake)
    path = write_report(the_lake, report_path(the_lake), figures=figures)
    size = report_size(the_lake, path)
    context.log.info(f"cluster report written to {path} ({size / 1e6:.1f} MB)")
    # The figures' key numbers, as `<figure>.<number>` (e.g. `lag_heatmap.total_lag_messages`).
    numbers = {f"{element_id.removeprefix('fig-').replace('-', '_')}.{name}": value
               for element_id, figure in figures.items() for name, value in key_numbers(figure).items()}
    return MaterializeResult(metadata={
        "path": MetadataValue.path(str(path)),
        "size_bytes": size,
        "figures": MetadataValue.json(sorted(figures)),
        **numbers,
    })
