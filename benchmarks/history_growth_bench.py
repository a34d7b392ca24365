"""Does a refresh cost what its new data costs, or what the history costs? The same incremental
refresh timed before and after the history doubled.

Builds a lake of N generated records (`scale_lake`) and S admin-API snapshots 15 minutes apart,
refreshes every model in full, then:
  1. R times: M more records and the next scheduled snapshot, then an incremental refresh ("before");
  2. the history doubles: N more records and S more snapshots, each snapshot after its share of
     the records as a schedule takes them, then one refresh (not timed) that reads them;
  3. R times, as in 1 ("after").
Each refresh runs every model in a fresh process on a local Spark (`models_bench.measure`), so
JVM start-up counts as it does for a scheduled refresh. The figure that matters is after / before
of the medians: 1.0 when the cost follows the new data only.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/history_growth_bench.py \
        [--records 1000000] [--snapshots 16] [--new-records 100000] [--repeats 3] \
        [--groups 2000] [--topic-partitions 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from models_bench import CURRENT, REPO, Tree, measure, medians
from offsets_platform.lake import Lake
from proving_ground.workload.scale_lake import BronzeFeed, add_next_snapshot, add_snapshots

TARGET_RATIO = 1.2  # the target: after the history doubled, at most 1.2 times the cost before
KEYS = ("wall_s", "models_s", "cpu_s", "peak_mb")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def incremental_refreshes(tree: Tree, lake: Lake, feed: BronzeFeed, new_records: int, repeats: int,
                          label: str) -> list[dict]:
    """`repeats` times: the next `new_records` records and the next snapshot, then a refresh."""
    runs = []
    for repeat in range(repeats):
        feed.append(new_records, f"{label}-{repeat}")
        add_next_snapshot(lake)
        say(f"{label}: appended {new_records:,} records and a snapshot, incremental refresh {repeat + 1}/{repeats}")
        runs.append(measure(tree, lake.root, "incremental"))
        say(f"  {runs[-1]['wall_s']:.1f} s wall, {runs[-1]['models_s']:.1f} s models")
    return runs


def grow(lake: Lake, feed: BronzeFeed, records: int, snapshots: int) -> None:
    """`records` more records and `snapshots` more snapshots, each after its share of the records."""
    share = records // snapshots
    for index in range(snapshots):
        feed.append(share if index < snapshots - 1 else records - share * (snapshots - 1), f"grow-{index}")
        add_next_snapshot(lake)
    say(f"history grown by {records:,} records and {snapshots} snapshots")


def slowest_models(median: dict, count: int = 6) -> dict[str, float]:
    """The `count` models of the longest median time, from `medians(...)`."""
    seconds = {name: round(model["seconds"], 1) for name, model in median["models"].items()}
    return dict(sorted(seconds.items(), key=lambda item: -item[1])[:count])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records in bronze before the refreshes")
    parser.add_argument("--snapshots", type=int, default=16, help="snapshots before the refreshes (at least 2)")
    parser.add_argument("--new-records", type=int, default=100_000, help="records before each timed refresh")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2_000, help="groups alive at once in the generated history")
    parser.add_argument("--topic-partitions", type=int, default=20_000,
                        help="partitions of the topics the generated groups read")
    parser.add_argument("--out", default="benchmarks/results/history_growth_bench.json")
    args = parser.parse_args()

    tree = Tree(CURRENT, REPO)
    results: dict = {key: getattr(args, key) for key in ("records", "snapshots", "new_records", "repeats", "groups",
                                                         "topic_partitions")}
    results.update(cpus=os.cpu_count(), at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    with tempfile.TemporaryDirectory(prefix="history-growth-bench-") as scratch:
        lake = Lake(Path(scratch) / "lake")
        feed = BronzeFeed(lake, 2 * args.records + 2 * args.repeats * args.new_records, args.groups,
                          args.topic_partitions)
        started = time.perf_counter()
        feed.append(args.records, "build")
        add_snapshots(lake, args.snapshots)
        say(f"lake built in {time.perf_counter() - started:.0f} s; full refresh")
        results["full_refresh"] = measure(tree, lake.root, "full")
        before = incremental_refreshes(tree, lake, feed, args.new_records, args.repeats, "before")
        grow(lake, feed, args.records, args.snapshots)
        results["refresh_after_growth"] = measure(tree, lake.root, "incremental")
        say(f"refresh that read the grown history: {results['refresh_after_growth']['wall_s']:.1f} s")
        after = incremental_refreshes(tree, lake, feed, args.new_records, args.repeats, "after")
    results["before"], results["after"] = {"runs": before, "median": medians(before)}, \
        {"runs": after, "median": medians(after)}
    ratios = {key: results["after"]["median"][key] / results["before"]["median"][key] for key in KEYS}
    results["ratios"] = ratios
    print(f"\n| median of {args.repeats}, +{args.new_records:,} records and a snapshot | history "
          f"{args.records:,} records, {args.snapshots + args.repeats} snapshots | history doubled | after / before |")
    print("|---|---:|---:|---:|")
    labels = {"wall_s": "process wall time", "models_s": "all models (run_all)", "cpu_s": "CPU, Python + JVM",
              "peak_mb": "peak RSS"}
    for key in KEYS:
        unit = " MB" if key == "peak_mb" else " s"
        print(f"| {labels[key]} | {results['before']['median'][key]:,.1f}{unit} | "
              f"{results['after']['median'][key]:,.1f}{unit} | {ratios[key]:.2f} |")
    print("\nslowest models, median seconds: before", slowest_models(results["before"]["median"]),
          "\n  after", slowest_models(results["after"]["median"]))
    met = ratios["models_s"] <= TARGET_RATIO
    print(f"target: the models' time after the history doubled at most {TARGET_RATIO} times the time before: "
          f"{'met' if met else 'NOT met'} ({ratios['models_s']:.2f})")
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
