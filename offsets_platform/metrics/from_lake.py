"""The metric families, read from the models' tables with delta-rs's SQL (`Lake.query`), no Spark.

Each family's help text names the model it comes from; docs/metrics.md lists them. The rules
behind the numbers are the models'; this module only sums and relabels their rows, and reads the
same functions as the quick views where one exists (`attention.expiring_by_topic`,
`views.from_lake.last_refresh`), so a scrape never disagrees with `offsets-platform expiring`.

A table no model has written yet reads as empty (`Lake.query`): its families are declared with
no samples rather than with zeros, which would claim "nothing happened".
"""

from __future__ import annotations

from datetime import datetime

from offsets_platform.views import attention
from offsets_platform.lake import Lake
from offsets_platform.metrics.exposition import Family
from offsets_platform.views.from_lake import last_refresh, last_resets

PREFIX = "offsets_platform_"


def collect(lake: Lake, within_hours: float = attention.DEFAULT_WITHIN_HOURS) -> list[Family]:
    """Every family, in a fixed order, from the lake as it is now."""
    return [*_coordinator(lake), *_non_consumed(lake), *_lag(lake), *_status(lake),
            *_expiring(lake, within_hours), *_freshness(lake), *_resets(lake)]


def _family(name: str, kind: str, help: str) -> Family:
    return Family(PREFIX + name, kind, help)


# KIP-496's meters, rebuilt from the log (metric name = coordinator_metrics column without its
# count_ prefix): the counts of every bucket added up, so the counters
# start at the first record the lake holds and grow as ingest appends; Prometheus's rate() and
# increase() give the per-interval view the buckets had.
_COORDINATOR = [
    ("offset_commits",
     "Offset commit records in the log, committed transactions only (KIP-496 offset-commit; "
     "model coordinator_metrics)."),
    ("offset_expirations",
     "Offsets expired: tombstones of offsets Kafka's expiration rules had made expire by then (KIP-496 "
     "offset-expiration, which also adds, per group a cleanup cycle visits, the records written before it; "
     "model coordinator_metrics)."),
    ("offset_deletions",
     "Offset tombstones of the project's OffsetDeletes, its audited OffsetDeletes of an offset, and the other "
     "tombstones of offsets not expired, DeleteGroups and deleted topics not sent by the project included "
     "(KIP-496 offset-deletion, which counts OffsetDelete only; model coordinator_metrics)."),
    ("group_completed_rebalances",
     "Completed rebalances of classic groups: group records with members in a new generation, not a "
     "downgrade from KIP-848 (KIP-496 group-completed-rebalance; model coordinator_metrics)."),
]


def _coordinator(lake: Lake) -> list[Family]:
    families = [_family(name, "counter", help) for name, help in _COORDINATOR]
    if not lake.exists("coordinator_metrics"):
        return families
    sums = ", ".join(f"coalesce(sum(count_{name}), 0) as {name}" for name, _ in _COORDINATOR)
    (row,) = lake.query(f"select {sums} from coordinator_metrics", "coordinator_metrics").to_pylist()
    for family, (name, _) in zip(families, _COORDINATOR):
        family.add(row[name])
    return families


def _non_consumed(lake: Lake) -> list[Family]:
    # Every fact counts, abandoned offsets' too (the summary lists those apart): a partition's
    # counter must not fall when the group stops subscribing to its topic.
    at_most = _family("non_consumed", "counter",
                      "Messages retention or DeleteRecords removed before the group read them, at most "
                      "(KIP-490 non-consumed-total; model unconsumed_messages, count_lost).")
    at_least = _family("non_consumed_at_least", "counter",
                       "Messages retention or DeleteRecords removed before the group read them, at least "
                       "(model unconsumed_messages, count_lost_at_least).")
    for row in lake.query("""
            select group_id, topic, partition_id, sum(count_lost) as at_most, sum(count_lost_at_least) as at_least
            from unconsumed_messages group by group_id, topic, partition_id
            order by group_id, topic, partition_id """, "unconsumed_messages").to_pylist():
        labels = _partition_labels(row)
        at_most.add(row["at_most"], **labels)
        at_least.add(row["at_least"], **labels)
    return [at_most, at_least]


def _lag(lake: Lake) -> list[Family]:
    # As everywhere in the project, offsets a group left behind are not lag (no one reads on
    # there): they get families of their own, so that an alert on lag does not fire for them.
    messages = _family("consumer_lag_messages", "gauge",
                       "Log end offset minus committed offset, as of the latest snapshot, abandoned offsets left out "
                       "(model consumer_lag, lag_messages).")
    seconds = _family("consumer_lag_seconds", "gauge",
                      "Age of the oldest message the group has not read that is still in the log; absent when "
                      "unknown (model consumer_lag, lag_ms).")
    for row in lake.query(f"""select group_id, topic, partition_id, lag_messages, lag_ms from consumer_lag l
                              where {attention.not_abandoned("consumer_lag", "l")}
                              order by group_id, topic, partition_id """,
                          "consumer_lag", "expirable_offsets").to_pylist():
        labels = _partition_labels(row)
        messages.add(row["lag_messages"], **labels)
        seconds.add(None if row["lag_ms"] is None else row["lag_ms"] / 1000, **labels)
    abandoned = _family("abandoned_offsets", "gauge",
                        "Partitions of a topic where the group left committed offsets: it has members and none "
                        "subscribes to the topic any more (model expirable_offsets, is_abandoned).")
    abandoned_lag = _family("abandoned_lag_messages", "gauge",
                            "Messages behind the offsets a group left on a topic it no longer reads: not lag "
                            "(models expirable_offsets and consumer_lag).")
    for row in attention.abandoned_offsets(lake):
        labels = {"group_id": row["group_id"], "topic": row["topic"]}
        abandoned.add(row["partitions"], **labels)
        abandoned_lag.add(row["lag_messages"], **labels)
    return [messages, seconds, abandoned, abandoned_lag]


