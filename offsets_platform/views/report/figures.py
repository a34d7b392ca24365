"""One Plotly figure per question an operator asks, drawn from the silver and gold tables.

The rules (expiration, lag, retention loss) live in the Spark SQL models; these functions only
read their results and arrange them for the eye: filter, pivot, count per day. Each function
takes a Lake and returns a `plotly.graph_objects.Figure`. A missing or empty table gives an empty
figure whose title ends in "no data", so a report or a notebook never fails on a quiet cluster.

Each figure carries its key numbers in `layout.meta` (a dict of plain numbers): the report
prints them under the figure and the Dagster asset puts them in its metadata.

A large cluster (a thousand groups, ten thousand partitions) would make a figure no eye can read
and a report of hundreds of megabytes. So each figure draws at most a fixed number of rows, the
ones that need attention first, and its axis title says "the N of M"; the key numbers still count
everything, and the notebooks and quick views show every row.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from offsets_platform.views import attention
from offsets_platform.lake import Lake

# One colour per group state, the same in every figure and notebook.
STATE_COLORS = {
    "Stable": "#2ca02c",
    "Empty": "#9e9e9e",
    "Dead": "#222222",
    "PreparingRebalance": "#ff7f0e",
    "CompletingRebalance": "#ffbb33",
    "Assigning": "#17becf",
    "Reconciling": "#9467bd",
    "Unknown": "#d62728",
}

GROUP_STATES_TITLE = "Consumer group states over time"
LAG_TITLE = "Lag in messages, by group and topic-partition"
RETENTION_TITLE = "Retention: messages lost before they were consumed, and the forecast of the next losses"
EXPIRATION_TITLE = "Expiration calendar: committed offsets by the day they expire, per rule"
COORDINATOR_TITLE = "Coordinator metrics over time (KIP-496)"

MAX_TIMELINE_GROUPS = 50  # group states: the groups whose state changed last
MAX_HEATMAP_GROUPS = 40  # lag heatmap rows: the groups with the most lag
MAX_HEATMAP_COLUMNS = 60  # beyond this many topic-partitions, a column per topic (lag summed)
MAX_LOSS_SERIES = 20  # retention losses: the group-topic pairs that lost most; the rest as one bar
MAX_FORECAST_BARS = 50  # retention forecast: the partitions due soonest


def read_table(lake: Lake, name: str, columns: list[str], with_abandoned: bool = True) -> pd.DataFrame:
    """The table's columns as pandas, timestamps as naive UTC; empty if the table does not exist
    (a figure of a model that has not run says "no data"). With `with_abandoned` False, the rows of
    offsets their group abandoned are left out, as the command line, the metrics' lag and the
    alerts leave them out (offsets_platform.views.attention).

    Timestamps lose their (always UTC) zone because plotly.js does not read zone offsets; the
    axes say UTC instead.
    """
    if with_abandoned or not lake.exists(name) or not lake.exists("expirable_offsets"):
        frame = lake.read_arrow(name, columns=columns).to_pandas()
    else:
        selected = ", ".join(f't."{column}"' for column in columns)
        frame = lake.query(f"select {selected} from {name} t where {attention.not_abandoned(name, 't')}",
                           name, "expirable_offsets").to_pandas()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.DatetimeTZDtype):
            frame[column] = frame[column].dt.tz_convert("UTC").dt.tz_localize(None)
    return frame


def no_data_figure(title: str, numbers: dict) -> go.Figure:
    """An empty figure that says so, with the key numbers all zero."""
    figure = go.Figure()
    figure.update_layout(title=f"{title}: no data", meta=numbers, xaxis={"visible": False},
                         yaxis={"visible": False}, height=260)
    figure.add_annotation(text="no data", showarrow=False, font={"size": 18}, xref="paper", yref="paper",
                          x=0.5, y=0.5)
    return figure


def group_states_figure(lake: Lake) -> go.Figure:
    """A timeline per group: each observed state lasts until the group's next observation."""
    numbers = {"groups": 0, "observations": 0, "state_changes": 0}
    history = read_table(lake, "group_state_history", ["group_id", "observed_at", "state", "source"])
    if history.empty:
        return no_data_figure(GROUP_STATES_TITLE, numbers)
    history = history.sort_values(["group_id", "observed_at"], kind="stable")
    # Consecutive observations of the same state are one segment (a commit-heavy group logs the
    # same Stable state many times).
    changed = (history["state"] != history.groupby("group_id")["state"].shift()).to_numpy()
    segments = history[changed].copy()
    # The newest observation of all is "now" as far as the lake knows; groups still in a state
    # then get a segment up to it, plus a sliver so that a state seen only at the end is visible.
    latest, earliest = history["observed_at"].max(), history["observed_at"].min()
    sliver = max((latest - earliest) * 0.01, pd.Timedelta(seconds=1))
    segments["until"] = segments.groupby("group_id")["observed_at"].shift(-1).fillna(latest + sliver)
    all_groups = segments["group_id"].nunique()
    numbers.update(groups=all_groups, observations=len(history), state_changes=len(segments) - all_groups)
    last_change = segments.groupby("group_id")["observed_at"].max().sort_values(ascending=False, kind="stable")
    groups = sorted(last_change.index[:MAX_TIMELINE_GROUPS])
    segments = segments[segments["group_id"].isin(groups)]
    figure = go.Figure()
    for state, rows in segments.groupby("state", sort=True):
        duration_ms = (rows["until"] - rows["observed_at"]).dt.total_seconds() * 1000
        figure.add_trace(go.Bar(
            name=state, orientation="h", y=rows["group_id"], base=rows["observed_at"], x=duration_ms,
            marker_color=STATE_COLORS.get(state), customdata=rows[["until", "source"]].astype(str),
            hovertemplate="%{y}<br>" + state + " from %{base|%Y-%m-%d %H:%M:%S}<br>"
                          "until %{customdata[0]}<br>seen in the %{customdata[1]}<extra></extra>"))
    figure.update_layout(title=GROUP_STATES_TITLE, barmode="overlay", meta=numbers, legend_title_text="state",
                         height=max(360, 22 * len(groups) + 160))
    figure.update_xaxes(type="date", title_text="time (UTC)")
    figure.update_yaxes(categoryorder="array", categoryarray=groups[::-1],
                        title_text=_drawn("group", len(groups), all_groups, "whose state changed last"))
    return figure


