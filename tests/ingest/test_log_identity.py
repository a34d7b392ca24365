"""A lake resumes only in the log it holds, on the real broker: another cluster, a topic created
again, a log restored from an older copy and records deleted before ingest read them each stop
ingest with a message and write nothing; `offsets-platform rebase` moves the tables aside and
the next ingest reads the new log whole; `--accept-gap` reads on and records what it skipped.

Before these checks, each of these cases made ingest skip records and exit 0.
"""

from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.cli import main
from offsets_platform.ingest.log_check import IDENTITY, LogMismatch
from offsets_platform.ingest.offsets_topic import CHECKPOINTS, ingest_offsets_topic
from offsets_platform.kafka.log_identity import read_log_identity
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.settings import KafkaConnection
from proving_ground.workload import create_history_topic
from tests.ingest.conftest import produce
from tests.ingest.test_offsets_topic_ingest import keys_of, many_records

pytestmark = pytest.mark.integration

QUIET = {"emit": lambda line: None}


def lake_state(lake: Lake) -> dict[str, tuple[int, int]]:
    return {name: (lake.version(name), lake.count(name)) for name in (*RECORD_TABLES, CHECKPOINTS, IDENTITY)}


def ingested(connection: KafkaConnection, lake: Lake, records: int) -> Lake:
    produce(connection, many_records(records))
    ingest_offsets_topic(connection, lake, **QUIET)
    return lake


def test_the_first_ingest_records_the_log_it_reads(mirror_connection, lake):
    ingested(mirror_connection, lake, 10)
    (row,) = lake.read_arrow(IDENTITY).to_pylist()
    identity = read_log_identity(mirror_connection)
    assert (row["source_topic"], row["cluster_id"], row["topic_id"]) == \
        (mirror_connection.offsets_topic, identity.cluster_id, identity.topic_id)
    assert len(identity.topic_id) == 22 and "+" not in identity.topic_id and "/" not in identity.topic_id


def test_another_cluster_at_the_address_stops_ingest_and_rebase_starts_the_lake_over(
        mirror_connection, fresh_broker, tmp_path, capsys):
    home = tmp_path / "home"
    lake = ingested(mirror_connection, Lake(home / "lake"), 300)
    rebuilt = KafkaConnection(bootstrap_servers=fresh_broker.bootstrap_servers,
                              offsets_topic=mirror_connection.offsets_topic)
    create_history_topic(rebuilt.bootstrap_servers, rebuilt.offsets_topic)
    produce(rebuilt, many_records(120))  # fewer than the lake's positions: resuming would read none of them
    before = lake_state(lake)

    with pytest.raises(LogMismatch) as stopped:
        ingest_offsets_topic(rebuilt, lake, **QUIET)
    message = str(stopped.value)
    old, new = read_log_identity(mirror_connection), read_log_identity(rebuilt)
    assert f"the cluster at {rebuilt.bootstrap_servers} has id {new.cluster_id}" in message
    assert f"holds the log of cluster {old.cluster_id}" in message
    assert f"offsets-platform rebase --home {home.absolute()}" in message
    assert lake_state(lake) == before

    assert main(["rebase", "--home", str(home)]) == 0
    said = capsys.readouterr().out
    (archive,) = (home / "lake" / "_archive").iterdir()
    assert str(archive) in said
    assert Lake(archive).count("offset_commit_records") == 300  # the old log's history is kept

    result = ingest_offsets_topic(rebuilt, Lake(home / "lake"), **QUIET)
    assert result.records_read == 120
    assert len(keys_of(Lake(home / "lake"), "offset_commit_records")) == 120


def test_a_topic_created_again_stops_ingest(mirror_connection, lake):
    ingested(mirror_connection, lake, 200)
    admin = AdminClient({"bootstrap.servers": mirror_connection.bootstrap_servers})
    admin.delete_topics([mirror_connection.offsets_topic])[mirror_connection.offsets_topic].result(30)
    _create_again(mirror_connection)
    produce(mirror_connection, many_records(50))

    with pytest.raises(LogMismatch, match=f"topic {mirror_connection.offsets_topic} of cluster .* has topic id "
                                          ".* the topic was deleted and created again"):
        ingest_offsets_topic(mirror_connection, lake, **QUIET)


