"""Any int64 millisecond Kafka stores as a time lands in bronze, through the batch decoder and the
Delta write, next to the records around it: the commit and legacy expire timestamps of offset
commits, a classic group's current state time, a record's own timestamp.

A time the lake's timestamps hold (the years 1-9999) is the timestamp, with
`<column>_out_of_range_ms` null; any other is a null timestamp and its milliseconds there.
No broker: raw batches are built as the reader yields them (tests/ingest/test_real_kafka_times.py
does the same against Kafka's own coordinator).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_platform.codec import decode_batch, encode
from offsets_platform.ingest.offsets_topic import IngestResult, write_batch
from offsets_platform.kafka.offsets_topic import RAW_SCHEMA
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.lake.timestamp_range import LAKE_TIMESTAMP_MAX_MS, LAKE_TIMESTAMP_MIN_MS, out_of_range_column

pytestmark = pytest.mark.fast  # make test-fast

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# Microseconds (Arrow's, Delta's) hold milliseconds down to -(2**63 // 1000) and up to 2**63 // 1000.
MICROS_MIN_MS, MICROS_MAX_MS = -(2**63) // 1000 + 1, (2**63 - 1) // 1000
EXTREMES = [LONG_MIN, LONG_MIN + 1, MICROS_MIN_MS - 1, MICROS_MIN_MS, LAKE_TIMESTAMP_MIN_MS - 1,
            LAKE_TIMESTAMP_MIN_MS, -2, 0, 1_790_000_000_000, LAKE_TIMESTAMP_MAX_MS, LAKE_TIMESTAMP_MAX_MS + 1,
            300_000_000_000_000, MICROS_MAX_MS, MICROS_MAX_MS + 1, LONG_MAX - 1, LONG_MAX]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
T0 = 1_790_000_000_000
NO_TIME = -1  # Kafka's "none" for the expire and current state timestamps (read as null)


def raw_batch(records: list[tuple[bytes | None, bytes | None, int]], partition: int = 0) -> pa.Table:
    """(key, value, record timestamp in ms) as OffsetsTopicReader yields them, offsets from 0."""
    keys, values, stamps = zip(*records)
    return pa.table([
        pa.array([partition] * len(records), pa.int32()),
        pa.array(range(len(records)), pa.int64()),
        pa.array(stamps, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
    ], schema=RAW_SCHEMA)


def write(lake: Lake, raw: pa.Table) -> IngestResult:
    result = IngestResult(run_id="times")
    write_batch(lake, raw, result, datetime.now(timezone.utc), {name: {} for name in RECORD_TABLES}, "times")
    return result


def landed(row: dict, column: str) -> int | None:
    """The milliseconds a bronze row holds for `column`, from whichever of its two columns has them."""
    timestamp, millis = row[column], row[out_of_range_column(column)]
    if timestamp is not None:
        assert millis is None, f"{column}: both the timestamp and the milliseconds are set"
        return (timestamp - EPOCH) // timedelta(milliseconds=1)
    if millis is not None:
        assert not LAKE_TIMESTAMP_MIN_MS <= millis <= LAKE_TIMESTAMP_MAX_MS, f"{column}: {millis} fits a timestamp"
    return millis


def commit(version: int, offset: int, commit_ms: int, expire_ms: int = NO_TIME) -> tuple[bytes, bytes]:
    # v1 is the version with an expire timestamp; v0-v3 take the vector decoder, v4 the scalar one
    return (encode.offset_commit_key("g", "t", offset % 4),
            encode.offset_commit_value(offset, commit_ms, expire_timestamp=expire_ms, version=version))


def group(version: int, state_ms: int) -> tuple[bytes, bytes]:
    # v2+ carry the current state time; v4 (flexible) takes the scalar decoder
    return encode.group_metadata_key("grp"), encode.group_metadata_value("consumer", 1, "range", "m", state_ms, [],
                                                                         version=version)


def test_the_decoder_reads_every_int64_time_as_it_is():
    records = [(*commit(1, i, ms, expire_ms=ms if ms != NO_TIME else 5), T0) for i, ms in enumerate(EXTREMES)]
    records += [(*commit(4, i, ms), T0) for i, ms in enumerate(EXTREMES)]
    raw = raw_batch(records)
    commits = decode_batch(raw["key"], raw["value"]).offset_commits.sort_by("row")
    assert commits["commit_timestamp"].cast(pa.int64()).to_pylist() == EXTREMES * 2
    assert commits["expire_timestamp"].cast(pa.int64()).to_pylist()[:len(EXTREMES)] == EXTREMES


def test_extreme_times_land_with_their_batch():
    records = []
    for index, millis in enumerate(EXTREMES):
        records.append((*commit(1, index, millis, expire_ms=millis), T0))  # as an old broker wrote it
        records.append((*commit(3, index, millis), T0))
        records.append((*commit(4, index, T0, expire_ms=NO_TIME), millis))  # the record's timestamp
        records.append((*group(3, millis), T0))
        records.append((*group(4, millis), T0))
    records.append((*commit(3, 99, T0), T0))  # ordinary records around them
    records.append((encode.offset_commit_key("g", "t", 0), b"\x00\x03\x00", T0))  # truncated: rejected
    lake = Lake(tempfile.mkdtemp(prefix="kafka-times-"))
    result = write(lake, raw_batch(records))

    assert result.records_read == len(records)
    commits = lake.read_arrow("offset_commit_records").sort_by("source_offset").to_pylist()
    groups = lake.read_arrow("group_metadata_records").sort_by("source_offset").to_pylist()
    (rejected,) = lake.read_arrow("rejected_records").to_pylist()
    assert len(commits) == 3 * len(EXTREMES) + 1 and len(groups) == 2 * len(EXTREMES)
    assert rejected["source_offset"] == len(records) - 1 and landed(rejected, "source_timestamp") == T0
    for index, millis in enumerate(EXTREMES):
        v1, v3, stamped = commits[3 * index:3 * index + 3]
        assert (landed(v1, "commit_timestamp"), landed(v1, "expire_timestamp")) == (millis, millis)
        assert (landed(v3, "commit_timestamp"), landed(v3, "expire_timestamp")) == (millis, None)
        assert (landed(stamped, "source_timestamp"), landed(stamped, "commit_timestamp")) == (millis, T0)
        for row in groups[2 * index:2 * index + 2]:
            assert landed(row, "current_state_timestamp") == millis
    assert commits[-1]["offset"] == 99 and landed(commits[-1], "commit_timestamp") == T0


def test_a_time_inside_the_range_is_a_timestamp_and_outside_only_milliseconds():
    inside, outside = LAKE_TIMESTAMP_MAX_MS, LAKE_TIMESTAMP_MAX_MS + 1
    lake = Lake(tempfile.mkdtemp(prefix="kafka-times-"))
    write(lake, raw_batch([(*commit(3, 1, inside), T0), (*commit(3, 2, outside), T0)]))
    first, second = lake.read_arrow("offset_commit_records").sort_by("source_offset").to_pylist()
    assert first["commit_timestamp"] == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
    assert first["commit_timestamp_out_of_range_ms"] is None
    assert (second["commit_timestamp"], second["commit_timestamp_out_of_range_ms"]) == (None, outside)


# -- fuzz ------------------------------------------------------------------------------------

FUZZ_EXAMPLES = int(os.environ.get("OFFSETS_PLATFORM_FUZZ_EXAMPLES", "40"))

times = st.one_of(st.integers(LONG_MIN, LONG_MAX), st.sampled_from(EXTREMES),
                  st.integers(LAKE_TIMESTAMP_MIN_MS - 10, LAKE_TIMESTAMP_MIN_MS + 10),
                  st.integers(LAKE_TIMESTAMP_MAX_MS - 10, LAKE_TIMESTAMP_MAX_MS + 10))


def _commit_record(version: int, offset: int, commit_ms: int, expire_ms: int) -> tuple:
    stored_expire = expire_ms if version == 1 and expire_ms != NO_TIME else None
    return (*commit(version, offset, commit_ms, expire_ms),
            ("offset_commit_records", {"commit_timestamp": commit_ms, "expire_timestamp": stored_expire}))


def _group_record(version: int, state_ms: int) -> tuple:
    return (*group(version, state_ms),
            ("group_metadata_records", {"current_state_timestamp": None if state_ms == NO_TIME else state_ms}))


# (key, value, (bronze table, column -> the milliseconds Kafka stored) or None for random bytes)
offset_commits = st.builds(_commit_record, st.integers(0, 4), st.integers(-1, LONG_MAX), times, times)
group_records = st.builds(_group_record, st.integers(2, 4), times)
random_bytes = st.tuples(st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=60)), st.none())
batches = st.lists(st.tuples(st.one_of(offset_commits, group_records, random_bytes), times), min_size=1, max_size=12)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_fuzz_any_records_with_any_times_land_whole(batch):
    """Random offset commits (v0-v4) and group records (v2-v4) with any int64 times, random
    bytes, any record timestamps, decoded and written to a real Delta lake in a temporary folder:
    the write never fails, every record lands in exactly one bronze table, every time as Kafka
    stored it, and the lake reads back into Python.

    CI runs FUZZ_EXAMPLES examples (a few seconds: each writes a fresh lake). For a longer fuzz,
    raise them with OFFSETS_PLATFORM_FUZZ_EXAMPLES, from the repository's root:
        OFFSETS_PLATFORM_FUZZ_EXAMPLES=2000 PYTHONPATH=. .venv/bin/python -m pytest \\
            tests/ingest/test_kafka_times_land.py -k fuzz -p no:cacheprovider
    """
    raw = raw_batch([(key, value, stamp) for (key, value, _), stamp in batch])
    with tempfile.TemporaryDirectory(prefix="kafka-times-fuzz-") as folder:
        lake = Lake(folder)
        result = write(lake, raw)
        rows = {name: lake.read_arrow(name).to_pylist() for name in RECORD_TABLES}  # as Python datetimes
    whole_records = [name for name in RECORD_TABLES if name != "group_metadata_members"]
    where = {row["source_offset"]: (name, row) for name in whole_records for row in rows[name]}
    assert sorted(where) == list(range(len(batch))) and result.records_read == len(batch)
    assert sum(len(rows[name]) for name in whole_records) == len(batch), "a record landed twice"
    for offset, ((_, _, stored), stamp) in enumerate(batch):
        name, row = where[offset]
        assert landed(row, "source_timestamp") == stamp
        if stored is not None:
            table, stored_times = stored
            assert name == table, f"record {offset} landed in {name}: {row.get('reason')}"
            assert {column: landed(row, column) for column in stored_times} == stored_times
