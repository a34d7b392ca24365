"""Admin-API snapshots appended to the lake, against a fresh embedded broker per test."""

from __future__ import annotations

import time

import pytest

from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.broker.embedded import EmbeddedBroker, free_loopback_port
from offsets_platform.kafka.errors import BrokerUnreachable
from offsets_platform.lake.tables import SNAPSHOT_TABLES
from offsets_platform.settings import KafkaConnection
from tests.ingest.test_snapshot_collect import (
    broker_offsets_retention, commit, create_topics, join_group, produce_counts,
)


@pytest.fixture
def two_groups(fresh_connection):
    """`clicks` (2 partitions, 3 + 4 messages) and `views` (1 partition, 2 messages); group
    `reader` live on both, group `done` committed on clicks then closed."""
    bootstrap = fresh_connection.bootstrap_servers
    create_topics(bootstrap, {"clicks": (2, {"retention.ms": "86400000"}), "views": (1, {})})
    produce_counts(bootstrap, "clicks", [3, 4])
    produce_counts(bootstrap, "views", [2])
    done = join_group(bootstrap, "done", ["clicks"], 2)
    commit(done, {("clicks", 0): (3, "d"), ("clicks", 1): (4, "d")})
    done.close()
    reader = join_group(bootstrap, "reader", ["clicks", "views"], 3)
    commit(reader, {("clicks", 0): (1, "r"), ("clicks", 1): (2, "r"), ("views", 0): (2, "r")})
    yield fresh_connection
    reader.close()


EXPECTED_ROWS = {"group_snapshots": 2, "group_member_snapshots": 1, "committed_offset_snapshots": 5,
                 "log_offset_snapshots": 3, "topic_configs": 2, "broker_configs": 1, "snapshot_errors": 0}


def rows_per_snapshot(lake, name: str) -> dict[str, int]:
    rows = lake.query(f"select snapshot_id, count(*) as n from {name} group by snapshot_id", name)
    return dict(zip(rows["snapshot_id"].to_pylist(), rows["n"].to_pylist()))


def test_one_snapshot_is_one_commit_per_table_every_row_with_its_id(two_groups, lake):
    lines = []
    result = snapshot_cluster(two_groups, lake, emit=lines.append)

    assert result.rows_written == EXPECTED_ROWS
    assert result.errors == []
    for name, count in EXPECTED_ROWS.items():
        if count:
            table = lake.read_arrow(name)
            assert table.num_rows == count
            assert set(table["snapshot_id"].to_pylist()) == {result.snapshot_id}
            assert set(table["snapshot_at"].to_pylist()) == {result.snapshot_at}
            assert lake.table(name).version() == 1  # created, then one append
        else:
            assert not lake.exists(name)  # nothing to append, so no empty commit either
    states = {row["group"]: row["state"] for row in lake.read_arrow("group_snapshots").to_pylist()}
    assert states == {"done": "Empty", "reader": "Stable"}
    [broker] = lake.read_arrow("broker_configs").to_pylist()
    # Kafka's default, read from the broker with DescribeConfigs
    assert (broker["offsets_retention_minutes"], broker["offsets_retention_source"]) == (10080, "broker")
    assert len(lines) == 1 and result.snapshot_id in lines[0] and "2 groups (1 members)" in lines[0]


def test_two_snapshots_append_two_ids_with_their_own_counts(two_groups, lake):
    first = snapshot_cluster(two_groups, lake, emit=lambda line: None)
    bootstrap = two_groups.bootstrap_servers
    create_topics(bootstrap, {"extra": (4, {})})
    produce_counts(bootstrap, "views", [5])
    second = snapshot_cluster(two_groups, lake, emit=lambda line: None)

    assert first.snapshot_id != second.snapshot_id
    assert second.snapshot_at >= first.snapshot_at
    for name in SNAPSHOT_TABLES:
        extra = {"log_offset_snapshots": 4, "topic_configs": 1}.get(name, 0)
        expected = {first.snapshot_id: EXPECTED_ROWS[name], second.snapshot_id: EXPECTED_ROWS[name] + extra}
        assert rows_per_snapshot(lake, name) == {sid: n for sid, n in expected.items() if n}, name
    ends = lake.query("select snapshot_id, log_end_offset from log_offset_snapshots where topic = 'views'",
                      "log_offset_snapshots").to_pydict()
    assert dict(zip(ends["snapshot_id"], ends["log_end_offset"])) == {first.snapshot_id: 2, second.snapshot_id: 7}


def test_offsets_retention_is_the_brokers_configured_value_not_the_fallback(tmp_path, lake):
    # A broker started with its own offsets.retention.minutes: the snapshot stores what the broker
    # answers to DescribeConfigs, and the fallback (for clusters that do not expose it) is unused.
    with EmbeddedBroker(tmp_path / "broker", overrides={"offsets.retention.minutes": "42"}) as broker:
        assert broker_offsets_retention(broker.bootstrap_servers) == 42
        snapshot_cluster(KafkaConnection(bootstrap_servers=broker.bootstrap_servers), lake,
                         offsets_retention_fallback_minutes=1440, emit=lambda line: None)
    [row] = lake.read_arrow("broker_configs").to_pylist()
    assert (row["offsets_retention_minutes"], row["offsets_retention_source"]) == (42, "broker")


def test_unreachable_cluster_is_named_and_the_lake_is_untouched(lake):
    address = f"127.0.0.1:{free_loopback_port()}"
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as error:
        snapshot_cluster(KafkaConnection(bootstrap_servers=address), lake, emit=lambda line: None)
    assert time.monotonic() - started < 20
    assert address in str(error.value)
    assert not lake.root.exists()


@pytest.mark.fast
def test_a_snapshot_asks_about_the_groups_the_models_saw_alive_and_those_it_found_gone(tmp_path):
    import pyarrow as pa

    from offsets_platform.ingest.snapshots import groups_the_models_know
    from offsets_platform.models.project import lake_for_models

    lake = lake_for_models(tmp_path / "lake")
    assert groups_the_models_know(lake) == []  # before the models ran
    schema = lake.spec("group_state").schema
    rows = [{"group_id": "alive", "state": "Empty", "state_source": "log"},
            {"group_id": "deleted", "state": "Dead", "state_source": "log"},  # the log's tombstone
            {"group_id": "gone", "state": "Dead", "state_source": "gone"}]  # only a snapshot said so
    lake.overwrite("group_state", pa.Table.from_pylist(
        [{**{name: None for name in schema.names}, "classification": "consumer", "is_membership_known": True, **row}
         for row in rows], schema=schema))
    assert sorted(groups_the_models_know(lake)) == ["alive", "gone"]
