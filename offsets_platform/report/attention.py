"""What needs a person's attention now, as rows (lists of dicts) for the report and the notebooks.

Each function filters or sums a gold table's rows; the rules that produced them (expiry, lag,
retention loss, cleanup safety) stay in the models and in offsets_platform.cleanup.
"""

from __future__ import annotations

import pandas as pd

from offsets_platform.lake import Lake, MissingTable
from offsets_platform.report.figures import read_table

DEFAULT_WITHIN_HOURS = 24


def expiring_soon(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS) -> list[dict]:
    """Committed offsets Kafka will expire within `within_hours` (or already due), soonest first.
    hours_until_expiry rather than expires_at decides: Kafka may expire an offset at a time the
    timestamps cannot show (outside the years 1-9999, expires_at null)."""
    offsets = read_table(lake, "expirable_offsets", ["group", "topic", "partition", "rule", "group_state",
                                                     "committed_offset", "expires_at", "hours_until_expiry",
                                                     "expired_now"])
    soon = offsets[offsets["hours_until_expiry"].notna() & (offsets["hours_until_expiry"] <= within_hours)]
    return _rows(soon.sort_values(["hours_until_expiry", "group", "topic", "partition"]))


def retention_losses(lake: Lake, within_hours: float = DEFAULT_WITHIN_HOURS) -> list[dict]:
    """Per group and topic: messages retention already deleted before the group read them
    (unconsumed_messages), and what it is forecast to delete within `within_hours`
    (retention_forecast). Groups that lost the most come first."""
    lost = read_table(lake, "unconsumed_messages", ["group", "topic", "partition", "observed_at", "lost_count"])
    forecast = read_table(lake, "retention_forecast", ["group", "topic", "partition", "lag_messages",
                                                       "hours_left", "deletion_expected_at"])
    lost = lost.groupby(["group", "topic"], as_index=False).agg(
        messages_lost=("lost_count", "sum"), partitions_lost=("partition", "nunique"),
        last_loss_at=("observed_at", "max"))
    due = forecast[forecast["hours_left"] <= within_hours].groupby(["group", "topic"], as_index=False).agg(
        partitions_due=("partition", "nunique"), messages_at_risk=("lag_messages", "sum"),
        next_deletion_at=("deletion_expected_at", "min"))
    both = lost.merge(due, on=["group", "topic"], how="outer")
    for column in ("messages_lost", "partitions_lost", "partitions_due", "messages_at_risk"):
        both[column] = both[column].fillna(0).astype("int64")
    return _rows(both.sort_values(["messages_lost", "messages_at_risk", "group", "topic"],
                                  ascending=[False, False, True, True]))


def cleanup_rows(lake: Lake) -> tuple[list[dict], list[dict]]:
    """(OffsetDelete candidates, DeleteGroups candidates) from offsets_platform.cleanup; empty
    when the models have not run, as the report's figures then say "no data"."""
    from offsets_platform.cleanup.candidates import cleanup_candidates

    try:
        candidates = cleanup_candidates(lake)
    except MissingTable:
        return [], []
    return candidates.offset_deletes, candidates.group_deletes


def _rows(frame: pd.DataFrame) -> list[dict]:
    """Plain Python rows: pandas' missing values become None and timestamps stay datetimes."""
    frame = frame.astype(object).where(frame.notna(), None)
    return [{key: (value.to_pydatetime() if isinstance(value, pd.Timestamp) else value) for key, value in row.items()}
            for row in frame.to_dict("records")]