def lag_heatmap_figure(lake: Lake) -> go.Figure:
    """consumer_lag's lag_messages as a group x topic-partition grid (blank: no committed offset)."""
    numbers = {"groups": 0, "partitions": 0, "total_lag_messages": 0, "max_lag_messages": 0}
    lag = read_table(lake, "consumer_lag", ["group_id", "topic", "partition_id", "lag_messages", "lag_ms",
                                            "is_below_log_start"], with_abandoned=False)
    if lag.empty:
        return no_data_figure(LAG_TITLE, numbers)
    numbers.update(groups=lag["group_id"].nunique(), partitions=len(lag[["topic", "partition_id"]].drop_duplicates()),
                   total_lag_messages=int(lag["lag_messages"].sum()), max_lag_messages=int(lag["lag_messages"].max()))
    by_group = lag.groupby("group_id")["lag_messages"].sum().sort_values(ascending=False, kind="stable")
    lag = lag[lag["group_id"].isin(by_group.index[:MAX_HEATMAP_GROUPS])]
    lag = lag.sort_values(["topic", "partition_id", "group_id"])
    lag["column"] = lag["topic"] + "-" + lag["partition_id"].astype(str)
    per_topic = lag["column"].nunique() > MAX_HEATMAP_COLUMNS
    if per_topic:  # the lag of a topic's partitions summed; its oldest unconsumed message
        lag = lag.groupby(["group_id", "topic"], as_index=False).agg(
            lag_messages=("lag_messages", lambda lags: lags.sum(min_count=1)), lag_ms=("lag_ms", "max"))
        by_topic = lag.groupby("topic")["lag_messages"].sum().sort_values(ascending=False, kind="stable")
        lag = lag[lag["topic"].isin(by_topic.index[:MAX_HEATMAP_COLUMNS])].sort_values(["topic", "group_id"])
        lag["column"] = lag["topic"]
    columns = list(dict.fromkeys(lag["column"]))  # topic, then partition number
    # Int64 keeps the counts whole where pivoting leaves gaps (a group without that partition).
    drawn = set(lag["group_id"])
    rows = [group for group in by_group.index if group in drawn]  # most lag on top
    grid = lag.pivot(index="group_id", columns="column", values="lag_messages").reindex(rows)[columns].astype("Int64")
    lag_s = lag.pivot(index="group_id", columns="column", values="lag_ms").reindex(rows)[columns]
    figure = go.Figure(go.Heatmap(
        z=_cells(grid), x=columns, y=list(grid.index), customdata=_cells(lag_s / 1000), colorscale="YlOrRd",
        zmin=0, colorbar={"title": {"text": "messages"}}, hoverongaps=False,
        hovertemplate="%{y} on %{x}<br>lag %{z:,} messages<br>oldest unconsumed %{customdata:,.1f} s old"
                      "<extra></extra>"))
    # Room for the column labels, slanted, below the rows: without it a long topic name takes the
    # height the rows were given and squeezes them into a strip. About 7 px a character at the
    # default font, times sin 45° (0.7) for the slant, rounded up.
    labels_px = int(0.75 * 7 * max(len(str(column)) for column in columns))
    figure.update_layout(title=LAG_TITLE, meta=numbers, height=max(360, 28 * len(grid.index) + 200 + labels_px))
    figure.update_xaxes(type="category", tickangle=-45, automargin=True, title_text=(
        f"topic (its partitions' lag summed; {numbers['partitions']:,} partitions)" if per_topic else "topic-partition"))
    figure.update_yaxes(type="category", autorange="reversed",
                        title_text=_drawn("group", len(grid.index), numbers["groups"], "with the most lag"))
    return figure


