"""The lake on real Delta tables on disk, read back by delta-rs and by a real Spark session."""

from dataclasses import replace
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from offsets_platform.lake import TABLES, Lake, MissingTable, TableSpec, table_spec
from offsets_platform.lake.tables import RECORD_TABLES, _described
from offsets_platform.models.project import model_table_specs

# every table a lake for the models knows (the `lake` fixture): its own and the shipped models'
DECLARED = sorted({*TABLES, *model_table_specs()})

# The tests on delta-rs alone are marked `fast` (make test-fast) one by one; those that read
# through Spark are not: the fast tier starts no JVM.


CHECKPOINTED_AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def checkpoint_rows(run_id, partitions, next_offsets):
    return pa.table({
        "ingest_run_id": [run_id] * len(partitions),
        "source_topic": ["__consumer_offsets"] * len(partitions),
        "source_partition": pa.array(partitions, pa.int32()),
        "next_offset": pa.array(next_offsets, pa.int64()),
        "record_count": pa.array([1] * len(partitions), pa.int64()),
        "checkpointed_at": pa.array([CHECKPOINTED_AT] * len(partitions), pa.timestamp("us", tz="UTC")),
        "skipped_records": pa.nulls(len(partitions), pa.int64()),
    })


@pytest.mark.fast
def test_every_bronze_record_table_says_where_its_rows_came_from():
    for name in RECORD_TABLES:
        spec = TABLES[name]
        assert spec.keys[:2] == ("source_partition", "source_offset"), name
        assert {"source_partition", "source_offset", "source_timestamp"} <= set(spec.schema.names)
        assert "row" not in spec.schema.names, "the codec's batch-local row index must not leak"


@pytest.mark.fast
def test_every_column_of_the_lakes_own_tables_has_a_description_kept_out_of_the_schema():
    undescribed = [f"{name}.{column}" for name, spec in TABLES.items() for column in spec.schema.names
                   if not spec.column_descriptions.get(column, "").strip()]
    assert not undescribed, f"columns without a description in lake/tables.py: {undescribed}"
    for name, spec in TABLES.items():
        assert set(spec.column_descriptions) == set(spec.schema.names), name
        # the descriptions never reach the schema that creates Delta tables and casts written data
        assert spec.schema.metadata is None and all(f.metadata is None for f in spec.schema), name


@pytest.mark.fast
def test_a_description_of_a_column_the_table_lacks_is_an_error():
    spec = TABLES["topic_configs"]
    with pytest.raises(ValueError, match="retention_hours"):
        _described(spec, {"retention_hours": "a column topic_configs does not have"})
    described = _described(replace(spec, column_descriptions={}), {"topic": "the topic"})
    assert described.column_descriptions == {"topic": "the topic"} and described == spec


@pytest.mark.fast
def test_unknown_table_names_the_known_ones(lake):
    with pytest.raises(KeyError, match="offset_commit_records"):
        table_spec("no_such_table")
    with pytest.raises(KeyError, match=r"unknown table 'no_such_table'; known tables: .*group_state.*offset_commit_records"):
        lake.read_arrow("no_such_table")


@pytest.mark.fast
def test_a_lake_knows_only_the_model_tables_it_is_handed(tmp_path):
    bare = Lake(tmp_path / "lake")
    assert set(bare.tables) == set(TABLES)
    with pytest.raises(KeyError, match="unknown table 'group_state'"):
        bare.read_arrow("group_state")
    group_state = model_table_specs()["group_state"]
    handed = Lake(tmp_path / "lake", model_tables={"group_state": group_state})
    assert handed.spec("group_state") == group_state and handed.read_arrow("group_state").num_rows == 0
    assert bare.with_model_tables({"group_state": group_state}).spec("group_state") == group_state
    with pytest.raises(KeyError):
        bare.spec("group_state")  # the lake it came from is as it was
    assert handed.with_model_tables({"group_state": group_state}) is handed, "nothing new: the same lake"


@pytest.mark.fast
def test_a_name_that_already_means_another_table_is_an_error(tmp_path, lake):
    other = TableSpec(name="offset_commit_records", layer="silver", schema=pa.schema([("x", pa.int64())]),
                      keys=("x",), description="not the bronze table")
    with pytest.raises(ValueError, match="'offset_commit_records' is already registered"):
        Lake(tmp_path / "other", model_tables={other.name: other})
    changed = replace(lake.spec("group_state"), schema=pa.schema([("x", pa.int64())]))
    with pytest.raises(ValueError, match="'group_state' is already registered"):
        lake.with_model_tables({"group_state": changed})