def _status(lake: Lake) -> list[Family]:
    # Burrow's exporters give each status a number; a label keeps the name and lets a query
    # count partitions per status without a table of codes.
    partitions = _family("consumer_partition_status", "gauge",
                         "1 for the partition's status: OK, WARN, STOP, STALL, REWIND, INCOMPLETE or ABANDONED "
                         "(Burrow's rules; model consumer_status, status).")
    groups = _family("consumer_group_status", "gauge",
                     "1 for the group's status, its worst partition's: OK, WARN, ERR or INCOMPLETE "
                     "(Burrow's rules; model consumer_status, group_status).")
    rows = lake.query("""select group_id, topic, partition_id, status, group_status from consumer_status
                         order by group_id, topic, partition_id """, "consumer_status").to_pylist()
    for row in rows:
        partitions.add(1, **_partition_labels(row), status=row["status"])
    for group, status in dict.fromkeys((row["group_id"], row["group_status"]) for row in rows):
        groups.add(1, group_id=group, status=status)
    return [partitions, groups]


def _expiring(lake: Lake, within_hours: float) -> list[Family]:
    horizon = _family("offsets_expiring_horizon_seconds", "gauge",
                      "The horizon of offsets_platform_offsets_expiring: offsets due within it count.")
    expiring = _family("offsets_expiring", "gauge",
                       "Partitions whose committed offset Kafka expires within the horizon, those already due "
                       "included (model expirable_offsets, hours_until_expiry).")
    due_now = _family("offsets_expiring_due_now", "gauge",
                      "Partitions whose committed offset is due already: Kafka removes it at its next expiration "
                      "check (model expirable_offsets, is_expired).")
    first = _family("offsets_expiring_first_timestamp_seconds", "gauge",
                    "When the first of them expires, unix seconds; absent when that time is outside the years "
                    "1-9999 (model expirable_offsets, expires_at).")
    horizon.add(within_hours * 3600)
    for row in attention.expiring_by_topic(lake, within_hours):
        labels = {"group_id": row["group_id"], "topic": row["topic"], "rule": row["rule"]}
        expiring.add(row["partitions"], **labels)
        due_now.add(row["due_now"], **labels)
        first.add(_seconds(row["first_expires_at"]), **labels)
    return [horizon, expiring, due_now, first]


def _freshness(lake: Lake) -> list[Family]:
    models = _family("models_last_run_timestamp_seconds", "gauge",
                     "When a model last wrote its table, the latest of them, unix seconds (table model_runs).")
    per_model = _family("model_last_run_timestamp_seconds", "gauge",
                        "When this model last wrote its table, unix seconds; a refresh skips a model whose "
                        "inputs did not change (table model_runs).")
    ingest = _family("ingest_last_checkpoint_timestamp_seconds", "gauge",
                     "When ingest last appended records of the offsets topic to bronze, unix seconds "
                     "(table offsets_topic_checkpoints).")
    snapshot = _family("snapshot_last_timestamp_seconds", "gauge",
                       "When the latest complete admin-API snapshot was taken, unix seconds; lag is as of it "
                       "(table broker_configs).")
    models.add(_seconds(last_refresh(lake)))
    for row in lake.query("select model, max(finished_at) as at from model_runs group by model order by model",
                          "model_runs").to_pylist():
        per_model.add(_seconds(row["at"]), model=row["model"])
    ingest.add(_seconds(_latest(lake, "offsets_topic_checkpoints", "checkpointed_at")))
    snapshot.add(_seconds(_latest(lake, "broker_configs", "snapshot_at")))
    return [models, per_model, ingest, snapshot]


def _resets(lake: Lake) -> list[Family]:
    at = _family("group_last_offset_reset_timestamp_seconds", "gauge",
                 "When this tool last reset the group's offsets (the broker took an approved reset plan's last "
                 "partition), unix seconds (table cleanup_audit).")
    partitions = _family("group_last_offset_reset_partitions", "gauge",
                         "How many partitions that last reset moved (table cleanup_audit).")
    for reset in last_resets(lake):
        at.add(_seconds(reset["reset_at"]), group_id=reset["group_id"])
        partitions.add(reset["partitions"], group_id=reset["group_id"])
    return [at, partitions]


def _partition_labels(row: dict) -> dict:
    """A model row's partition as the metrics label it: group_id, topic, partition_id (the tables' names)."""
    return {"group_id": row["group_id"], "topic": row["topic"], "partition_id": row["partition_id"]}


def _latest(lake: Lake, table: str, column: str) -> datetime | None:
    return lake.query(f"select max({column}) as at from {table}", table).column("at")[0].as_py()


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()
