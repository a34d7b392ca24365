"""Before ingest reads: is the log at the configured address still the one the lake holds?

Saved positions are offsets, and offsets mean something only in the log they came from. Ingest
would otherwise resume from them in any log: in a cluster rebuilt at the same address, or a topic
created again, offsets start at 0 and every record below the saved positions would be skipped for
ever; in a log restored from an older copy the records between its new end and the saved
positions would be skipped when the log grows past them again. So ingest stops, with a message
that says what it found, when:

- the cluster id or the topic id differs from the ones the lake recorded (another cluster, a
  rebuilt cluster, a topic deleted and created again);
- a partition the lake read is gone, or ends below the lake's position in it (records lost, or
  a restore from an older copy);
- a partition starts above the lake's position in it: records were deleted before ingest read
  them. That one may be accepted (`accept_gap`): ingest then reads on from the log start and
  records in the checkpoints how many records it skipped.

The way out of the first two is to start the lake over for this log (`offsets-platform rebase`,
which moves every table aside, offsets_platform.lake.archive), or to point ingest at the
cluster the lake belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa

from offsets_platform.kafka.log_identity import LogIdentity
from offsets_platform.kafka.offsets_topic import ReadPlan
from offsets_platform.lake import Lake
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.lake.tables import UTC_MICROS

IDENTITY = "offsets_topic_identity"
SHOWN_PARTITIONS = 3  # partitions a message lists before "and N more"


class LogMismatch(RuntimeError):
    """The log at the address is not (or no longer) the log the lake holds; nothing was read."""


@dataclass(frozen=True)
class Gap:
    """Records of one partition deleted before ingest read them."""

    partition: int
    position: int  # where the lake's reading stopped
    log_start: int  # where the log now starts

    @property
    def records(self) -> int:
        return self.log_start - self.position


def recorded_identity(lake: Lake, topic: str) -> LogIdentity | None:
    """The identity the lake recorded for `topic`, or None (no ingest recorded one yet)."""
    rows = lake.query(f"select cluster_id, topic_id from {IDENTITY} where source_topic = {lake_string(topic)}",
                      IDENTITY).to_pylist()
    return LogIdentity(**rows[0]) if rows else None


def identity_row(identity: LogIdentity, topic: str, run_id: str) -> pa.Table:
    return pa.table({
        "source_topic": [topic], "cluster_id": [identity.cluster_id], "topic_id": [identity.topic_id],
        "ingest_run_id": [run_id],
        "recorded_at": pa.array([datetime.now(timezone.utc)], UTC_MICROS),
    })


def check_identity(lake: Lake, topic: str, address: str, current: LogIdentity) -> LogIdentity | None:
    """The recorded identity, after making sure the log at `address` has it.

    Raises:
        LogMismatch: another cluster, or the topic was created again.
    """
    recorded = recorded_identity(lake, topic)
    if recorded is None or recorded == current:
        return recorded
    if recorded.cluster_id != current.cluster_id:
        found = (f"the cluster at {address} has id {current.cluster_id}, but the lake in {lake.root} holds the "
                 f"log of cluster {recorded.cluster_id}: this is another cluster, or that one was rebuilt")
    else:
        found = (f"topic {topic} of cluster {current.cluster_id} has topic id {current.topic_id}, but the lake "
                 f"in {lake.root} holds the log of topic id {recorded.topic_id}: the topic was deleted and "
                 "created again")
    raise LogMismatch(f"{found}. Its offsets start over, so resuming from the lake's positions would skip "
                      f"records. {rebase_advice(lake)}")


def check_positions(lake: Lake, topic: str, address: str, positions: dict[int, int], plan: ReadPlan,
                    accept_gap: bool) -> list[Gap]:
    """The gaps ingest was allowed to skip, after making sure every saved position is in the log.

    Args:
        positions: partition -> the lake's next offset to read (its checkpoints).
        plan: the log's start and end per partition, as the reader found them.
        accept_gap: read on past records deleted before ingest read them.

    Raises:
        LogMismatch: the log is shorter than what the lake read, or (unless `accept_gap`)
            records were deleted before ingest read them.
    """
    behind = [(p, position, plan.end.get(p)) for p, position in sorted(positions.items())
              if p not in plan.end or position > plan.end[p]]
    if behind:
        shown = ", ".join(f"partition {p} ends at offset {end}, the lake read up to {position}" if end is not None
                          else f"partition {p} is gone, the lake read up to {position}"
                          for p, position, end in behind[:SHOWN_PARTITIONS])
        raise LogMismatch(f"the log of {topic} at {address} is shorter than what the lake in {lake.root} already "
                          f"read ({shown}{_more(behind)}): the cluster lost records or was restored from an older "
                          f"copy, and resuming would skip the records written from now on up to the lake's "
                          f"positions. {rebase_advice(lake)}")
    gaps = [Gap(p, position, plan.log_start[p]) for p, position in sorted(positions.items())
            if position < plan.log_start[p]]
    if gaps and not accept_gap:
        shown = ", ".join(f"partition {gap.partition} starts at offset {gap.log_start}, the lake read up to "
                          f"{gap.position}" for gap in gaps[:SHOWN_PARTITIONS])
        raise LogMismatch(f"{sum(gap.records for gap in gaps):,} records of {topic} at {address} were deleted "
                          f"before ingest read them ({shown}{_more(gaps)}). To read on from the log start and "
                          "record the skipped counts in offsets_topic_checkpoints, run ingest with --accept-gap. "
                          f"{rebase_advice(lake)}")
    return gaps


def rebase_advice(lake: Lake) -> str:
    if lake.remote:  # rebase renames folders, which object storage lacks (docs/object-storage.md)
        return ("If the lake should follow this log from now on, point OFFSETS_PLATFORM_LAKE_URI at a new prefix "
                f"(and keep or delete the objects under {lake.root}); otherwise point --bootstrap-server at the "
                "cluster the lake belongs to.")
    return ("If the lake should follow this log from now on, start it over with `offsets-platform rebase "
            f"--home {lake.root.parent}` (it moves every table aside, nothing is deleted); otherwise point "
            "--bootstrap-server at the cluster the lake belongs to.")


def _more(items: list) -> str:
    return f", and {len(items) - SHOWN_PARTITIONS} more partitions" if len(items) > SHOWN_PARTITIONS else ""
