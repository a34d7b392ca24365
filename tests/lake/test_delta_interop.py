"""delta-rs (the lake's writer, `Lake`) and delta-spark (Spark's, from the jars `make` installs) on
one real table: each reads back what the other wrote, after every kind of write both make.

Ingest writes bronze with delta-rs and the models will write with delta-spark, so every table may
see both. A feature one of them turns on that the other cannot read would only show on the next
read, possibly much later; here every step is read back at once by both and compared with the
rows it should hold.
"""

from __future__ import annotations

import os
import sys
import threading
from functools import partial
from datetime import datetime, timedelta, timezone

import pyarrow as pa
from deltalake import DeltaTable

from offsets_platform.lake import Lake, TableSpec

START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
FIELDS = [
    pa.field("id", pa.int64(), nullable=False),
    pa.field("value", pa.float64()),
    pa.field("at", pa.timestamp("us", tz="UTC")),
]
NEW_COLUMN = pa.field("note", pa.string())  # the schema evolution: a new nullable column


def spec(evolved: bool) -> TableSpec:
    return TableSpec(name="interop", layer="silver", schema=pa.schema(FIELDS + ([NEW_COLUMN] if evolved else [])),
                     keys=("id",), description="both writers' table")


def rows(ids, value: float, evolved: bool) -> pa.Table:
    ids = list(ids)
    columns = {
        "id": pa.array(ids, pa.int64()),
        "value": pa.array([value + i for i in ids], pa.float64()),
        "at": pa.array([START + timedelta(seconds=i) for i in ids], pa.timestamp("us", tz="UTC")),
    }
    if evolved:
        columns["note"] = pa.array([f"n{i}" for i in ids])
    return pa.table(columns, schema=spec(evolved).schema)


