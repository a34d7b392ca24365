"""Retention during the run: watch it act, and stand in for it with DeleteRecords if it is too slow.

Kafka applies retention.ms by whole segments, every log.retention.check.interval.ms: the
embedded broker checks every second, so with retention.ms=3000 and segment.ms=1000 the log start
follows the data about 4-5 s behind (measured; see the package docstring). A cluster with
Kafka's default check (5 minutes) is too slow for a bounded run, so when the log start has not
passed a group's committed offset within the wait, `RetentionWatch` moves it with DeleteRecords
to the log end, as retention would once every message is older than retention.ms, and says so
("delete_records" instead of "retention.ms").
"""

from __future__ import annotations

import time

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from .clients import log_offsets
from .scenarios import TopicSpec

RETENTION = "retention.ms"
DELETE_RECORDS = "delete_records"


class RetentionWatch:
    def __init__(self, admin: KafkaAdminClient, topics: list[TopicSpec], started: float):
        self.admin, self.topics, self.started = admin, topics, started
        self.first_deletion_s: dict[str, float | None] = {spec.name: None for spec in topics}
        """Seconds from the first produce until the topic's log start first moved."""

    def check(self) -> None:
        """Note when each watched topic's log start first moves past 0."""
        for spec in self.topics:
            if self.first_deletion_s[spec.name] is None:
                self._note(spec, log_offsets(self.admin, spec.name, spec.partitions)[0])

    def _note(self, spec: TopicSpec, start: dict[int, int]) -> None:
        """Note the first read of a watched topic's log start past 0 (`start`: by partition)."""
        watched_and_unmoved = spec.name in self.first_deletion_s and self.first_deletion_s[spec.name] is None
        if watched_and_unmoved and any(offset > 0 for offset in start.values()):
            self.first_deletion_s[spec.name] = round(time.monotonic() - self.started, 2)

    def wait_past(self, spec: TopicSpec, committed: dict[int, int], wait_s: float) -> str:
        """Wait until the log start of some partition passes its offset in `committed` (a group's
        committed offset, or the log end before more messages were written).

        Returns RETENTION if retention.ms did it within `wait_s`, else DELETE_RECORDS after
        deleting, on every partition whose offset is below the log end, up to the end.
        """
        deadline = time.monotonic() + wait_s
        while True:
            self.check()
            start, end = log_offsets(self.admin, spec.name, spec.partitions)
            # the log start may have moved since check() read it: note what this read saw
            self._note(spec, start)
            if any(start[p] > offset for p, offset in committed.items()):
                return RETENTION
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        targets = {TopicPartition(spec.name, p): end[p] for p, offset in committed.items() if end[p] > offset}
        if not targets:
            raise RuntimeError(f"{spec.name}: committed offsets {committed} are at the log end {end}; "
                               "nothing is left for retention to delete")
        self.admin.delete_records(targets)
        return DELETE_RECORDS