def retention_figure(lake: Lake) -> go.Figure:
    """Top: messages retention deleted before a watched group read them (unconsumed_messages).
    Bottom: for every group and partition still behind, hours until retention deletes what it
    has not read (retention_forecast; negative: due already)."""
    numbers = {"messages_lost": 0, "groups_losing": 0, "partitions_at_risk": 0, "at_risk_within_24h": 0}
    lost = read_table(lake, "unconsumed_messages", ["group_id", "topic", "partition_id", "observed_at", "count_lost"],
                      with_abandoned=False)
    forecast = read_table(lake, "retention_forecast", ["group_id", "topic", "partition_id", "unread_in_log",
                                                       "hours_left", "deletion_expected_at"], with_abandoned=False)
    if lost.empty and forecast.empty:
        return no_data_figure(RETENTION_TITLE, numbers)
    forecast = forecast.dropna(subset=["hours_left"])
    numbers.update(messages_lost=int(lost["count_lost"].sum()), groups_losing=int(lost["group_id"].nunique()),
                   partitions_at_risk=len(forecast), at_risk_within_24h=int((forecast["hours_left"] <= 24).sum()))
    figure = make_subplots(rows=2, cols=1, vertical_spacing=0.25, subplot_titles=(
        "messages deleted by retention before the group consumed them (KIP-490)",
        "hours until retention deletes messages the group has not consumed (at its current lag)"))
    lost["series"] = lost["group_id"] + " · " + lost["topic"]
    most_lost = lost.groupby("series")["count_lost"].sum().sort_values(ascending=False, kind="stable")
    others = most_lost.index[MAX_LOSS_SERIES:]
    if len(others):  # one bar for the pairs that lost least, so the legend stays readable
        lost.loc[lost["series"].isin(others), "series"] = f"{len(others):,} other group · topic pairs"
    for series, rows in lost.groupby("series", sort=True):
        per_snapshot = rows.groupby("observed_at", as_index=False)["count_lost"].sum()
        figure.add_trace(go.Bar(name=series, x=per_snapshot["observed_at"], y=per_snapshot["count_lost"],
                                hovertemplate="%{x|%H:%M:%S}: %{y:,} messages<extra>" + f"{series}</extra>"),
                         row=1, col=1)
    if lost.empty:
        _say_no_data(figure, row=1)
    if forecast.empty:
        _say_no_data(figure, row=2)
    else:
        at_risk = len(forecast)
        forecast = forecast.sort_values("hours_left", kind="stable").head(MAX_FORECAST_BARS)
        labels = forecast["group_id"] + " · " + forecast["topic"] + "-" + forecast["partition_id"].astype(str)
        figure.add_trace(go.Bar(
            name="forecast", orientation="h", y=labels, x=forecast["hours_left"], showlegend=False,
            marker_color=["#d62728" if hours <= 24 else "#1f77b4" for hours in forecast["hours_left"]],
            # the hours as text too: a partition due now has a bar too short to see
            texttemplate="%{x:.2f} h", textposition="outside", cliponaxis=False,
            customdata=forecast[["unread_in_log", "deletion_expected_at"]].astype(str),
            hovertemplate="%{y}<br>%{customdata[0]} unread messages still in the log<br>deletion expected %{customdata[1]} UTC"
                          "<br>%{x:.2f} h left<extra></extra>"), row=2, col=1)
        figure.update_yaxes(autorange="reversed", type="category", row=2, col=1,
                            title_text=_drawn("partition", len(forecast), at_risk, "due soonest"))
        # room on both sides for the text of bars that point left (due already) or right
        hours = forecast["hours_left"]
        margin = max(hours.max() - min(hours.min(), 0), 1) * 0.15
        figure.update_xaxes(range=[min(hours.min(), 0) - margin, max(hours.max(), 0) + margin], row=2, col=1)
    figure.update_layout(title=RETENTION_TITLE, barmode="stack", meta=numbers,
                         height=max(560, 22 * len(forecast) + 480), legend_title_text="group · topic")
    figure.update_xaxes(title_text="snapshot time (UTC)", type="date", tickformat="%H:%M:%S\n%b %d", row=1, col=1)
    figure.update_xaxes(title_text="hours left (red: within 24 h or due)", row=2, col=1)
    figure.update_yaxes(title_text="messages", row=1, col=1)
    return figure


