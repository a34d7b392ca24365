"""A lake of hand-written gold rows, and a reader of the exposition text, for the metrics tests."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.test_summary import at, full_rows

# A group name holding each character a label value escapes.
AWKWARD = 'we"ird\\group\nname'

_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def write(lake, name: str, rows: list[dict]) -> None:
    lake.append(name, full_rows(lake, name, rows))


def fill(lake) -> None:
    """Gold rows of two groups, `busy` and the awkwardly named one, enough that a query summing,
    grouping or filtering the wrong way gives another number."""
    write(lake, "coordinator_metrics", [
        {"bucket_start_at": at(0), "bucket_minutes": 5, "count_offset_commits": 10, "count_offset_expirations": 1,
         "count_offset_deletions": 0, "count_group_completed_rebalances": 2},
        {"bucket_start_at": at(5), "bucket_minutes": 5, "count_offset_commits": 32, "count_offset_expirations": 3,
         "count_offset_deletions": 4, "count_group_completed_rebalances": 0}])
    write(lake, "unconsumed_messages", [
        {"group_id": "busy", "topic": "t", "partition_id": 0, "observed_at": at(1), "count_lost": 10,
         "count_lost_at_least": 8},
        {"group_id": "busy", "topic": "t", "partition_id": 0, "observed_at": at(2), "count_lost": 5,
         "count_lost_at_least": 5},
        {"group_id": "busy", "topic": "t", "partition_id": 1, "observed_at": at(2), "count_lost": 7,
         "count_lost_at_least": 0},
        {"group_id": AWKWARD, "topic": "t", "partition_id": 0, "observed_at": at(2), "count_lost": 3,
         "count_lost_at_least": 1}])
    write(lake, "consumer_lag", [
        {"group_id": "busy", "topic": "t", "partition_id": 0, "lag_messages": 3, "lag_ms": 1500},
        {"group_id": "busy", "topic": "t", "partition_id": 1, "lag_messages": 0, "lag_ms": None},
        {"group_id": AWKWARD, "topic": "t", "partition_id": 0, "lag_messages": 40, "lag_ms": 120_000}])
    write(lake, "consumer_status", [
        {"group_id": "busy", "topic": "t", "partition_id": 0, "status": "STALL", "rule": "offsets_unchanged",
         "group_status": "ERR"},
        {"group_id": "busy", "topic": "t", "partition_id": 1, "status": "OK", "rule": "caught_up", "group_status": "ERR"},
        {"group_id": AWKWARD, "topic": "t", "partition_id": 0, "status": "WARN", "rule": "lag_not_decreasing",
         "group_status": "WARN"}])
    write(lake, "expirable_offsets",
          [{"group_id": "busy", "topic": "t", "partition_id": p, "rule": "not_eligible", "hours_until_expiry": None,
            "expires_at": None} for p in (0, 1)] +
          [{"group_id": AWKWARD, "topic": "u", "partition_id": p, "rule": "standalone", "group_state": "Empty",
            "hours_until_expiry": h, "is_expired": h <= 0, "expires_at": at(0) + timedelta(hours=h)}
           for p, h in ((0, -1.0), (1, 2.0), (2, 30.0))])
    write(lake, "model_runs", [
        {"model": "consumer_lag", "run_id": "r1", "mode": "full", "source": "s", "finished_at": at(10)},
        {"model": "consumer_lag", "run_id": "r2", "mode": "full", "source": "s", "finished_at": at(20)},
        {"model": "coordinator_metrics", "run_id": "r1", "mode": "full", "source": "s", "finished_at": at(11)}])
    write(lake, "offsets_topic_checkpoints", [
        {"ingest_run_id": "i", "source_topic": "__consumer_offsets", "source_partition": p, "next_offset": 1,
         "record_count": 1, "checkpointed_at": at(m), "skipped_records": None} for p, m in ((0, 3), (1, 4))])
    write(lake, "broker_configs", [{"snapshot_id": "s1", "snapshot_at": at(6), "offsets_retention_minutes": 10080,
                                    "offsets_retention_source": "broker"}])


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """{(sample name, {(label, value)}): value} of an exposition text, label values unescaped."""
    found = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, labels, value = _SAMPLE.fullmatch(line).groups()
        pairs = frozenset((key, _unescape(raw)) for key, raw in _LABEL.findall(labels or ""))
        assert (name, pairs) not in found, f"two samples {name} {dict(pairs)}"
        found[(name, pairs)] = float(value)
    return found


def sums_by_group(found: dict[tuple[str, frozenset], float], name: str) -> dict[str, float]:
    """{group_id: the sum of its samples} of one sample name, in what `samples` found."""
    sums: dict[str, float] = {}
    for (sample, labels), value in found.items():
        if sample == name:
            group = dict(labels)["group_id"]
            sums[group] = sums.get(group, 0.0) + value
    return sums


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), raw)


def key(name: str, **labels) -> tuple[str, frozenset]:
    return name, frozenset((label, str(value)) for label, value in labels.items())
