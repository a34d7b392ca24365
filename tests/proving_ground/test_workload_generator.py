"""The generator: deterministic, decodable, every record type, Kafka's partitioning, batches, summary."""

from collections import Counter

import pyarrow as pa
import pytest

from offsets_platform.codec import decode_record
from offsets_platform.codec import encode as enc
from proving_ground.workload import (
    BATCH_SCHEMA,
    SCENARIOS,
    CoordinatorRecord,
    generate,
    generate_batches,
    partition_for,
    summarize,
)
from proving_ground.workload.groups import v3_packer

pytestmark = pytest.mark.fast  # make test-fast


START_MS = 1_700_000_000_000  # the same start as conftest's shared 20k stream


def test_same_seed_same_bytes_and_other_seed_differs():
    first = list(generate(11, 5_000, start_ms=START_MS))
    again = list(generate(11, 5_000, start_ms=START_MS))
    other = list(generate(12, 5_000, start_ms=START_MS))
    assert first == again
    assert first != other
    assert [r.key for r in first] != [r.key for r in other]


def test_stops_after_exactly_the_requested_records():
    assert sum(1 for _ in generate(3, 1234, start_ms=START_MS)) == 1234
    assert list(generate(3, 0, start_ms=START_MS)) == []


def test_default_start_is_about_ten_days_ago():
    import time

    first = next(iter(generate(1, 1)))
    age_days = (time.time() * 1000 - first.timestamp_ms) / 86_400_000
    assert 9.9 < age_days < 10.1


def test_records_are_coordinator_records_in_time_order(records_20k):
    assert all(isinstance(r, CoordinatorRecord) for r in records_20k)
    stamps = [r.timestamp_ms for r in records_20k]
    assert stamps == sorted(stamps)
    assert stamps[0] >= START_MS
    # the run spans the week and more that expiry needs, and ends before "now" would
    assert 8 < (stamps[-1] - START_MS) / 86_400_000 < 11


def test_every_record_decodes_and_lands_on_kafkas_partition(decoded_20k):
    for record, decoded in decoded_20k:
        assert decoded["record_type"] != "unknown"
        assert record.partition == partition_for(decoded["group"], 50), decoded["group"]


def test_partition_count_is_configurable():
    for record in generate(5, 2_000, start_ms=START_MS, partitions=7):
        assert 0 <= record.partition < 7
        assert record.partition == partition_for(decode_record(record.key, None)["group"], 7)


def commit_shape(records) -> tuple[set, set]:
    """The groups and the (topic, partition)s that offset commits name."""
    groups, partitions = set(), set()
    for record in records:
        decoded = decode_record(record.key, record.value)
        if decoded["record_type"] == "offset_commit":
            groups.add(decoded["group"])
            partitions.add((decoded["topic"], decoded["partition"]))
    return groups, partitions


def test_groups_and_topic_partitions_are_configurable():
    default_groups, default_partitions = commit_shape(generate(5, 20_000, start_ms=START_MS))
    groups, partitions = commit_shape(generate(5, 20_000, start_ms=START_MS, groups=300, topic_partitions=5_000))
    assert len(default_groups) < 50 and len(default_partitions) < 400
    assert len(groups) >= 300 and len(partitions) > 2_000
    assert list(generate(5, 2_000, start_ms=START_MS, groups=None, topic_partitions=None)) == \
        list(generate(5, 2_000, start_ms=START_MS))


def test_all_record_types_value_versions_and_tombstones_appear(decoded_20k):
    types = Counter(d["key_version"] for _, d in decoded_20k)
    assert set(types) >= {0, 1, 2, 3, 4, 5, 6, 7, 8}
    versions = Counter((d["key_version"], d["value_version"]) for _, d in decoded_20k if not d["tombstone"])
    assert {(0, 0), (1, 1), (1, 2), (1, 3), (2, 3)} <= set(versions)
    assert {version for key, version in versions if key == 0} == {0}  # the only one Kafka reads it with
    assert versions[(1, 3)] > 0.9 * sum(versions.values())  # current brokers write v3
    tombstones = Counter(d["key_version"] for _, d in decoded_20k if d["tombstone"])
    assert {1, 2, 5, 7, 8} <= set(tombstones)


