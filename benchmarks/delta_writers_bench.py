"""The fixed cost of one Delta operation: Delta's own Spark reader and writer beside delta-rs.

A model refresh commits once per model (overwrite, or a merge for an incremental model) and reads
sources and refs at pinned versions, on tables that are mostly small: the per-operation cost, not
the rows, decides what the models' Delta IO costs. This measures it on one small table (ROWS rows
of two columns), each operation REPEATS times, interleaved round by round so that other work on
the machine weighs on both alike; Spark's session is started and warmed up first (its start is
not counted):

- overwrite: `DataFrame.write.format("delta").mode("overwrite")` / `write_deltalake(mode="overwrite")`
- merge on the key: `MERGE INTO` / `DeltaTable.merge(...)`, every row matched
- read at a pinned version and count: `format("delta").option("versionAsOf", v)` /
  how the runner read before it used delta-spark (the version's active files from delta-rs,
  read as Parquet by Spark)

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/delta_writers_bench.py [--rows 1000] [--repeats 9]

Spark's session is the project's (offsets_platform.lake.spark.get_spark, local mode), with Delta's
snapshot rebuilds in one partition (`spark.databricks.delta.snapshotPartitions=1`: its default of
50 tasks per rebuilt version made each versioned read take seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.spark import get_spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default="benchmarks/results/delta_writers_bench.json")
    args = parser.parse_args()

    spark = get_spark()
    spark.conf.set("spark.databricks.delta.snapshotPartitions", "1")
    rows = pa.table({"id": pa.array(range(args.rows), pa.int64()),
                     "name": pa.array([f"group-{i}" for i in range(args.rows)])})
    frame = spark.createDataFrame(rows.to_pandas()).cache()
    frame.count()
    frame.createOrReplaceTempView("source_rows")
    with tempfile.TemporaryDirectory(prefix="delta-writers-bench-") as scratch:
        by_spark, by_rust = str(Path(scratch) / "spark"), str(Path(scratch) / "rust")
        frame.write.format("delta").save(by_spark)
        write_deltalake(by_rust, rows)

        def spark_versioned_read(round_: int) -> None:
            spark.read.format("delta").option("versionAsOf", round_ % 3).load(by_spark).count()

        def runner_versioned_read(round_: int) -> None:
            files = DeltaTable(by_rust, version=round_ % 3).file_uris()
            spark.read.parquet(*files).count()

        operations = {
            "overwrite": {
                "delta-spark": lambda _: frame.write.format("delta").mode("overwrite").save(by_spark),
                "delta-rs": lambda _: write_deltalake(by_rust, rows, mode="overwrite"),
            },
            "merge": {
                "delta-spark": lambda _: spark.sql(
                    f"MERGE INTO delta.`{by_spark}` AS t USING source_rows AS s ON t.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
                "delta-rs": lambda _: (DeltaTable(by_rust).merge(rows, "t.id = s.id", source_alias="s", target_alias="t")
                                       .when_matched_update_all().when_not_matched_insert_all().execute()),
            },
            "read a pinned version": {
                "delta-spark": spark_versioned_read,
                "delta-rs": runner_versioned_read,
            },
        }
        for kinds in operations.values():  # warm-up: Spark compiles each kind of plan once
            for run in kinds.values():
                run(0)
        seconds: dict[str, dict[str, list[float]]] = {op: {writer: [] for writer in kinds}
                                                      for op, kinds in operations.items()}
        for round_ in range(args.repeats):
            for op, kinds in operations.items():
                for writer, run in (kinds.items() if round_ % 2 == 0 else reversed(kinds.items())):
                    started = time.perf_counter()
                    run(round_)
                    seconds[op][writer].append(time.perf_counter() - started)
    spark.stop()

    results = {"rows": args.rows, "repeats": args.repeats, "cpus": os.cpu_count(),
               "load_1min": os.getloadavg()[0], "seconds": seconds,
               "median_ms": {op: {writer: statistics.median(values) * 1000 for writer, values in kinds.items()}
                             for op, kinds in seconds.items()}}
    print(f"| median of {args.repeats}, {args.rows:,} rows | delta-spark | delta-rs (reads: its file list, "
          "Spark reads the Parquet) | ratio |")
    print("|---|---:|---:|---:|")
    for op, medians in results["median_ms"].items():
        print(f"| {op} | {medians['delta-spark']:,.0f} ms | {medians['delta-rs']:,.0f} ms | "
              f"{medians['delta-spark'] / medians['delta-rs']:,.1f}x |")
    print(f"load average (1 min) at the end: {results['load_1min']:.1f} on {results['cpus']} CPUs")
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
