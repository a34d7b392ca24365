"""The read side: every answer the product gives about groups, from one package that reads the lake
(and, for `--live`, the broker through the client adapters in `offsets_platform.kafka`). It never
imports cleanup or ingest (an import contract in pyproject.toml keeps it so); cleanup imports the
candidates from here instead.

- `attention`: the numbers a person looks at (expiring, lost, at risk, lag, abandoned), each
  defined once; `candidates`: what a cleanup may delete (stale offsets, dead groups);
- `from_lake` and `from_broker`: one group or all of them as `GroupView` (`groups`, `describe`,
  `expiring`, `lost`), from the models' tables or from the broker now;
- `summary`: the command line's summaries and the headline;
- `report`: the HTML report and its Plotly figures; `metrics`: the Prometheus metrics and their
  alerting rules; `alerts`: the alert conditions and their webhook.

Two sources give one shape, `GroupView`:
- `from_lake`: the models' silver and gold tables, read with delta-rs's SQL engine (a fraction
  of a second on a demo lake). They are as fresh as the last refresh, and say when that was.
- `from_broker`: the broker now (the describe API of the group's type, OffsetFetch, ListOffsets),
  in the rows and order of Kafka's own `kafka-consumer-groups --describe`.
The rules behind the numbers (lag, expiry, retention losses) stay in the models; these modules
select, sum and order their rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass(frozen=True)
class GroupView:
    """One group: its state and kind, one row per partition it has an offset on (or is assigned),
    and its members.

    `offsets` rows: topic, partition_id, current_offset, log_end_offset, lag, consumer_id, host,
    client_id, and from the lake also expires_at, expiry (the rule or why none applies) and status
    (Burrow's verdict on the partition, consumer_status; None when not evaluated).
    `members` rows: consumer_id, group_instance_id, host, client_id, partitions (assigned count,
    None when not known), subscription (topic names or the regular expression).
    `removed` rows (from the lake only): topic, partition_id, removed_at, removed_by: the offsets
    whose latest record in the log is a tombstone, and who removed them, in words.
    `last_reset` (from the lake only): the group's last offset reset this tool applied
    (`from_lake.last_resets`), None when none.
    `source` says where the answer comes from and how fresh it is.
    """

    group_id: str
    state: str
    kind: str
    protocol: str
    source: str
    offsets: list[dict] = field(default_factory=list)
    members: list[dict] = field(default_factory=list)
    status: str | None = None  # Burrow's verdict on the group (consumer_status); None when not evaluated
    removed: list[dict] = field(default_factory=list)
    last_reset: dict | None = None


def subscription(topics: Sequence[str] | None, regex: str | None) -> str | None:
    """A member's subscription as one value: its topic names, then its regular expression."""
    parts = ([",".join(topics)] if topics else []) + ([f"/{regex}/"] if regex else [])
    return " ".join(parts) or None