def _create_again(connection: KafkaConnection) -> None:
    # The deletion completes in the background: creating the topic fails until it has.
    for _ in range(100):
        try:
            create_history_topic(connection.bootstrap_servers, connection.offsets_topic)
            if read_log_identity(connection):
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise AssertionError("the topic could not be created again")


def test_a_log_restored_from_an_older_copy_stops_ingest(tmp_path):
    data = tmp_path / "broker"
    with EmbeddedBroker(data) as broker:
        connection = KafkaConnection(bootstrap_servers=broker.bootstrap_servers, offsets_topic="offsets-mirror")
        create_history_topic(connection.bootstrap_servers, connection.offsets_topic)
        produce(connection, many_records(100))
    shutil.copytree(data / "logs", tmp_path / "copy")  # a backup, taken while the broker is stopped

    lake = Lake(tmp_path / "lake")
    with EmbeddedBroker(data) as broker:
        connection = KafkaConnection(bootstrap_servers=broker.bootstrap_servers, offsets_topic="offsets-mirror")
        ingested(connection, lake, 100)
    before = lake_state(lake)

    shutil.rmtree(data / "logs")
    shutil.copytree(tmp_path / "copy", data / "logs")  # the restore
    with EmbeddedBroker(data) as broker:
        connection = KafkaConnection(bootstrap_servers=broker.bootstrap_servers, offsets_topic="offsets-mirror")
        with pytest.raises(LogMismatch, match=r"is shorter than what the lake .* already read \(partition \d+ ends "
                                              r"at offset \d+, the lake read up to \d+.*restored from an older copy"):
            ingest_offsets_topic(connection, lake, **QUIET)
    assert lake_state(lake) == before


def test_records_deleted_before_ingest_read_them_stop_it_unless_the_gap_is_accepted(mirror_connection, lake):
    ingested(mirror_connection, lake, 100)  # partition p holds offsets 0, 1 (many_records: 2 per partition)
    produce(mirror_connection, many_records(200))  # 4 more per partition
    admin = AdminClient({"bootstrap.servers": mirror_connection.bootstrap_servers})
    # DeleteRecords up to offset 4 in partitions 0 and 1: offsets 2 and 3 are gone unread there
    deleted = admin.delete_records([TopicPartition(mirror_connection.offsets_topic, p, 4) for p in (0, 1)])
    for future in deleted.values():
        future.result(30)
    before = lake_state(lake)

    with pytest.raises(LogMismatch, match=r"^4 records of .* were deleted before ingest read them \(partition 0 "
                                          r"starts at offset 4, the lake read up to 2, partition 1 .*--accept-gap"):
        ingest_offsets_topic(mirror_connection, lake, **QUIET)
    assert lake_state(lake) == before

    said: list[str] = []
    result = ingest_offsets_topic(mirror_connection, lake, accept_gap=True, emit=said.append)
    assert result.records_read == 200 - 4
    assert any(line.startswith("skipped 4 records of ") for line in said), said
    skipped = lake.query(f"select source_partition, next_offset, skipped_records from {CHECKPOINTS} "
                         "where skipped_records is not null order by source_partition", CHECKPOINTS).to_pylist()
    assert skipped == [{"source_partition": 0, "next_offset": 4, "skipped_records": 2},
                       {"source_partition": 1, "next_offset": 4, "skipped_records": 2}]
    # once accepted, the gap is behind the lake's positions: the next run goes on quietly
    assert ingest_offsets_topic(mirror_connection, lake, **QUIET).records_read == 0


def test_a_lake_from_before_identities_adopts_the_log_it_reads(mirror_connection, lake):
    ingested(mirror_connection, lake, 10)
    shutil.rmtree(lake.path(IDENTITY))
    said: list[str] = []
    ingest_offsets_topic(mirror_connection, Lake(lake.root), emit=said.append)
    assert any(line.startswith("recorded the log this lake reads: cluster ") for line in said), said
    assert Lake(lake.root).count(IDENTITY) == 1
