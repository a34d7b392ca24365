"""Reading the rows appended to a bronze table since a version: Delta's change data feed beside
the appended Parquet files read as they are, and the whole table for scale.

An incremental model reads the rows its sources gained since its last run (`ModelRunner` gives
`Lake.spark_read_appended` the files `Lake.appended_files` found). This builds a bronze lake of
--history generated records, appends --new more as ingest writes them (one commit per batch),
then, in one local Spark session, times the same aggregate over three reads, alternating who goes
first in each repeat:
- `feed`: Delta's change data feed from the version after the history to the latest (how the
  runner read them before), its inserts;
- `files`: the appended files read as Parquet (`Lake.spark_read_appended` now);
- `whole`: the table at its latest version, history included (a full run's read).
The aggregate is log_offset_state's: the latest record's position per group, topic and partition.
The first repeat is a warm-up; the medians are of the others.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/appended_read_bench.py \
        [--history 3000000] [--new 3000000] [--repeats 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.spark import get_spark
from offsets_platform.models import lake_for_models
from proving_ground.workload.scale_lake import BronzeFeed

TABLE = "offset_commit_records"
AGGREGATE = ("select `group`, topic, `partition`, max(source_offset) as source_offset, "
             "max_by(source_partition, source_offset) as source_partition from appended group by 1, 2, 3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=3_000_000, help="records before the version read from")
    parser.add_argument("--new", type=int, default=3_000_000, help="records appended after it")
    parser.add_argument("--repeats", type=int, default=4, help="rounds of the three reads; the first is a warm-up")
    parser.add_argument("--out", default="benchmarks/results/appended_read_bench.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="appended-read-bench-") as scratch:
        lake = lake_for_models(Path(scratch) / "lake")
        feed = BronzeFeed(lake, args.history + args.new, groups=10_000, topic_partitions=100_000)
        feed.append(args.history, "build")
        before = lake.version(TABLE)
        feed.append(args.new, "new")
        latest = lake.version(TABLE)
        files = lake.appended_files(TABLE, before, latest)
        print(f"{args.new:,} records in {len(files)} files appended after version {before} (now {latest})", flush=True)
        spark = get_spark()
        reads = {
            "feed": lambda: _feed(lake, spark, before, latest),
            "files": lambda: lake.spark_read_appended(spark, TABLE, before, latest, files=files),
            "whole": lambda: lake.spark_read(spark, TABLE, latest),
        }
        seconds: dict[str, list[float]] = {name: [] for name in reads}
        for repeat in range(args.repeats):
            for name in (list(reads) if repeat % 2 == 0 else list(reads)[::-1]):
                reads[name]().createOrReplaceTempView("appended")
                started = time.perf_counter()
                keys = spark.sql(AGGREGATE).count()
                seconds[name].append(time.perf_counter() - started)
                print(f"  repeat {repeat + 1}, {name}: {keys:,} keys in {seconds[name][-1]:.2f} s", flush=True)
        spark.stop()
    medians = {name: statistics.median(times[1:] or times) for name, times in seconds.items()}
    for name, median in medians.items():
        print(f"{name}: median {median:.2f} s, {median / medians['files']:.2f} times the files' read")
    write_results({"history": args.history, "new": args.new, "seconds": seconds, "medians": medians}, Path(args.out))


def _feed(lake, spark, before: int, latest: int):
    """The inserts of Delta's change data feed over the appended versions, as the runner read them before."""
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", before + 1)
               .option("endingVersion", latest).load(str(lake.path(TABLE))))
    return changes.where("_change_type = 'insert'")


if __name__ == "__main__":
    main()
