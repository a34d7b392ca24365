"""The metric families, read from the models' tables with delta-rs's SQL (`Lake.query`), no Spark.

Each family's help text names the model it comes from; docs/metrics.md lists them. The rules
behind the numbers are the models'; this module only sums and relabels their rows, and reads the
same functions as the quick views where one exists (`attention.expiring_by_topic`,
`views.from_lake.last_refresh`), so a scrape never disagrees with `offsets-platform expiring`.

The families are prometheus_client's, which renders them in both text formats; `collector.py`
hands them to it on each scrape.

A table no model has written yet reads as empty (`Lake.query`): its families are declared with
no samples rather than with zeros, which would claim "nothing happened".
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from offsets_platform.views import attention
from offsets_platform.views.alerts import matches
from offsets_platform.lake import Lake
from offsets_platform.views.from_lake import last_refresh, last_resets

PREFIX = "offsets_platform_"
# A partition's labels, named as the tables' columns are.
PARTITION = ("group_id", "topic", "partition_id")

Family = CounterMetricFamily | GaugeMetricFamily


def collect(lake: Lake, within_hours: float = attention.DEFAULT_WITHIN_HOURS,
            watched_groups: Sequence[str] = ()) -> list[Family]:
    """Every family, in a fixed order, from the lake as it is now. `within_hours` is the horizon of
    the expiring offsets and of the messages at risk; `watched_groups` (names or shell-style
    patterns, as the alerts take them) are the groups whose expiring offsets alert."""
    return [*_coordinator(lake), *_non_consumed(lake), *_at_risk(lake, within_hours), *_lag(lake), *_status(lake),
            *_expiring(lake, within_hours), *_watched(lake, watched_groups), *_freshness(lake), *_resets(lake)]


def _counter(name: str, help: str, *labels: str) -> CounterMetricFamily:
    """Named without `_total`: prometheus_client adds it to the samples, and to the family in the 0.0.4 format."""
    return CounterMetricFamily(PREFIX + name, help, labels=labels)


def _gauge(name: str, help: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, help, labels=labels)


def _add(family: Family, value: float | None, *labels: object) -> None:
    """A sample with these label values, in the order the family declared its labels; None (a
    value the lake does not know) adds nothing, as 0 would be a claim."""
    if value is not None:
        family.add_metric([str(label) for label in labels], value)


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
    families = [_counter(name, help) for name, help in _COORDINATOR]
    if not lake.exists("coordinator_metrics"):
        return families
    sums = ", ".join(f"coalesce(sum(count_{name}), 0) as {name}" for name, _ in _COORDINATOR)
    (row,) = lake.query(f"select {sums} from coordinator_metrics", "coordinator_metrics").to_pylist()
    for family, (name, _) in zip(families, _COORDINATOR):
        _add(family, row[name])
    return families


def _non_consumed(lake: Lake) -> list[Family]:
    # Every fact counts, abandoned offsets' too (the summary lists those apart): a partition's
    # counter must not fall when the group stops subscribing to its topic.
    at_most = _counter("non_consumed",
                       "Messages retention or DeleteRecords removed before the group read them, at most "
                       "(KIP-490 non-consumed-total; model unconsumed_messages, count_lost).", *PARTITION)
    at_least = _counter("non_consumed_at_least",
                        "Messages retention or DeleteRecords removed before the group read them, at least "
                        "(model unconsumed_messages, count_lost_at_least).", *PARTITION)
    for row in lake.query("""
            select group_id, topic, partition_id, sum(count_lost) as at_most, sum(count_lost_at_least) as at_least
            from unconsumed_messages group by group_id, topic, partition_id
            order by group_id, topic, partition_id """, "unconsumed_messages").to_pylist():
        _add(at_most, row["at_most"], *_partition(row))
        _add(at_least, row["at_least"], *_partition(row))
    return [at_most, at_least]


def _at_risk(lake: Lake, within_hours: float) -> list[Family]:
    # What the report and the alerts call at risk (attention.due_for_deletion): the alerting rule
    # leaves out the partitions the group is catching up on, as alerts.messages_at_risk does, by
    # their status, which is a family of its own.
    at_risk = _gauge("messages_at_risk",
                     "Messages the group has not read, still in the log, that retention deletes within the horizon "
                     "(offsets_platform_offsets_expiring_horizon_seconds), those due already included; abandoned "
                     "offsets left out (model retention_forecast, unread_in_log, hours_left).", *PARTITION)
    for row in lake.query(f"""select f.group_id, f.topic, f.partition_id, f.unread_in_log from retention_forecast f
                              where f.unread_in_log > 0 and {attention.due_for_deletion("f", within_hours)}
                              order by f.group_id, f.topic, f.partition_id """,
                          "retention_forecast", "expirable_offsets").to_pylist():
        _add(at_risk, row["unread_in_log"], *_partition(row))
    return [at_risk]


def _lag(lake: Lake) -> list[Family]:
    # As everywhere in the project, offsets a group left behind are not lag (no one reads on
    # there): they get families of their own, so that an alert on lag does not fire for them.
    messages = _gauge("consumer_lag_messages",
                      "Log end offset minus committed offset, as of the latest snapshot, abandoned offsets left out "
                      "(model consumer_lag, lag_messages).", *PARTITION)
    seconds = _gauge("consumer_lag_seconds",
                     "Age of the oldest message the group has not read that is still in the log; absent when "
                     "unknown (model consumer_lag, lag_ms).", *PARTITION)
    for row in lake.query(f"""select group_id, topic, partition_id, lag_messages, lag_ms from consumer_lag l
                              where {attention.not_abandoned("consumer_lag", "l")}
                              order by group_id, topic, partition_id """,
                          "consumer_lag", "expirable_offsets").to_pylist():
        _add(messages, row["lag_messages"], *_partition(row))
        _add(seconds, None if row["lag_ms"] is None else row["lag_ms"] / 1000, *_partition(row))
    abandoned = _gauge("abandoned_offsets",
                       "Partitions of a topic where the group left committed offsets: it has members and none "
                       "subscribes to the topic any more (model expirable_offsets, is_abandoned).", "group_id", "topic")
    abandoned_lag = _gauge("abandoned_lag_messages",
                           "Messages behind the offsets a group left on a topic it no longer reads: not lag "
                           "(models expirable_offsets and consumer_lag).", "group_id", "topic")
    for row in attention.abandoned_offsets(lake):
        _add(abandoned, row["partitions"], row["group_id"], row["topic"])
        _add(abandoned_lag, row["lag_messages"], row["group_id"], row["topic"])
    return [messages, seconds, abandoned, abandoned_lag]


def _status(lake: Lake) -> list[Family]:
    # Burrow's exporters give each status a number; a label keeps the name and lets a query
    # count partitions per status without a table of codes.
    partitions = _gauge("consumer_partition_status",
                        "1 for the partition's status: OK, WARN, STOP, STALL, REWIND, INCOMPLETE or ABANDONED "
                        "(Burrow's rules; model consumer_status, status).", *PARTITION, "status")
    groups = _gauge("consumer_group_status",
                    "1 for the group's status, its worst partition's: OK, WARN, ERR or INCOMPLETE "
                    "(Burrow's rules; model consumer_status, group_status).", "group_id", "status")
    rows = lake.query("""select group_id, topic, partition_id, status, group_status from consumer_status
                         order by group_id, topic, partition_id """, "consumer_status").to_pylist()
    for row in rows:
        _add(partitions, 1, *_partition(row), row["status"])
    for group, status in dict.fromkeys((row["group_id"], row["group_status"]) for row in rows):
        _add(groups, 1, group, status)
    return [partitions, groups]


def _expiring(lake: Lake, within_hours: float) -> list[Family]:
    per_rule = ("group_id", "topic", "rule")
    horizon = _gauge("offsets_expiring_horizon_seconds",
                     "The horizon of offsets_platform_offsets_expiring: offsets due within it count.")
    expiring = _gauge("offsets_expiring",
                      "Partitions whose committed offset Kafka expires within the horizon, those already due "
                      "included (model expirable_offsets, hours_until_expiry).", *per_rule)
    due_now = _gauge("offsets_expiring_due_now",
                     "Partitions whose committed offset is due already: Kafka removes it at its next expiration "
                     "check (model expirable_offsets, is_expired).", *per_rule)
    first = _gauge("offsets_expiring_first_timestamp_seconds",
                   "When the first of them expires, unix seconds; absent when that time is outside the years "
                   "1-9999 (model expirable_offsets, expires_at).", *per_rule)
    _add(horizon, within_hours * 3600)
    for row in attention.expiring_by_topic(lake, within_hours):
        labels = [row[name] for name in per_rule]
        _add(expiring, row["partitions"], *labels)
        _add(due_now, row["due_now"], *labels)
        _add(first, _seconds(row["first_expires_at"]), *labels)
    return [horizon, expiring, due_now, first]


def _watched(lake: Lake, watched_groups: Sequence[str]) -> list[Family]:
    # Only a person knows which stopped group will come back and must find its position, so only
    # the watched groups' expiring offsets alert (alerts.offsets_expiring). Prometheus's rule
    # cannot read the setting: this family carries it, one series per watched group of the lake.
    watched = _gauge("watched_group",
                     "1 for each group with committed offsets whose expiry alerts: one the exporter's --watch or "
                     "OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS names (table expirable_offsets).", "group_id")
    if watched_groups:
        for row in lake.query("select distinct group_id from expirable_offsets order by group_id",
                              "expirable_offsets").to_pylist():
            if matches(row["group_id"], watched_groups):
                _add(watched, 1, row["group_id"])
    return [watched]


def _freshness(lake: Lake) -> list[Family]:
    models = _gauge("models_last_run_timestamp_seconds",
                    "When a model last wrote its table, the latest of them, unix seconds (table model_runs).")
    per_model = _gauge("model_last_run_timestamp_seconds",
                       "When this model last wrote its table, unix seconds; a refresh skips a model whose "
                       "inputs did not change (table model_runs).", "model")
    ingest = _gauge("ingest_last_checkpoint_timestamp_seconds",
                    "When ingest last appended records of the offsets topic to bronze, unix seconds "
                    "(table offsets_topic_checkpoints).")
    snapshot = _gauge("snapshot_last_timestamp_seconds",
                      "When the latest complete admin-API snapshot was taken, unix seconds; lag is as of it "
                      "(table broker_configs).")
    _add(models, _seconds(last_refresh(lake)))
    for row in lake.query("select model, max(finished_at) as at from model_runs group by model order by model",
                          "model_runs").to_pylist():
        _add(per_model, _seconds(row["at"]), row["model"])
    _add(ingest, _seconds(_latest(lake, "offsets_topic_checkpoints", "checkpointed_at")))
    _add(snapshot, _seconds(_latest(lake, "broker_configs", "snapshot_at")))
    return [models, per_model, ingest, snapshot]


def _resets(lake: Lake) -> list[Family]:
    at = _gauge("group_last_offset_reset_timestamp_seconds",
                "When this tool last reset the group's offsets (the broker took an approved reset plan's last "
                "partition), unix seconds (table cleanup_audit).", "group_id")
    partitions = _gauge("group_last_offset_reset_partitions",
                        "How many partitions that last reset moved (table cleanup_audit).", "group_id")
    for reset in last_resets(lake):
        _add(at, _seconds(reset["reset_at"]), reset["group_id"])
        _add(partitions, reset["partitions"], reset["group_id"])
    return [at, partitions]


def _partition(row: dict) -> list:
    """A model row's partition as the values of the labels `PARTITION` names."""
    return [row[name] for name in PARTITION]


def _latest(lake: Lake, table: str, column: str) -> datetime | None:
    return lake.query(f"select max({column}) as at from {table}", table).column("at")[0].as_py()


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()