def expiration_calendar_figure(lake: Lake) -> go.Figure:
    """Offsets with an expires_at, counted per UTC day and rule (offsets past due included, on the
    day they became due). Offsets whose rule is `not_eligible` have no expires_at: not shown; nor
    are those Kafka expires at a time outside the years 1-9999 (a client chose the retention),
    which the numbers still count."""
    numbers = {"offsets_that_expire": 0, "already_due": 0, "within_24h": 0, "not_eligible": 0}
    offsets = read_table(lake, "expirable_offsets", ["rule", "expires_at", "is_expired", "hours_until_expiry",
                                                     "expires_at_ms"])
    numbers["not_eligible"] = int((offsets["rule"] == "not_eligible").sum())
    expiring = offsets.dropna(subset=["expires_at_ms"])
    if expiring.empty:
        return no_data_figure(EXPIRATION_TITLE, numbers)
    due = expiring["is_expired"].astype(bool)
    numbers.update(offsets_that_expire=len(expiring), already_due=int(due.sum()),
                   within_24h=int((~due & (expiring["hours_until_expiry"] <= 24)).sum()))
    expiring = expiring.dropna(subset=["expires_at"])
    if expiring.empty:
        return no_data_figure(EXPIRATION_TITLE, numbers)
    expiring = expiring.assign(day=expiring["expires_at"].dt.floor("D"))
    calendar = expiring.groupby(["day", "rule"], as_index=False).size().rename(columns={"size": "offsets"})
    figure = go.Figure()
    for rule, rows in calendar.groupby("rule", sort=True):
        figure.add_trace(go.Bar(name=rule, x=rows["day"], y=rows["offsets"],
                                hovertemplate="%{x|%Y-%m-%d}: %{y:,} offsets<extra>" + rule + "</extra>"))
    figure.update_layout(title=EXPIRATION_TITLE, barmode="stack", meta=numbers, legend_title_text="rule", height=440)
    figure.update_xaxes(type="date", title_text="day the offsets expire (UTC)", dtick=86_400_000, tickformat="%b %d")
    figure.update_yaxes(title_text="offsets")
    return figure