@pytest.mark.fast
def test_reading_a_table_no_write_created_reads_it_empty_and_creates_nothing(lake):
    for name in DECLARED:
        declared = lake.spec(name).schema
        assert lake.read_arrow(name).schema == declared, name
        assert lake.read_arrow(name, columns=declared.names[:1]).schema == pa.schema([declared.field(0)]), name
        answer = lake.query(f"select * from {name}", name)
        assert answer.num_rows == 0 and answer.column_names == declared.names, name
        assert (lake.count(name), lake.version(name), lake.files(name), lake.files(name, -1)) == (0, -1, [], []), name
        assert not lake.exists(name)
    assert not lake.root.exists(), "reading creates no folder"
    with pytest.raises(MissingTable, match="offsets_topic_checkpoints"):
        lake.table("offsets_topic_checkpoints")
    with pytest.raises(MissingTable, match="group_state, consumer_lag do not exist yet.*run the models"):
        lake.require(["group_state", "consumer_lag"], "run the models")


@pytest.mark.fast
def test_writing_creates_the_table_with_its_declared_schema(lake):
    for name in DECLARED:
        declared = lake.spec(name).schema
        lake.append(name, declared.empty_table())
        assert lake.exists(name) and lake.path(name).is_dir(), name
        assert pa.schema(lake.table(name).schema().to_arrow()) == declared, name
        assert lake.read_arrow(name).num_rows == 0 and lake.version(name) >= 0, name
    lake.require(DECLARED, "nothing: every table exists")


@pytest.mark.fast
def test_append_creates_the_table_and_each_append_is_one_commit(lake):
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0, 1], [5, 7]))
    version = lake.append("offsets_topic_checkpoints", checkpoint_rows("r2", [0], [9]))
    assert version == 2  # create, then one commit per append
    rows = lake.read_arrow("offsets_topic_checkpoints").sort_by("next_offset")
    assert rows["next_offset"].to_pylist() == [5, 7, 9]
    assert rows.schema.field("checkpointed_at").type == pa.timestamp("us", tz="UTC")
    assert DeltaTable(str(lake.path("offsets_topic_checkpoints"))).protocol().reader_features is None


@pytest.mark.fast
def test_merge_upserts_by_the_registered_keys(lake):
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0, 1], [5, 7]))
    rows = checkpoint_rows("r1", [1, 2], [7, 3])
    changed = rows.set_column(rows.schema.get_field_index("record_count"), "record_count",
                              pa.array([40, 1], pa.int64()))
    lake.merge("offsets_topic_checkpoints", changed)
    rows = {(r["source_partition"], r["next_offset"]): r["record_count"]
            for r in lake.read_arrow("offsets_topic_checkpoints").to_pylist()}
    assert rows == {(0, 5): 1, (1, 7): 40, (2, 3): 1}


@pytest.mark.fast
def test_a_lake_sees_what_another_writer_committed_since_it_opened_the_table(lake):
    # the lake keeps tables open between calls; another process's commits must still show
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0], [5]))
    first_files = lake.files("offsets_topic_checkpoints")
    Lake(lake.root).append("offsets_topic_checkpoints", checkpoint_rows("r2", [1], [7]))
    assert lake.version("offsets_topic_checkpoints") == 2
    assert len(lake.files("offsets_topic_checkpoints")) == 2
    assert lake.count("offsets_topic_checkpoints") == 2
    assert lake.files("offsets_topic_checkpoints", 1) == first_files  # an older version, reopened


@pytest.mark.fast
def test_a_lake_merged_into_by_another_writer_reads_the_merged_rows(lake):
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0], [5]))
    assert lake.read_arrow("offsets_topic_checkpoints")["record_count"].to_pylist() == [1]
    rows = checkpoint_rows("r1", [0], [5])
    Lake(lake.root).merge("offsets_topic_checkpoints", rows.set_column(
        rows.schema.get_field_index("record_count"), "record_count", pa.array([40], pa.int64())))
    assert lake.read_arrow("offsets_topic_checkpoints")["record_count"].to_pylist() == [40]


@pytest.mark.fast
def test_a_write_missing_a_column_is_refused_and_writes_nothing(lake):
    bad = checkpoint_rows("r1", [0], [1]).drop_columns(["next_offset"])
    with pytest.raises(ValueError, match="next_offset"):
        lake.append("offsets_topic_checkpoints", bad)
    assert lake.count("offsets_topic_checkpoints") == 0


