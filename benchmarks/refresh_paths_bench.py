"""A full model refresh with small tables handed to Spark via Arrow, beside one through delta-spark alone.

The runner reads a table version of at most `ARROW_MAX_BYTES` of data files with delta-rs and
hands its rows to Spark, and writes the result of a model whose inputs all came that way with
delta-rs (offsets_platform/models/runner.py). `arrow_max_bytes=-1` sends every read and write
through delta-spark instead. This times a full refresh of all models both ways on one generated
lake per size (`proving_ground.workload.scale_lake`: the generator's history written to bronze as
ingest writes it, and two snapshots), in one Spark session started and warmed up first (its start
is not counted). The two ways alternate, REPEATS times each, so that other work on the machine
weighs on both alike; each refresh writes a fresh copy of the lake's model tables.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/refresh_paths_bench.py [--records 2000 300000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.spark import get_spark
from offsets_platform.models import ModelRunner, default_project, lake_for_models
from offsets_platform.models.runner import ARROW_MAX_BYTES, RUNS_TABLE
from proving_ground.workload.scale_lake import BronzeFeed, add_snapshots

PATHS = {"via Arrow": ARROW_MAX_BYTES, "delta-spark alone": -1}


def generated_lake(bronze: Path, records: int) -> None:
    """A bronze lake at `bronze` of `records` generated records, shaped by their number (a group
    per 300 records, a topic partition per 30), and two snapshots."""
    lake = lake_for_models(bronze)
    BronzeFeed(lake, records, groups=max(10, records // 300), topic_partitions=max(100, records // 30)
               ).append(records, "build")
    add_snapshots(lake)


def refresh(spark, bronze: Path, arrow_max_bytes: int) -> float:
    """One full refresh on a copy of the bronze lake (no model table yet); seconds."""
    with tempfile.TemporaryDirectory(prefix="refresh-paths-") as folder:
        root = Path(folder) / "lake"
        shutil.copytree(bronze, root)
        runner = ModelRunner(spark, lake_for_models(root), emit=lambda line: None, arrow_max_bytes=arrow_max_bytes)
        started = time.perf_counter()
        runner.run_all(full_refresh=True)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[2_000, 300_000],
                        help="bronze records of each lake (the report's scale test uses 300,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/refresh_paths_bench.json")
    args = parser.parse_args()
    spark = get_spark()
    results = {"arrow_max_bytes": ARROW_MAX_BYTES, "models": len(default_project().models), "lakes": {}}
    with tempfile.TemporaryDirectory(prefix="refresh-paths-bronze-") as folder:
        for records in args.records:
            bronze = Path(folder) / f"lake-{records}"
            generated_lake(bronze, records)
            assert not lake_for_models(bronze).exists(RUNS_TABLE)
            refresh(spark, bronze, ARROW_MAX_BYTES)  # warm-up: Spark compiles the models' code once
            seconds: dict[str, list[float]] = {path: [] for path in PATHS}
            for repeat in range(args.repeats):
                order = list(PATHS) if repeat % 2 == 0 else list(reversed(PATHS))
                for path in order:
                    seconds[path].append(refresh(spark, bronze, PATHS[path]))
                    print(f"{records:,} records, {path}: {seconds[path][-1]:.1f} s", flush=True)
            medians = {path: statistics.median(values) for path, values in seconds.items()}
            results["lakes"][records] = {"seconds": seconds, "medians": medians,
                                         "ratio": medians["delta-spark alone"] / medians["via Arrow"]}
            print(f"{records:,} records: median via Arrow {medians['via Arrow']:.1f} s, delta-spark alone "
                  f"{medians['delta-spark alone']:.1f} s ({results['lakes'][records]['ratio']:.2f} times)", flush=True)
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
