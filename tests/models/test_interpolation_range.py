"""A time interpolated between two snapshots far apart, on a partition of billions of messages.

consumer_lag dates the oldest unread message between the two snapshots whose log ends bracket it,
in proportion to the offsets, and retention_forecast does the same with the logs' largest
timestamps. The product of the two spans passes a bigint's range here (two months in
microseconds times ten billion messages), which Spark's ANSI arithmetic refuses: the whole refresh
failed on it. Kafka's offsets and a topic's life allow both.
"""

from __future__ import annotations

from datetime import timedelta

from tests.models.bronze_builder import BronzeBuilder, at, ms
from tests.models.conftest import needed_for, rows_by, run_models

S1, S2, S3 = at(days=1), at(days=61), at(days=62)
END1, END2, END3 = 1_000, 20_000_001_000, 30_000_000_000
COMMITTED = 10_000_000_000  # read up to here: the oldest unread message is this offset
RETENTION_MS = 365 * 86_400_000


def test_times_interpolated_over_long_spans_of_many_messages_are_computed_not_refused(spark, module_lake):
    b = BronzeBuilder()
    for when, end in ((S1, END1), (S2, END2), (S3, END3)):
        b.snapshot(when, topics=[{"topic": "busy", "retention_ms": RETENTION_MS, "retention_bytes": -1,
                                  "cleanup_policy": "delete", "message_timestamp_type": "CreateTime"}],
                   logs=[{"topic": "busy", "partition": 0, "log_start_offset": 0, "log_end_offset": end,
                          "max_timestamp_ms": ms(when)}],
                   groups=[{"group": "g", "state": "Empty", "protocol_type": "consumer", "protocol": "",
                            "member_count": 0}],
                   offsets=[{"group": "g", "topic": "busy", "partition": 0, "committed_offset": COMMITTED}])
    b.write(module_lake)
    run_models(spark, module_lake, S3, select=needed_for("consumer_lag", "retention_forecast"))

    share = (COMMITTED + 1 - END1) / (END2 - END1)
    written_ms = ms(S1) + int((ms(S2) - ms(S1)) * share)  # the largest timestamps are the snapshots' times
    lag = rows_by(module_lake, "consumer_lag", "group_id")["g"]
    assert lag["lag_messages"] == END3 - COMMITTED
    assert abs(lag["lag_ms"] - (ms(S3) - written_ms)) <= 1  # the micro- and millisecond roundings
    forecast = rows_by(module_lake, "retention_forecast", "group_id")["g"]
    assert forecast["deletion_expected_at"] == at() + timedelta(milliseconds=written_ms - ms(at()) + RETENTION_MS)