def by_id(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


def read_by_delta_rs(path) -> list[dict]:
    return by_id(DeltaTable(str(path)).to_pyarrow_table())


def read_by_delta_spark(spark, path) -> list[dict]:
    return by_id(spark.read.format("delta").load(str(path)).toArrow())


class DeltaRs:
    """The lake's own writes (offsets_platform.lake.Lake, delta-rs), and delta-rs's vacuum."""

    name = "delta-rs"

    def __init__(self, root, path):
        self.root, self.path = root, path

    def _lake(self, evolved: bool) -> Lake:
        # a lake whose spec has the new column adds it to the table before it writes (the lake's
        # schema evolution); a fresh Lake each time, as each run of the platform opens its own
        return Lake(self.root, model_tables={"interop": spec(evolved)})

    def append(self, data, evolved):
        self._lake(evolved).append("interop", data)

    def overwrite(self, data, evolved):
        self._lake(evolved).overwrite("interop", data)

    def merge(self, data, evolved):
        self._lake(evolved).merge("interop", data)

    def compact(self):
        self._lake(True).compact("interop")

    def vacuum(self):
        DeltaTable(str(self.path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)


class DeltaSpark:
    """delta-spark's writes through the project's session: DataFrame writes and Delta SQL."""

    name = "delta-spark"

    def __init__(self, spark, path):
        self.spark, self.path = spark, str(path)

    def _frame(self, data):
        return self.spark.createDataFrame(data)

    def append(self, data, evolved):
        # mergeSchema: Delta's own schema evolution, adding the new column on first sight
        self._frame(data).write.format("delta").mode("append").option("mergeSchema", "true").save(self.path)

    def overwrite(self, data, evolved):
        self._frame(data).write.format("delta").mode("overwrite").save(self.path)

    def merge(self, data, evolved):
        self._frame(data).createOrReplaceTempView("interop_source")
        self.spark.sql(f"""
            MERGE INTO delta.`{self.path}` AS target USING interop_source AS source ON target.id = source.id
            WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")

    def compact(self):
        self.spark.sql(f"OPTIMIZE delta.`{self.path}`")

    def vacuum(self):
        # The test removes every file no longer in the latest version, as delta-rs's vacuum above.
        # VACUUM lists the table's folder in as many Spark tasks as the partition-discovery
        # parallelism says (10,000 by default): 45 s for a table of a few files on two cores.
        settings = {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
                    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2"}
        for key, value in settings.items():
            self.spark.conf.set(key, value)
        try:
            self.spark.sql(f"VACUUM delta.`{self.path}` RETAIN 0 HOURS")
        finally:
            for key in settings:
                self.spark.conf.unset(key)


def assert_both_read(spark, path, expected: dict[int, dict], step: str) -> None:
    want = [expected[key] for key in sorted(expected)]
    assert read_by_delta_rs(path) == want, f"delta-rs after {step}"
    assert read_by_delta_spark(spark, path) == want, f"delta-spark after {step}"
    # The protocol delta-rs created the table with: neither writer turned a feature on (a reader
    # feature delta-rs lacks, such as deletion vectors, makes its reads fail; a writer feature,
    # its writes).
    protocol = DeltaTable(str(path)).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), f"protocol after {step}: {protocol}"
    assert not protocol.reader_features and not protocol.writer_features, f"features after {step}: {protocol}"


def test_each_writer_reads_what_the_other_wrote_after_every_kind_of_write(spark, tmp_path):
    """The writers take turns, so that each makes every kind of write at least once and the other
    reads it back."""
    root = tmp_path / "lake"
    path = root / "silver" / "interop"
    writers = [DeltaRs(root, path), DeltaSpark(spark, path)]
    expected: dict[int, dict] = {}
    evolved = False

    def upsert(data):
        expected.update({row["id"]: row for row in data.to_pylist()})

    def widen():  # rows written before the new column read it as null
        for row in expected.values():
            row.setdefault("note", None)

    # The lake creates its tables (delta-rs, with its table properties); the first write does it.
    DeltaRs(root, path).append(rows(range(0, 5), 0.0, evolved), evolved)
    upsert(rows(range(0, 5), 0.0, evolved))
    steps = [
        ("append", lambda w: (w.append(data := rows(range(10, 20), 1.0, evolved), evolved), upsert(data))),
        ("append", lambda w: (w.append(data := rows(range(20, 25), 2.0, evolved), evolved), upsert(data))),
        ("merge", lambda w: (w.merge(data := rows([*range(3, 13), 30], 3.0, evolved), evolved), upsert(data))),
        ("merge", lambda w: (w.merge(data := rows([0, 24, 31], 4.0, evolved), evolved), upsert(data))),
    ]
    for number, (step, write) in enumerate(steps):
        writer = writers[number % 2]
        write(writer)
        assert_both_read(spark, path, expected, f"{writer.name} {step}")

    # schema evolution: each writer in turn writes rows with the new nullable column
    evolved = True
    for number, writer in enumerate(writers):
        data = rows(range(40 + 10 * number, 45 + 10 * number), 5.0, evolved)
        writer.append(data, evolved)
        widen()
        upsert(data)
        assert_both_read(spark, path, expected, f"{writer.name} append with a new column")
        data = rows([1, 41 + 10 * number], 6.0, evolved)
        writer.merge(data, evolved)
        upsert(data)
        assert_both_read(spark, path, expected, f"{writer.name} merge with the new column")

    for writer in writers:
        writer.compact()
        assert_both_read(spark, path, expected, f"{writer.name} compaction")
        writer.vacuum()
        assert_both_read(spark, path, expected, f"{writer.name} vacuum")

    for number, writer in enumerate(writers):
        data = rows(range(100 + number, 110), 7.0, evolved)
        writer.overwrite(data, evolved)
        expected.clear()
        upsert(data)
        assert_both_read(spark, path, expected, f"{writer.name} overwrite")
        writer.vacuum()
        assert_both_read(spark, path, expected, f"{writer.name} vacuum after an overwrite")

    # The lake's tables checkpoint every 10 commits (lake.delta.TABLE_PROPERTIES); by now both
    # writers have committed past a checkpoint, and each read the log through it.
    assert DeltaTable(str(path)).version() > 10
    assert list((path / "_delta_log").glob("*.checkpoint.parquet"))


def merged(state: list[dict], source: pa.Table) -> list[dict]:
    """MERGE by id, as both writers do it: matching rows replaced, the others inserted."""
    replacements = {row["id"]: row for row in source.to_pylist()}
    kept = [replacements.get(row["id"], row) for row in state]
    present = {row["id"] for row in state}
    return kept + [row for key, row in replacements.items() if key not in present]


def by_id_all(rows_: list[dict]) -> list[dict]:
    return sorted(rows_, key=lambda row: (row["id"], row["value"]))


def is_delta_concurrency_error(error: BaseException) -> bool:
    """Delta's own refusal of a commit that conflicts with one made since the writer read the
    table: delta-rs's CommitFailedError, delta-spark's io.delta.exceptions.Concurrent*."""
    from deltalake.exceptions import CommitFailedError

    text = str(error)
    return isinstance(error, CommitFailedError) or "io.delta.exceptions.Concurrent" in text \
        or "DELTA_CONCURRENT" in text


def race(*writes) -> list[BaseException | None]:
    """Run the writes at the same moment, each in its own thread; what each raised, or None."""
    outcomes: list[BaseException | None] = [None] * len(writes)
    start = threading.Barrier(len(writes))

    def run(number, write):
        start.wait()
        try:
            write()
        except Exception as error:  # judged by the caller: only Delta's concurrency error is clean
            outcomes[number] = error

    threads = [threading.Thread(target=run, args=(number, write)) for number, write in enumerate(writes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return outcomes


def appended(state: list[dict], data: pa.Table) -> list[dict]:
    return state + data.to_pylist()


def test_racing_writers_both_land_or_one_fails_cleanly(spark, tmp_path):
    """delta-rs (the lake) and delta-spark commit to one table at the same moment: an append
    against a MERGE, then the other way round. Each write either lands or fails with
    Delta's concurrency error, and the table then holds exactly what the writes that landed make
    in one order or the other, as both readers see it."""
    root = tmp_path / "lake"
    path = root / "silver" / "interop"
    lake_writer, spark_writer = DeltaRs(root, path), DeltaSpark(spark, path)
    lake_writer.append(rows(range(0, 10), 0.0, False), False)
    state = read_by_delta_rs(path)
    outcomes = []
    # Two rounds: an append against a MERGE either way round. More rounds met the same outcomes
    # (both land, one after the other); the test below makes the conflict certain.
    for round_ in range(2):
        # the lake's rows overlap the ones Spark writes, so the order of the two commits shows
        lake_rows = rows(range(100 * round_ + 5, 100 * round_ + 15), 10.0 * round_ + 1, False)
        spark_rows = rows(range(100 * round_, 100 * round_ + 10), 10.0 * round_ + 2, False)
        if round_ % 2 == 0:
            writes = {"delta-rs": (partial(lake_writer.append, lake_rows, False), partial(appended, data=lake_rows)),
                      "delta-spark": (partial(spark_writer.merge, spark_rows, False), partial(merged, source=spark_rows))}
        else:
            writes = {"delta-rs": (partial(lake_writer.merge, lake_rows, False), partial(merged, source=lake_rows)),
                      "delta-spark": (partial(spark_writer.append, spark_rows, False), partial(appended, data=spark_rows))}
        errors = dict(zip(writes, race(*(write for write, _ in writes.values()))))
        for name, error in errors.items():
            if error is not None and not is_delta_concurrency_error(error):
                raise AssertionError(f"round {round_}: {name} failed, not with Delta's concurrency error: "
                                     f"{type(error).__name__}: {str(error)[:800]}") from error
        landed = [name for name, error in errors.items() if error is None]
        assert landed, f"round {round_}: neither write landed: {errors}"
        outcomes.append(landed)

        apply = {name: effect for name, (_, effect) in writes.items()}
        possible = [by_id_all(apply[landed[0]](state))] if len(landed) == 1 else [
            by_id_all(apply[second](apply[first](state))) for first, second in (landed, landed[::-1])]
        state = by_id_all(read_by_delta_rs(path))
        assert state in possible, f"round {round_}: {landed} landed, but the table holds neither order's rows"
        assert by_id_all(read_by_delta_spark(spark, path)) == state, f"round {round_}: the readers disagree"

    # every version from the first to the last is one whole commit: none lost, none torn
    versions = sorted(int(log.stem) for log in (path / "_delta_log").glob("*.json"))
    assert versions == list(range(versions[-1] + 1))
    print("outcomes by round:", outcomes)


def test_a_lake_commit_between_a_spark_merges_read_and_its_commit_fails_the_merge_cleanly(spark, tmp_path,
                                                                                        monkeypatch):
    """The race above, made certain: the lake's append runs inside the MERGE (a Python UDF on its
    source, evaluated once Spark has read the table), so it commits after Spark's read and before
    Spark's commit. Delta must refuse the MERGE, whose read no longer holds, rather than commit
    rows that ignore the append; the append stays, and both readers agree."""
    from pyspark.sql.functions import udf

    root = tmp_path / "lake"
    path = root / "silver" / "interop"
    DeltaRs(root, path).append(rows(range(0, 10), 0.0, False), False)
    before = read_by_delta_rs(path)
    lake_rows, spark_rows = rows(range(5, 15), 1.0, False), rows(range(0, 10), 2.0, False)
    marker, root_text = str(tmp_path / "appended"), str(root)

    def append_once(key):  # runs in Spark's Python worker, a process of its own
        import os

        from offsets_platform.lake import Lake as WorkerLake
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return key
        WorkerLake(root_text, model_tables={"interop": spec(False)}).append("interop", lake_rows)
        return key

    # The UDF's worker runs `python3` from PATH unless told otherwise; this test's needs the lake.
    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)
    source = spark.createDataFrame(spark_rows).withColumn("id", udf(append_once, "long")("id"))
    with_append = DeltaSpark(spark, path)
    with_append._frame = lambda data: source
    try:
        with_append.merge(spark_rows, False)
    except Exception as error:
        assert is_delta_concurrency_error(error), f"{type(error).__name__}: {str(error)[:800]}"
        merged_too = False
    else:
        merged_too = True
    assert os.path.exists(marker), "the lake's append did not run inside the MERGE"
    after = by_id_all(read_by_delta_rs(path))
    # had the MERGE committed too, it could only have done so after reading the append
    assert after == by_id_all(merged(appended(before, lake_rows), spark_rows) if merged_too
                              else appended(before, lake_rows))
    assert by_id_all(read_by_delta_spark(spark, path)) == after
    assert not merged_too, "Delta committed a MERGE over a read a concurrent commit had made stale"
