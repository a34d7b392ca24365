"""The cluster report: one self-contained HTML file that opens offline.

plotly.js is embedded once, inline in <head>, and every figure is a div (with the stable id of
`figures.FIGURES`) plus a small script that draws it with that one copy. No file, font or
script is loaded from anywhere else. (The plotly.js bundle itself names cdn.plot.ly once, as the
default topojson URL of geographic maps; the report draws no map, so nothing is fetched.)
"""

from __future__ import annotations

import html
import os
from datetime import datetime, timezone
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from offsets_platform.durations import time_left_text
from offsets_platform.lake import Lake
from offsets_platform.views.attention import (
    DEFAULT_WITHIN_HOURS, abandoned_offsets, cleanup_rows, expiring_by_topic, offset_deletes_by_topic, retention_losses,
)
from offsets_platform.views.report.figures import build_figures, key_numbers
from offsets_platform.views.summary import headline

REPORT_NAME = "cluster_report.html"
MAX_TABLE_ROWS = 200  # longer tables end with "and N more"; the notebooks show everything

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1400px; color: #222; }
h1 { margin-bottom: 0.2rem; } .when { color: #666; margin-top: 0; }
pre { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5rem 0 1.2rem; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; }
th { background: #f0f0f0; } td.num { text-align: right; }
.numbers { color: #444; font-size: 0.9rem; } section.figure { margin-bottom: 2rem; }
"""


def report_path(lake: Lake) -> Path | str:
    """Where the report of a lake goes: `<lake root>/../reports/cluster_report.html`; for a lake
    on object storage (`s3://bucket/prefix`) the same beside its prefix, or in the bucket's
    `reports/` when the lake is the whole bucket."""
    if lake.remote:
        bucket, _, prefix = str(lake.root).removeprefix("s3://").partition("/")
        parent = prefix.rpartition("/")[0]
        return f"s3://{bucket}/{parent + '/' if parent else ''}reports/{REPORT_NAME}"
    return lake.root.parent / "reports" / REPORT_NAME


def report_size(lake: Lake, path: str | Path) -> int:
    """The size in bytes of a report written by `write_report` (local or on the lake's storage)."""
    if isinstance(path, str) and path.startswith("s3://"):
        return lake.object_store().get_file_info(path.removeprefix("s3://")).size
    return Path(path).stat().st_size


def write_report(lake: Lake, path: str | Path, figures: dict[str, go.Figure] | None = None) -> Path | str:
    """Write the report of `lake` to `path` (folders created, file replaced whole) and return it.
    An `s3://` path (`report_path` of a lake on object storage) is written there, with the
    lake's connection, in one PUT: readers see the old object or the new one.

    `figures` (element id -> figure, as from `build_figures`) saves building them twice when the
    caller also wants their numbers.
    """

    figures = build_figures(lake) if figures is None else figures
    page = "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Kafka consumer groups: cluster report</title>",
        f"<style>{_STYLE}</style>",
        f'<script type="text/javascript">/* plotly.js for plotly {plotly.__version__}, inline: the report works '
        f"offline */\n{get_plotlyjs()}</script>",
        "</head><body>",
        "<h1>Kafka consumer groups: cluster report</h1>",
        f'<p class="when">written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from the lake at '
        f"{html.escape(str(lake.root))}</p>",
        '<section id="summary"><h2>Headline</h2>',
        *(f"<p>{html.escape(sentence)}</p>" for sentence in headline(lake)),
        "</section>",
        _attention(lake),
        '<section id="figures"><h2>Figures</h2>',
        *(_figure(element_id, figure) for element_id, figure in figures.items()),
        "</section></body></html>",
    ])
    if isinstance(path, str) and path.startswith("s3://"):
        with lake.object_store().open_output_stream(path.removeprefix("s3://")) as out:
            out.write(page.encode("utf-8"))
        return path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Replace the file whole, so a browser or a reader never sees half a report.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(page, encoding="utf-8")
    os.replace(temporary, path)
    return path


def _figure(element_id: str, figure: go.Figure) -> str:
    div = pio.to_html(figure, full_html=False, include_plotlyjs=False, div_id=element_id,
                      config={"displaylogo": False, "responsive": True})
    numbers = " · ".join(f"{name.replace('_', ' ')} {value:,}" for name, value in key_numbers(figure).items())
    return (f'<section class="figure" id="section-{element_id}">{div}'
            f'<p class="numbers">{html.escape(numbers)}</p></section>')


def _attention(lake: Lake) -> str:
    hours = DEFAULT_WITHIN_HOURS
    offset_deletes, group_deletes = cleanup_rows(lake)
    return "\n".join([
        '<section id="attention"><h2>What needs attention</h2>',
        f"<h3>Offsets that expire within {hours} h (or are due already)</h3>",
        _table("table-expiring-soon", expiring_by_topic(lake, hours),
               ["group_id", "topic", "rule", "group_state", "partitions", "due_now", "first_expires_at",
                "hours_until_first"]),
        f"<h3>Groups losing messages to retention (lost already: deleted unread; at risk: unread, still in "
        f"the log, due for deletion within {hours} h)</h3>",
        _table("table-retention-losses", retention_losses(lake, hours),
               ["group_id", "topic", "messages_lost", "messages_lost_at_least", "partitions_lost", "last_loss_at",
                "messages_at_risk", "partitions_due", "next_deletion_at"]),
        "<h3>Abandoned offsets (the group reads on, but no member subscribes to the topic any more; not "
        "counted as lag or loss above)</h3>",
        _table("table-abandoned-offsets", abandoned_offsets(lake),
               ["group_id", "topic", "partitions", "lag_messages", "first_expires_at"]),
        "<h3>Cleanup candidates: OffsetDelete (offsets of topics the group no longer subscribes to)</h3>",
        _table("table-cleanup-offsets", offset_deletes_by_topic(offset_deletes),
               ["group_id", "topic", "partitions", "lag_messages", "first_expires_at"]),
        "<h3>Cleanup candidates: DeleteGroups (groups Empty for long)</h3>",
        _table("table-cleanup-groups", group_deletes,
               ["group_id", "state", "state_entered_at", "classification", "committed_offsets"]),
        "</section>",
    ])


# The tables' headers in words (the rows keep the keys every front end shares).
HEADERS = {
    "group_id": "group", "group_state": "group state", "due_now": "due now", "first_expires_at": "first expires",
    "hours_until_first": "first expires in", "messages_lost": "messages lost (at most)",
    "messages_lost_at_least": "at least", "partitions_lost": "partitions", "last_loss_at": "last loss seen",
    "messages_at_risk": "messages at risk", "partitions_due": "partitions at risk",
    "next_deletion_at": "next deletion", "lag_messages": "lag (messages)", "state_entered_at": "state since",
    "classification": "kind", "committed_offsets": "committed offsets",
}

# Columns in hours, shown as durations.
HOURS = frozenset({"hours_until_first"})


def _table(element_id: str, rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return f'<p id="{element_id}">none</p>'
    head = "".join(f"<th>{html.escape(HEADERS.get(column, column))}</th>" for column in columns)
    body = "".join("<tr>" + "".join(_hours(row.get(column)) if column in HOURS else _cell(row.get(column))
                                    for column in columns) + "</tr>"
                   for row in rows[:MAX_TABLE_ROWS])
    more = f"<p>and {len(rows) - MAX_TABLE_ROWS:,} more</p>" if len(rows) > MAX_TABLE_ROWS else ""
    return f'<table id="{element_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'


def _hours(hours: float | None) -> str:
    return "<td></td>" if hours is None else f'<td class="num">{time_left_text(hours)}</td>'


def _cell(value) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, datetime):
        return f"<td>{value:%Y-%m-%d %H:%M} UTC</td>"
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, float):
        return f'<td class="num">{value:,.1f}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value:,}</td>'
    return f"<td>{html.escape(str(value))}</td>"
