"""The models' table IO through Delta's own Spark reader and writer (`Lake.spark_*`), and through
delta-rs and Arrow for small tables (`via_arrow`), on real Delta tables and a real Spark session:
each behaviour holds on both paths."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from offsets_platform.lake import Lake, TableSpec
from offsets_platform.lake.delta import CHANGE_DATA_FEED
from tests.lake.test_delta import CHECKPOINTED_AT as AT
from tests.lake.test_delta import checkpoint_rows

MODEL = TableSpec(name="latest_offsets", layer="silver", keys=("group_id", "partition_id"),
                  description="a model's table", schema=pa.schema([
                      pa.field("group_id", pa.string(), nullable=False),
                      pa.field("partition_id", pa.int32(), nullable=False),
                      pa.field("committed_offset", pa.int64()),
                  ]))


@pytest.fixture
def model_lake(tmp_path) -> Lake:
    return Lake(tmp_path / "lake", model_tables={MODEL.name: MODEL})


def checkpoints(partitions: list[int], next_offset: int) -> pa.Table:
    """Checkpoint rows of the partitions, all at `next_offset`, checkpointed at AT."""
    return checkpoint_rows("r", partitions, [next_offset] * len(partitions))


def offsets(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, "group_id string, partition_id int, committed_offset long")


def collected(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def writer_of_last_commit(lake: Lake, name: str) -> str:
    return DeltaTable(str(lake.path(name))).history(1)[0]["engineInfo"]


# each test of a read or a write runs through delta-spark and through delta-rs with Arrow
both_paths = pytest.mark.parametrize("via_arrow", [False, True], ids=["delta-spark", "arrow"])


def expected_writer(via_arrow: bool) -> str:
    return "delta-rs" if via_arrow else "Apache-Spark"


@both_paths
def test_spark_reads_a_pinned_version_whatever_was_written_since(lake, spark, via_arrow):
    first = lake.append("offsets_topic_checkpoints", checkpoints([0, 1], 5))
    lake.append("offsets_topic_checkpoints", checkpoints([2], 9))
    lake.overwrite("offsets_topic_checkpoints", checkpoints([3], 11))
    pinned = lake.spark_read(spark, "offsets_topic_checkpoints", first, via_arrow=via_arrow)
    assert [(row.source_partition, row.next_offset) for row in pinned.orderBy("source_partition").collect()] == [
        (0, 5), (1, 5)]
    latest = lake.spark_read(spark, "offsets_topic_checkpoints", via_arrow=via_arrow)
    assert [(row.source_partition, row.next_offset) for row in latest.collect()] == [(3, 11)]
    assert latest.columns == lake.spec("offsets_topic_checkpoints").schema.names
    assert [(field.name, field.dataType.simpleString()) for field in latest.schema][-2:] == [
        ("checkpointed_at", "timestamp"), ("skipped_records", "bigint")]
    assert latest.collect()[0].checkpointed_at == AT.replace(tzinfo=None)  # the session's zone is UTC
    # a version before the table's first reads empty, with the table's columns
    assert lake.spark_read(spark, "offsets_topic_checkpoints", -1, via_arrow=via_arrow).count() == 0


@both_paths
def test_rows_appended_since_a_version_are_those_of_the_files_appended(lake, spark, via_arrow):
    # delta-spark: the appended Parquet files read as they are; Arrow: delta-rs's change data feed
    first = lake.append("offsets_topic_checkpoints", checkpoints([0], 1))
    lake.append("offsets_topic_checkpoints", checkpoints([1], 2))
    last = lake.append("offsets_topic_checkpoints", checkpoints([2, 3], 3))
    assert DeltaTable(str(lake.path("offsets_topic_checkpoints"))).metadata().configuration[CHANGE_DATA_FEED] == "true"
    assert len(lake.appended_files("offsets_topic_checkpoints", first, last)) == 2
    appended = lake.spark_read_appended(spark, "offsets_topic_checkpoints", first, last, via_arrow=via_arrow)
    assert appended.columns == lake.spec("offsets_topic_checkpoints").schema.names
    assert sorted((row.source_partition, row.next_offset) for row in appended.collect()) == [(1, 2), (2, 3), (3, 3)]
    assert lake.spark_read_appended(spark, "offsets_topic_checkpoints", last, last, via_arrow=via_arrow).count() == 0
    # every row of the table is new after the version before its first
    assert lake.appended_files("offsets_topic_checkpoints", -1, last) is not None
    assert lake.spark_read_appended(spark, "offsets_topic_checkpoints", -1, last, via_arrow=via_arrow).count() == 4


@pytest.mark.fast  # make test-fast: delta-rs alone; the module's other tests run Spark
def test_a_rewritten_table_has_no_appended_rows_only_a_whole_read_is_correct(lake):
    first = lake.append("offsets_topic_checkpoints", checkpoints([0], 1))
    lake.overwrite("offsets_topic_checkpoints", checkpoints([1], 2))
    last = lake.append("offsets_topic_checkpoints", checkpoints([2], 3))
    assert lake.appended_files("offsets_topic_checkpoints", first, last) is None
    assert lake.appended_files("offsets_topic_checkpoints", first + 1, last) is not None


@pytest.mark.fast  # make test-fast: delta-rs alone
def test_data_bytes_are_the_sizes_of_a_versions_files_or_of_the_files_given(lake):
    # what the runner weighs to choose a table's path to Spark, before reading a row
    first = lake.append("offsets_topic_checkpoints", checkpoints([0], 1))
    last = lake.append("offsets_topic_checkpoints", checkpoints([1, 2], 2))
    on_disk = {uri: os.path.getsize(uri) for uri in lake.files("offsets_topic_checkpoints")}
    appended = lake.appended_files("offsets_topic_checkpoints", first, last)
    assert lake.data_bytes("offsets_topic_checkpoints", last) == sum(on_disk.values())
    assert lake.data_bytes("offsets_topic_checkpoints", first) == sum(on_disk.values()) - on_disk[appended[0]]
    assert lake.data_bytes("offsets_topic_checkpoints", last, appended) == on_disk[appended[0]]
    assert lake.data_bytes("offsets_topic_checkpoints", -1) == 0


def test_an_appended_file_without_a_column_added_since_reads_it_as_null(lake, spark):
    # an older version wrote the table without skipped_records; the lake adds it at its next write
    path = str(lake.path("offsets_topic_checkpoints"))
    schema = lake.spec("offsets_topic_checkpoints").schema
    older = checkpoints([0], 1).drop_columns(["skipped_records"])
    older = older.cast(pa.schema([schema.field(name) for name in older.column_names]))
    DeltaTable.create(path, schema=older.schema, configuration={CHANGE_DATA_FEED: "true"})
    write_deltalake(path, older, mode="append")
    last = lake.append("offsets_topic_checkpoints", checkpoints([1], 2).set_column(
        6, "skipped_records", pa.array([3], pa.int64())))
    appended = lake.spark_read_appended(spark, "offsets_topic_checkpoints", -1, last)
    assert appended.columns == schema.names
    assert sorted((row.source_partition, row.skipped_records) for row in appended.collect()) == [(0, None), (1, 3)]


def test_a_table_created_before_the_change_data_feed_gets_it_at_its_next_write(lake, spark):
    path = str(lake.path("offsets_topic_checkpoints"))
    schema = lake.spec("offsets_topic_checkpoints").schema
    DeltaTable.create(path, schema=schema, configuration={"delta.checkpointInterval": "10"})
    write_deltalake(path, checkpoints([0], 1).cast(schema), mode="append")
    before = lake.version("offsets_topic_checkpoints")
    last = lake.append("offsets_topic_checkpoints", checkpoints([1], 2))
    assert DeltaTable(path).metadata().configuration[CHANGE_DATA_FEED] == "true"
    # the appends before the feed was on are not in it: a model that read up to then runs in full
    assert lake.appended_files("offsets_topic_checkpoints", before, last) is None
    since = lake.version("offsets_topic_checkpoints")
    newest = lake.append("offsets_topic_checkpoints", checkpoints([2], 3))
    assert len(lake.appended_files("offsets_topic_checkpoints", since, newest)) == 1
    assert collected(lake.spark_read_appended(spark, "offsets_topic_checkpoints", since, newest)
                     .select("source_partition")) == [(2,)]


@both_paths
def test_spark_overwrite_writes_through_delta_keeping_not_null_columns(model_lake, spark, via_arrow):
    assert model_lake.spark_overwrite(MODEL.name, offsets(spark, [("a", 0, 5), ("b", 1, None)]), via_arrow) == 2
    assert writer_of_last_commit(model_lake, MODEL.name).startswith(expected_writer(via_arrow))
    assert model_lake.spark_overwrite(MODEL.name, offsets(spark, [("c", 2, 7)]), via_arrow) == 1
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("c", 2, 7)]
    table = DeltaTable(str(model_lake.path(MODEL.name)))
    assert [(field.name, field.nullable) for field in table.schema().fields] == [
        ("group_id", False), ("partition_id", False), ("committed_offset", True)]
    # a model's table has no change data feed: nothing reads its appended rows
    assert CHANGE_DATA_FEED not in table.metadata().configuration


@both_paths
def test_spark_overwrite_casts_the_result_to_the_registered_types_and_order(model_lake, spark, via_arrow):
    result = spark.sql("select 9 as committed_offset, 'g' as group_id, 3L as partition_id")
    model_lake.spark_overwrite(MODEL.name, result, via_arrow)
    assert model_lake.read_arrow(MODEL.name).schema == MODEL.schema


@both_paths
def test_a_null_in_a_not_null_column_fails_the_write_and_changes_nothing(model_lake, spark, via_arrow):
    model_lake.spark_overwrite(MODEL.name, offsets(spark, [("a", 0, 5)]), via_arrow)
    version = model_lake.version(MODEL.name)
    with pytest.raises(Exception, match="group_id"):
        model_lake.spark_overwrite(MODEL.name, offsets(spark, [(None, 1, 6)]), via_arrow)
    assert model_lake.version(MODEL.name) == version
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("a", 0, 5)]


@both_paths
def test_an_empty_result_makes_an_empty_table_that_downstream_models_can_read(model_lake, spark, via_arrow):
    assert model_lake.spark_overwrite(MODEL.name, offsets(spark, []), via_arrow) == 0
    assert model_lake.exists(MODEL.name)
    assert model_lake.spark_read(spark, MODEL.name).columns == MODEL.schema.names


@both_paths
def test_spark_overwrite_replaces_a_schema_an_older_version_wrote(model_lake, spark, via_arrow):
    path = str(model_lake.path(MODEL.name))
    write_deltalake(path, pa.table({"group": ["g"], "partition": pa.array([0], pa.int32())}))
    assert model_lake.spark_overwrite(MODEL.name, offsets(spark, [("g", 0, 1)]), via_arrow) == 1
    assert model_lake.read_arrow(MODEL.name).schema == MODEL.schema
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("g", 0, 1)]


@both_paths
def test_spark_merge_upserts_by_the_registered_keys(model_lake, spark, via_arrow):
    assert model_lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 1), ("a", 1, 1)]), via_arrow) == 2
    assert model_lake.spark_merge(MODEL.name, offsets(spark, [("a", 1, 9), ("b", 0, 4)]), via_arrow) == 2
    assert DeltaTable(path := str(model_lake.path(MODEL.name))).history(1)[0]["operation"] == "MERGE"
    assert writer_of_last_commit(model_lake, MODEL.name).startswith(expected_writer(via_arrow))
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("a", 0, 1), ("a", 1, 9), ("b", 0, 4)]
    assert sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda row: (row["group_id"],
                                                                                    row["partition_id"])) == [
        {"group_id": "a", "partition_id": 0, "committed_offset": 1},
        {"group_id": "a", "partition_id": 1, "committed_offset": 9},
        {"group_id": "b", "partition_id": 0, "committed_offset": 4}]


@both_paths
def test_a_merge_deletes_the_rows_whose_key_comes_flagged(model_lake, spark, via_arrow):
    model_lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 1), ("a", 1, 1), ("b", 0, 1)]), via_arrow)
    flagged = spark.createDataFrame([("a", 0, 1, True), ("a", 1, 5, False), ("c", 0, 3, True), ("d", 0, 4, False)],
                                    "group_id string, partition_id int, committed_offset long, is_pruned boolean")
    assert model_lake.spark_merge(MODEL.name, flagged, via_arrow, delete_when="is_pruned") == 4
    assert writer_of_last_commit(model_lake, MODEL.name).startswith(expected_writer(via_arrow))
    # a-0 deleted, a-1 updated, b-0 untouched, c-0 (flagged, not in the table) not inserted, d-0 inserted
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("a", 1, 5), ("b", 0, 1), ("d", 0, 4)]
    assert model_lake.table(MODEL.name).schema().to_arrow().names == MODEL.schema.names  # the flag is not stored


def test_a_rewrite_gives_the_table_a_merge_gives_in_one_overwrite(model_lake, spark):
    # the same upserts and deletes as MERGE INTO, written as a new version of the whole table
    model_lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 1), ("a", 1, 1), ("b", 0, 1)]))
    flagged = spark.createDataFrame([("a", 0, 1, True), ("a", 1, 5, False), ("c", 0, 3, True), ("d", 0, 4, False)],
                                    "group_id string, partition_id int, committed_offset long, is_pruned boolean")
    assert model_lake.spark_merge(MODEL.name, flagged, delete_when="is_pruned", rewrite=True) == 4
    assert DeltaTable(str(model_lake.path(MODEL.name))).history(1)[0]["operation"] == "WRITE"
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("a", 1, 5), ("b", 0, 1), ("d", 0, 4)]
    assert model_lake.table(MODEL.name).schema().to_arrow().names == MODEL.schema.names
    version = model_lake.version(MODEL.name)
    assert model_lake.spark_merge(MODEL.name, offsets(spark, []), rewrite=True) == 0  # nothing: no commit
    assert model_lake.version(MODEL.name) == version


@both_paths
def test_a_merge_of_no_rows_commits_nothing(model_lake, spark, via_arrow):
    # a new version would make every model that reads the table run again for nothing
    model_lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 1)]), via_arrow)
    version = model_lake.version(MODEL.name)
    assert model_lake.spark_merge(MODEL.name, offsets(spark, []), via_arrow) == 0
    assert model_lake.spark_merge(MODEL.name, offsets(spark, []), via_arrow, arrow_max_rows=10) == 0
    assert model_lake.version(MODEL.name) == version


def test_a_result_of_at_most_arrow_max_rows_is_written_by_delta_rs_a_larger_one_by_delta_spark(model_lake, spark):
    two, three = [("a", 0, 1), ("a", 1, 1)], [("a", 0, 2), ("b", 0, 2), ("c", 0, 2)]
    for write in (model_lake.spark_overwrite, model_lake.spark_merge):
        assert write(MODEL.name, offsets(spark, two), arrow_max_rows=2) == 2
        assert writer_of_last_commit(model_lake, MODEL.name).startswith("delta-rs"), write
        assert write(MODEL.name, offsets(spark, three), arrow_max_rows=2) == 3
        assert writer_of_last_commit(model_lake, MODEL.name).startswith("Apache-Spark"), write
    # the overwrite left three rows; the merge upserted two, then three
    assert collected(model_lake.spark_read(spark, MODEL.name)) == [("a", 0, 2), ("a", 1, 1), ("b", 0, 2), ("c", 0, 2)]
    assert model_lake.read_arrow(MODEL.name).schema == MODEL.schema


def test_a_lake_whose_path_holds_a_backtick_or_a_quote_merges_into_its_own_table(tmp_path, spark):
    # the table's path is quoted into MERGE INTO delta.`<path>`: a backtick must not end it early
    lake = Lake(tmp_path / "it's a `lake`", model_tables={MODEL.name: MODEL})
    lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 1)]))
    lake.spark_merge(MODEL.name, offsets(spark, [("a", 0, 2)]))
    assert collected(lake.spark_read(spark, MODEL.name)) == [("a", 0, 2)]