def test_spark_reads_the_active_files_with_the_registered_schema(lake, spark):
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0, 1], [5, 7]))
    lake.overwrite("offsets_topic_checkpoints", checkpoint_rows("r2", [3], [11]))
    frame = lake.spark_read(spark, "offsets_topic_checkpoints")
    # Overwritten files are still on disk; only the active one may be read.
    assert [(r.source_partition, r.next_offset) for r in frame.collect()] == [(3, 11)]
    assert dict(frame.dtypes)["checkpointed_at"] == "timestamp"
    assert frame.collect()[0].checkpointed_at.replace(tzinfo=timezone.utc) == datetime(
        2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_spark_reads_an_empty_table_with_its_columns(lake, spark):
    frame = lake.spark_read(spark, "offset_commit_records")
    assert frame.count() == 0
    assert frame.columns == TABLES["offset_commit_records"].schema.names
    assert not lake.root.exists(), "a table no write created reads empty and stays uncreated"


def test_a_table_written_before_its_spec_gained_nullable_columns_gains_them(lake, spark):
    # offset_commit_records as lakes held it before the *_out_of_range_ms columns existed
    spec = table_spec("offset_commit_records")
    added = [name for name in spec.schema.names if name.endswith("_out_of_range_ms")]
    assert added == ["source_timestamp_out_of_range_ms", "commit_timestamp_out_of_range_ms",
                     "expire_timestamp_out_of_range_ms"]
    older = pa.schema([field for field in spec.schema if field.name not in added])
    path = str(lake.path("offset_commit_records"))
    DeltaTable.create(path, schema=older)
    old_row = {name: None for name in older.names} | {
        "source_partition": 0, "source_offset": 1, "ingest_run_id": "old", "ingested_at": datetime(2026, 1, 1),
        "commit_timestamp": datetime(2026, 1, 1)}
    write_deltalake(path, pa.Table.from_pylist([old_row], schema=older), mode="append")

    new_row = {**old_row, "source_offset": 2, "ingest_run_id": "new", "commit_timestamp": None,
               "commit_timestamp_out_of_range_ms": -(2**63)}
    lake.append("offset_commit_records", pa.Table.from_pylist([new_row], schema=spec.schema))

    rows = lake.read_arrow("offset_commit_records").sort_by("source_offset").to_pylist()
    assert [(r["ingest_run_id"], r["commit_timestamp_out_of_range_ms"]) for r in rows] == [
        ("old", None), ("new", -(2**63))]
    read_by_spark = lake.spark_read(spark, "offset_commit_records").orderBy("source_offset").collect()
    assert [r["commit_timestamp_out_of_range_ms"] for r in read_by_spark] == [None, -(2**63)]


def test_an_overwrite_replaces_a_schema_an_older_version_wrote(lake, spark):
    # retention_forecast as it was before its group and partition became group_id and
    # partition_id and its lag_messages unread_in_log: an overwrite (every model's full run) must
    # replace the old columns, not refuse the new ones
    spec = lake.spec("retention_forecast")
    older_names = {"group_id": "group", "partition_id": "partition", "unread_in_log": "lag_messages"}
    older = pa.schema([field.with_name(older_names.get(field.name, field.name)) for field in spec.schema])
    path = str(lake.path("retention_forecast"))
    write_deltalake(path, pa.Table.from_pylist([{"group": "g", "topic": "t", "partition": 0, "lag_messages": 5}],
                                               schema=older))
    lake.overwrite("retention_forecast", pa.Table.from_pylist(
        [{"group_id": "g", "topic": "t", "partition_id": 0, "unread_in_log": 7}], schema=spec.schema))
    assert lake.read_arrow("retention_forecast").schema.names == spec.schema.names
    assert [(row["group_id"], row["partition_id"], row["unread_in_log"])
            for row in lake.read_arrow("retention_forecast").to_pylist()] == [("g", 0, 7)]
    assert [row["unread_in_log"] for row in lake.spark_read(spark, "retention_forecast").collect()] == [7]
    assert lake.query("select group_id, partition_id from retention_forecast", "retention_forecast").to_pylist() == [
        {"group_id": "g", "partition_id": 0}]


@pytest.mark.fast
def test_rows_appended_since_a_version_are_found_across_a_prune_but_not_across_another_delete(tmp_path):
    # A prune deletes only rows every reader has read (Lake.spark_delete_pruned, marked in its
    # commit): what was appended since a version is still what the appends added. Any other
    # removal means the table changed under its readers.
    from deltalake import CommitProperties

    from offsets_platform.lake.delta import PRUNE_COMMIT

    lake = Lake(tmp_path)
    first = lake.append("offsets_topic_checkpoints", checkpoint_rows("r1", [0, 1], [5, 7]))
    lake.append("offsets_topic_checkpoints", checkpoint_rows("r2", [0], [9]))
    table = DeltaTable(str(lake.path("offsets_topic_checkpoints")))
    table.delete("ingest_run_id = 'r1' and source_partition = 0",
                 commit_properties=CommitProperties(custom_metadata={"userMetadata": PRUNE_COMMIT}))
    appended_last = lake.append("offsets_topic_checkpoints", checkpoint_rows("r3", [1], [11]))
    appended = lake.appended_files("offsets_topic_checkpoints", first, appended_last)
    assert appended is not None and len(appended) == 2  # r2's and r3's files, not the rewrite of r1's
    assert set(appended) <= set(lake.files("offsets_topic_checkpoints"))

    table.update_incremental()
    table.delete("ingest_run_id = 'r2'")  # not a prune
    assert lake.appended_files("offsets_topic_checkpoints", first, lake.version("offsets_topic_checkpoints")) is None