def coordinator_metrics_figure(lake: Lake) -> go.Figure:
    """coordinator_metrics per bucket: commits on top (they outnumber the rest by far), then
    expirations, deletions and completed rebalances. Bars, not lines: a bucket without any event
    has no row, and a line would draw a value across it."""
    # each counter's name, as the key numbers and the bars say it; its column is count_<counter>
    counters = ["offset_commits", "offset_expirations", "offset_deletions", "group_completed_rebalances"]
    numbers = {"buckets": 0, "bucket_minutes": 0, **{counter: 0 for counter in counters}}
    metrics = read_table(lake, "coordinator_metrics",
                         ["bucket_start_at", "bucket_minutes", *(f"count_{counter}" for counter in counters)])
    if metrics.empty:
        return no_data_figure(COORDINATOR_TITLE, numbers)
    metrics = metrics.sort_values("bucket_start_at")
    numbers.update(buckets=len(metrics), bucket_minutes=int(metrics["bucket_minutes"].iloc[0]),
                   **{counter: int(metrics[f"count_{counter}"].sum()) for counter in counters})
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=("offset commits", "expirations, deletions and completed rebalances"))
    for counter in counters:
        figure.add_trace(go.Bar(name=counter.replace("_", " "), x=metrics["bucket_start_at"],
                                y=metrics[f"count_{counter}"]),
                         row=1 if counter == "offset_commits" else 2, col=1)
    figure.update_layout(title=COORDINATOR_TITLE, meta=numbers, height=560, hovermode="x unified", barmode="group")
    figure.update_xaxes(title_text=f"bucket start (UTC), {numbers['bucket_minutes']}-minute buckets", row=2, col=1)
    figure.update_yaxes(title_text="per bucket")
    return figure


# The report's figures in order, by their stable HTML element id (a browser test looks them up).
FIGURES: dict[str, Callable[[Lake], go.Figure]] = {
    "fig-group-states": group_states_figure,
    "fig-lag-heatmap": lag_heatmap_figure,
    "fig-retention": retention_figure,
    "fig-expiration-calendar": expiration_calendar_figure,
    "fig-coordinator-metrics": coordinator_metrics_figure,
}


def build_figures(lake: Lake) -> dict[str, go.Figure]:
    """Every figure of the report, by element id."""
    return {element_id: make(lake) for element_id, make in FIGURES.items()}


def key_numbers(figure: go.Figure) -> dict:
    """The numbers a figure carries (see the module docstring)."""
    return dict(figure.layout.meta or {})


def _cells(grid: pd.DataFrame) -> list[list]:
    """A grid as nested lists with None for missing cells (plotly leaves those blank)."""
    return [[None if pd.isna(value) else value.item() if hasattr(value, "item") else value for value in row]
            for row in grid.to_numpy(dtype=object)]


def _drawn(noun: str, drawn: int, total: int, which: str) -> str:
    """An axis title that says when a figure draws only some of the rows: "group (the 40 of
    1,000 with the most lag)"."""
    return noun if drawn == total else f"{noun} (the {drawn:,} of {total:,} {which})"


def _say_no_data(figure: go.Figure, row: int) -> None:
    """Say "no data" in the middle of one of the two stacked subplots (axes x/y, then x2/y2)."""
    axis = "" if row == 1 else str(row)
    figure.add_annotation(text="no data", showarrow=False, font={"size": 16}, xref=f"x{axis} domain",
                          yref=f"y{axis} domain", x=0.5, y=0.5)
