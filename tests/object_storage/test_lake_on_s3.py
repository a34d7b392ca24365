"""The lake on a real S3-compatible server (SeaweedFS) on loopback: delta-rs writing and reading
there, and Spark reading through s3a (offsets_platform/jars/s3.pom.xml)."""

from __future__ import annotations

import pyarrow as pa

from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TableSpec
from tests.lake.test_delta import checkpoint_rows

POINTS = TableSpec(
    name="points", layer="silver", keys=("id",), description="a table of the tests",
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("label", pa.string())]),
)


def test_delta_rs_writes_and_reads_a_table_on_s3_and_spark_reads_it_through_s3a(s3_lake, spark):
    lake = s3_lake.with_model_tables({"points": POINTS})
    assert not lake.is_present() and not lake.exists("points")
    assert lake.read_arrow("points").num_rows == 0  # reading creates nothing
    assert not lake.is_present()

    lake.append("points", pa.table({"id": [1, 2], "label": ["a", "b"]}))
    lake.merge("points", pa.table({"id": [2, 3], "label": ["B", "c"]}))
    assert lake.is_present() and lake.version("points") == 2
    assert str(lake.path("points")).startswith("s3://lake/") and all(
        uri.startswith(str(lake.path("points"))) for uri in lake.files("points"))

    expected = [(1, "a"), (2, "B"), (3, "c")]
    assert sorted(zip(*lake.read_arrow("points").to_pydict().values())) == expected
    assert lake.count("points") == 3
    assert sorted(tuple(row) for row in lake.spark_read(spark, "points").collect()) == expected
    # a new Lake on the same URI (another process) sees the same table
    assert Lake(lake.root, {"points": POINTS}, leases=lake.leases).read_arrow("points").num_rows == 3


def test_two_writers_of_one_version_both_land(s3_lake):
    """delta-rs commits a version with a conditional PUT (If-None-Match); the server refuses the
    second writer's, which then commits the next version: no append is lost."""
    first = s3_lake.with_model_tables({"points": POINTS})
    first.append("points", pa.table({"id": [0], "label": ["created"]}))
    second = Lake(first.root, {"points": POINTS}, leases=first.leases)
    start = first.version("points")
    assert second.version("points") == start  # both opened at the same version
    first.append("points", pa.table({"id": [1], "label": ["first"]}))
    second.append("points", pa.table({"id": [2], "label": ["second"]}))
    assert sorted(second.read_arrow("points").column("id").to_pylist()) == [0, 1, 2]
    assert Lake(first.root, {"points": POINTS}, leases=first.leases).version("points") == start + 2


def test_spark_reads_the_rows_appended_since_a_version_from_their_files_on_s3(s3_lake, spark):
    # what an incremental model reads of a large source: the appended files, by Spark through s3a
    before = s3_lake.append("offsets_topic_checkpoints", checkpoint_rows("r", [0], [1]))
    s3_lake.append("offsets_topic_checkpoints", checkpoint_rows("r", [1], [1]))
    after = s3_lake.append("offsets_topic_checkpoints", checkpoint_rows("r", [2], [1]))
    files = s3_lake.appended_files("offsets_topic_checkpoints", before, after)
    assert len(files) == 2
    appended = s3_lake.spark_read_appended(spark, "offsets_topic_checkpoints", before, after, files=files)
    assert sorted(row.source_partition for row in appended.collect()) == [1, 2]