def test_every_scenario_group_appears(decoded_20k):
    groups = {d["group"] for _, d in decoded_20k}
    assert set(SCENARIOS) <= groups
    assert any(g.startswith("team-") for g in groups)
    assert {s.kind for s in SCENARIOS.values()} == {"consumer", "standalone", "connect", "kip848", "legacy"}
    assert {"orders-active", "billing-slow", "search-changed-subscription", "reports-stopped",
            "ledger-standalone", "connect-sink", "payments-kip848"} <= set(SCENARIOS)


def test_offset_commit_values_match_the_codec_byte_for_byte(decoded_20k):
    for record, d in decoded_20k[:3000]:
        if d["record_type"] == "offset_commit" and not d["tombstone"]:
            assert record.value == enc.offset_commit_value(
                d["offset"], d["commit_timestamp"], d["metadata"],
                -1 if d["leader_epoch"] is None else d["leader_epoch"],
                -1 if d["expire_timestamp"] is None else d["expire_timestamp"], version=d["value_version"])
            assert record.key == enc.offset_commit_key(d["group"], d["topic"], d["partition"], d["key_version"])


@pytest.mark.parametrize("metadata", ["", "batch=nightly", "ünïcode"])
def test_fast_v3_packer_equals_codec(metadata):
    pack = v3_packer(metadata)
    assert pack(123456789, 7, 1_700_000_000_123) == enc.offset_commit_value(
        123456789, 1_700_000_000_123, metadata, leader_epoch=7, version=3)


def test_commits_carry_metadata_mostly_empty(decoded_20k):
    metadata = Counter(d["metadata"] for _, d in decoded_20k if d["record_type"] == "offset_commit"
                       and not d["tombstone"])
    assert metadata[""] > sum(metadata.values()) / 2
    assert len(metadata) > 1


def test_summary_matches_decoding(records_20k, decoded_20k):
    summary = summarize(records_20k)
    assert summary["records"] == len(records_20k)
    assert summary["by_key_type"] == dict(Counter(d["key_version"] for _, d in decoded_20k))
    assert summary["tombstones_by_key_type"] == dict(
        Counter(d["key_version"] for _, d in decoded_20k if d["tombstone"]))
    assert summary["tombstones"] == sum(1 for _, d in decoded_20k if d["tombstone"])
    assert summary["value_versions"] == dict(Counter(
        (d["key_version"], d["value_version"]) for _, d in decoded_20k if not d["tombstone"]))
    by_name = Counter(d["record_type"] for _, d in decoded_20k)
    assert summary["by_record_type"] == dict(by_name)


def test_batches_hold_the_same_records():
    records = list(generate(9, 25_000, start_ms=START_MS))
    tables = list(generate_batches(9, 25_000, batch_size=10_000, start_ms=START_MS))
    assert [t.num_rows for t in tables] == [10_000, 10_000, 5_000]
    assert all(t.schema == BATCH_SCHEMA for t in tables)
    table = pa.concat_tables(tables)
    assert table.column("partition").to_pylist() == [r.partition for r in records]
    assert table.column("key").to_pylist() == [r.key for r in records]
    assert table.column("value").to_pylist() == [r.value for r in records]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [r.timestamp_ms for r in records]
    assert table.column("value").null_count == sum(r.value is None for r in records) > 0


def test_arguments_are_checked():
    with pytest.raises(ValueError):
        list(generate(1, -1))
    with pytest.raises(ValueError):
        list(generate(1, 10, partitions=0))
    with pytest.raises(ValueError):
        list(generate(1, 10, groups=0))
    with pytest.raises(ValueError):
        list(generate(1, 10, topic_partitions=0))
    with pytest.raises(ValueError):
        list(generate_batches(1, 10, batch_size=0))
