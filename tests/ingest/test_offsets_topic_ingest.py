"""Coordinator records into bronze against the real embedded broker: every record type, rejects,
resume, read_committed, and exactly-once after runs stopped at every point.

The records are made by hand, so they go to a regular topic laid out like `__consumer_offsets`
(tests/ingest/conftest.py); tests/ingest/test_real_coordinator.py reads what Kafka's own
coordinator writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, Producer

from offsets_platform.codec import encode
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.kafka import offsets_topic as reader_module
from offsets_platform.kafka.offsets_topic import OffsetsTopicReader
from offsets_platform.lake import TABLES, Lake
from offsets_platform.lake.tables import RECORD_TABLES
from tests.ingest.conftest import produce

T0 = 1_790_000_000_000  # ms


def commit(partition, group, topic, topic_partition, offset, at, metadata=""):
    return (partition, encode.offset_commit_key(group, topic, topic_partition),
            encode.offset_commit_value(offset, at, metadata=metadata, leader_epoch=4), at)


def mixed_records():
    """Two groups' commits and a tombstone, a group record with members, a KIP-848 record,
    a truncated record and a share-group record (type 9)."""
    subscription = encode.consumer_subscription(["orders", "payments"])
    assignment = encode.consumer_assignment({"orders": [0, 1], "payments": [0]})
    members = [
        {"member_id": f"c-{i}", "group_instance_id": None, "client_id": f"client-{i}", "client_host": "/10.0.0.1",
         "rebalance_timeout": 300000, "session_timeout": 45000, "subscription": subscription, "assignment": assignment}
        for i in range(2)
    ]
    return [
        commit(3, "orders-app", "orders", 0, 100, T0),
        commit(3, "orders-app", "orders", 1, 200, T0 + 1, metadata="m"),
        commit(7, "billing", "payments", 0, 5, T0 + 2),
        (3, encode.offset_commit_key("orders-app", "orders", 1), None, T0 + 3),
        (3, encode.group_metadata_key("orders-app"),
         encode.group_metadata_value("consumer", 4, "range", "c-0", T0 + 4, members), T0 + 4),
        (9, encode.consumer_group_member_metadata_key("kip848", "m-1"),
         encode.consumer_group_member_metadata_value("cli", "/10.0.0.2", ["orders"]), T0 + 5),
        (7, encode.offset_commit_key("billing", "payments", 1), b"\x00\x03\x00\x00", T0 + 6),
        (7, b"\x00\x09\x00\x03abc", b"\x00\x00opaque", T0 + 7),
    ]


def keys_of(lake: Lake, name: str) -> list[tuple]:
    return sorted(tuple(row.values()) for row in lake.read_arrow(name, columns=list(TABLES[name].keys)).to_pylist())


def test_every_record_type_lands_in_its_bronze_table(mirror_connection, lake):
    delivered = produce(mirror_connection, mixed_records())
    result = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)

    assert result.records_read == 8
    commits = lake.read_arrow("offset_commit_records").sort_by("commit_timestamp").to_pylist()
    live = [c for c in commits if not c["tombstone"]]
    assert [(c["group"], c["topic"], c["partition"], c["offset"], c["leader_epoch"], c["metadata"]) for c in live] == [
        ("orders-app", "orders", 0, 100, 4, ""), ("orders-app", "orders", 1, 200, 4, "m"),
        ("billing", "payments", 0, 5, 4, "")]
    assert [(c["source_partition"], c["source_offset"]) for c in live] == delivered[:3]
    assert int(live[0]["commit_timestamp"].timestamp() * 1000) == T0
    tombstones = [c for c in commits if c["tombstone"]]
    assert [(c["group"], c["partition"], c["offset"], c["value_version"]) for c in tombstones] == [
        ("orders-app", 1, None, None)]

    (group,) = lake.read_arrow("group_metadata_records").to_pylist()
    assert (group["group"], group["protocol_type"], group["generation"], group["member_count"]) == (
        "orders-app", "consumer", 4, 2)
    members = lake.read_arrow("group_metadata_members").sort_by("member_index").to_pylist()
    assert [m["member_id"] for m in members] == ["c-0", "c-1"]
    assert members[0]["subscribed_topics"] == ["orders", "payments"]
    assert (members[0]["source_partition"], members[0]["source_offset"]) == delivered[4]

    (kip848,) = lake.read_arrow("consumer_group_records").to_pylist()
    assert (kip848["record_type"], kip848["group"], kip848["member_id"], kip848["subscribed_topic_names"]) == (
        "consumer_group_member_metadata", "kip848", "m-1", ["orders"])

    rejected = lake.read_arrow("rejected_records").sort_by("source_offset").to_pylist()
    assert [(r["source_partition"], r["source_offset"]) for r in rejected] == delivered[6:8]
    assert rejected[0]["value"] == b"\x00\x03\x00\x00" and "offset" in rejected[0]["reason"]
    assert rejected[1]["key_version"] == 9 and "unsupported" in rejected[1]["reason"]
    assert result.rejected == 2


def test_a_second_run_reads_only_what_is_new(mirror_connection, lake):
    produce(mirror_connection, mixed_records())
    ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    again = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    assert again.records_read == 0 and sum(again.rows_written.values()) == 0

    produce(mirror_connection, [commit(3, "orders-app", "orders", 0, 150, T0 + 100)])
    third = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    assert third.records_read == 1 and third.rows_written["offset_commit_records"] == 1
    offsets = keys_of(lake, "offset_commit_records")
    assert len(offsets) == len(set(offsets)) == 5


def many_records(count: int):
    return [commit(p % 50, f"group-{p % 50}", "events", p % 4, p, T0 + p) for p in range(count)]


STOP_POINTS = [(batch, table) for batch in (0, 2) for table in (*RECORD_TABLES, "offsets_topic_checkpoints")]


class Stop(Exception):
    pass


@pytest.mark.parametrize("stop_batch,stop_table", STOP_POINTS)
def test_a_run_stopped_after_any_write_then_rerun_is_exactly_once(mirror_connection, tmp_path, stop_batch, stop_table):
    records = many_records(600) + mixed_records()
    produce(mirror_connection, records)
    reference = Lake(tmp_path / "reference")
    ingest_offsets_topic(mirror_connection, reference, batch_records=100, emit=lambda line: None)

    lake = Lake(tmp_path / "stopped")
    writes = {"n": 0}
    per_batch = len(RECORD_TABLES) + 1

    def stop_at(table: str) -> None:
        if writes["n"] // per_batch == stop_batch and table == stop_table:
            raise Stop()
        writes["n"] += 1

    with pytest.raises(Stop):
        ingest_offsets_topic(mirror_connection, lake, batch_records=100, emit=lambda line: None, after_write=stop_at)
    ingest_offsets_topic(mirror_connection, lake, batch_records=100, emit=lambda line: None)

    for name in RECORD_TABLES:
        assert keys_of(lake, name) == keys_of(reference, name), name
    assert sum(len(keys_of(lake, name)) for name in ("offset_commit_records", "group_metadata_records",
                                                      "consumer_group_records", "rejected_records")) == len(records)


def test_a_batch_holds_at_most_batch_records_records(mirror_connection, monkeypatch):
    # A batch is one Delta commit per table and what ingest holds in memory at once.
    produce(mirror_connection, many_records(1_000))

    class FewAtATime(Consumer):  # as when fetch answers arrive a few partitions at a time
        def consume(self, num_messages=1, timeout=-1):
            return super().consume(min(num_messages, 30), timeout)

    monkeypatch.setattr(reader_module, "Consumer", FewAtATime)
    with OffsetsTopicReader(mirror_connection, batch_records=100) as reader:
        batches = [batch.num_rows for batch in reader.read(reader.plan({}))]
    assert sum(batches) == 1_000 and max(batches) <= 100, batches


def test_a_killed_process_then_rerun_is_exactly_once(mirror_connection, tmp_path):
    records = many_records(20_000)
    produce(mirror_connection, records)
    lake_root = tmp_path / "lake"
    script = textwrap.dedent(f"""
        import time
        from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
        from offsets_platform.lake import Lake
        from offsets_platform.settings import KafkaConnection
        ingest_offsets_topic(KafkaConnection({mirror_connection.bootstrap_servers!r},
                                             offsets_topic={mirror_connection.offsets_topic!r}), Lake({str(lake_root)!r}),
                             batch_records=500, emit=print, after_write=lambda table: time.sleep(0.01))
    """)
    process = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd(), start_new_session=True)
    checkpoints = lake_root / "bronze" / "offsets_topic_checkpoints" / "_delta_log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(checkpoints.glob("*.json"))) < 4:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()

    lake = Lake(lake_root)
    partial = lake.count("offset_commit_records")
    assert 0 < partial < len(records), "the kill should land mid-run"
    ingest_offsets_topic(mirror_connection, lake, batch_records=5_000, emit=lambda line: None)
    rows = keys_of(lake, "offset_commit_records")
    assert len(rows) == len(set(rows)) == len(records)


def test_transactional_records_count_only_after_their_commit(mirror_connection, lake):
    producer = Producer({"bootstrap.servers": mirror_connection.bootstrap_servers, "transactional.id": "tx-test"})
    producer.init_transactions(10)

    def in_transaction(offset):
        key, value, at = commit(5, "tx-group", "orders", 0, offset, T0 + offset)[1:]
        producer.produce(mirror_connection.offsets_topic, key=key, value=value, partition=5, timestamp=at)

    producer.begin_transaction()
    in_transaction(1)
    producer.commit_transaction(10)
    producer.begin_transaction()
    in_transaction(2)
    producer.abort_transaction(10)
    producer.begin_transaction()
    in_transaction(3)
    producer.flush(10)

    result = ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    assert [r["offset"] for r in lake.read_arrow("offset_commit_records").to_pylist()] == [1]
    # the open transaction's commit is known as pending (Kafka never expires such an offset)
    pending = lake.read_arrow("pending_offset_commits").to_pylist()
    assert [(r["group"], r["topic"], r["partition"]) for r in pending] == [("tx-group", "orders", 0)]
    assert result.pending_commits == 1

    producer.commit_transaction(10)
    ingest_offsets_topic(mirror_connection, lake, emit=lambda line: None)
    assert sorted(r["offset"] for r in lake.read_arrow("offset_commit_records").to_pylist()) == [1, 3]
    assert lake.count("pending_offset_commits") == 0
