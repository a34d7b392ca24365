"""An incremental model's result written by Delta's MERGE INTO beside a rewrite of its table.

Builds a lake of the generator's history (10,000 groups on 100,000 partitions by default),
refreshes every model in full, then appends a batch of new records. Each measured run starts from
a fresh copy of that lake and runs one incremental model alone (`ModelRunner.run_all(select=...)`)
with its `incremental_strategy` set to `merge` or `rewrite`; the two alternate, which goes first
changing each round, in one local Spark session after one warm-up run of each. The runner is told
never to run the model full for its share of new rows (`full_run_new_share` above 1), so that a
batch as large as the history (a busy cluster's 15 minutes) is merged as a steady state merges it.
After the runs, the two strategies' tables are compared row by row.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/write_strategy_bench.py \\
        [--records 3000000] [--new-records 3000000] [--repeats 2] \\
        [--models log_observations,log_offset_state]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.spark import get_spark
from offsets_platform.models import ModelRunner, default_project, lake_for_models
from proving_ground.workload.scale_lake import BronzeFeed, add_snapshots

STRATEGIES = ("merge", "rewrite")


def build(root: Path, records: int, new_records: int, groups: int, topic_partitions: int, spark) -> None:
    """A lake refreshed in full after `records` records, with `new_records` more appended since."""
    lake = lake_for_models(root)
    feed = BronzeFeed(lake, total=records + new_records, groups=groups, topic_partitions=topic_partitions)
    feed.append(records, "build")
    add_snapshots(lake)
    started = time.perf_counter()
    ModelRunner(spark, lake, emit=lambda line: None).run_all()
    print(f"full refresh of {records:,} records: {time.perf_counter() - started:.1f} s", flush=True)
    feed.append(new_records, "new")


def one_run(spark, base: Path, into: Path, model: str, strategy: str) -> dict:
    """The model's incremental run on a fresh copy of the lake in `into`, a folder not used before
    (the session caches each Delta table's state by its path), written the given way."""
    shutil.copytree(base, into)
    project = default_project()
    project = replace(project, models=[replace(m, incremental_strategy=strategy) if m.name == model else m
                                       for m in project.models])
    runner = ModelRunner(spark, lake_for_models(into, project), project=project, emit=lambda line: None,
                         full_run_new_share=2.0)
    run = runner.run_all(select=[model])[0]
    if run.mode != "incremental":
        raise SystemExit(f"{model} ran {run.mode}, not incrementally: the comparison would mean nothing")
    return {"seconds": run.seconds, "rows_written": run.rows_written, "rows_in_table": run.rows_in_table}


def same_table(spark, left: Path, right: Path, table: str) -> bool:
    a, b = (lake_for_models(root).spark_read(spark, table) for root in (left, right))
    return a.count() == b.count() and a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--new-records", type=int, default=3_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--topic-partitions", type=int, default=100_000)
    parser.add_argument("--models", default="log_observations,log_offset_state")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "write_strategy.json")
    args = parser.parse_args()

    spark = get_spark()
    results: dict = {"records": args.records, "new_records": args.new_records, "models": {}}
    with tempfile.TemporaryDirectory(prefix="write-strategy-") as scratch:
        base = Path(scratch) / "base"
        build(base, args.records, args.new_records, args.groups, args.topic_partitions, spark)
        for model in args.models.split(","):
            runs: dict[str, list[dict]] = {strategy: [] for strategy in STRATEGIES}
            lakes = {strategy: Path(scratch) / f"{model}-{strategy}-warm-up" for strategy in STRATEGIES}
            for strategy in STRATEGIES:  # warm-up, not counted
                one_run(spark, base, lakes[strategy], model, strategy)
            for repeat in range(args.repeats):
                order = STRATEGIES if repeat % 2 == 0 else tuple(reversed(STRATEGIES))
                for strategy in order:
                    lakes[strategy] = Path(scratch) / f"{model}-{strategy}-{repeat + 1}"
                    runs[strategy].append(one_run(spark, base, lakes[strategy], model, strategy))
                    print(f"{model}, {strategy}: {runs[strategy][-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
            medians = {strategy: statistics.median(run["seconds"] for run in runs[strategy]) for strategy in STRATEGIES}
            equal = same_table(spark, lakes["merge"], lakes["rewrite"], model)
            results["models"][model] = {"runs": runs, "median_s": medians, "equal_tables": equal}
            print(f"{model}: merge {medians['merge']:.1f} s, rewrite {medians['rewrite']:.1f} s "
                  f"(ratio {medians['rewrite'] / medians['merge']:.2f}), tables equal: {equal}", flush=True)
    spark.stop()
    write_results(results, args.out)


if __name__ == "__main__":
    main()
