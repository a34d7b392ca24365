"""Every model's full refresh on a lake, and on the same lake after a prune of its snapshots.

Builds (or reuses, in --lakes) the lake snapshot_history_bench builds: --records generated records and
--snapshots snapshots, shaped by --snapshot-every-minutes and --retained-snapshots
(`scale_lake.add_snapshots`). Copies it, refreshes every model on the copy and prunes the copy's log
offset snapshots, then its committed offset snapshots, then its group, member, topic config and
error snapshots, at horizon 0 (`prune_log_offset_snapshots`, `prune_committed_offset_snapshots`,
`prune_group_and_config_snapshots`: as of the latest snapshot), each table timed, in this process.
Then R times (--repeats), the two lakes alternating which goes first: a fresh process
copies the lake to a new folder and runs a full refresh of every model, one model at a time, and
prints each model's seconds and a digest of each model table's rows. Prints the rows each prune
removed and kept, the losses of unconsumed_messages the first settled, each model's median seconds on both
lakes, and whether every table has the same rows on both (it must: the prune removes only rows no
model can read again).

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/snapshot_pruning_bench.py --snapshots 32 \\
        --snapshot-every-minutes 360 --retained-snapshots 8 [--repeats 2] [--lakes FOLDER]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from model_variants_bench import open_lake

from offsets_platform.lake import Lake
from offsets_platform.models.pruning import latest_complete_snapshot

LAKES = ("whole", "pruned")


def child(lake_source: str, into: str, as_of: str) -> None:
    """One full refresh of every model on a copy of the lake: each model's seconds and a digest of
    its table's rows, as JSON on stdout."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the JVM's and the runner's output goes to stderr
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models
    from proving_ground.lake_checks import comparable_rows

    shutil.copytree(lake_source, into)
    lake = lake_for_models(into)
    runs = ModelRunner(get_spark(), lake, variables={"as_of": as_of}, workers=1,
                       emit=lambda line: None).run_all(full_refresh=True)
    digests = {run.model: hashlib.sha256(repr(comparable_rows(run.model, lake.read_arrow(run.model))).encode())
               .hexdigest() for run in runs}
    answers.write(json.dumps({"seconds": {run.model: run.seconds for run in runs}, "digests": digests}) + "\n")
    answers.close()


def one_refresh(lake: Path, scratch: Path, as_of: str) -> dict:
    into = Path(tempfile.mkdtemp(dir=scratch)) / "lake"
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(lake), str(into), as_of],
                              stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(into.parent, ignore_errors=True)


def pruned_copy(lake: Path, into: Path, as_of: str) -> dict:
    """A copy of the lake, refreshed and then pruned of the snapshot rows no model can read again;
    what each prune did, by table."""
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models
    from offsets_platform.models.committed_snapshot_pruning import prune_committed_offset_snapshots
    from offsets_platform.models.group_and_config_snapshot_pruning import prune_group_and_config_snapshots
    from offsets_platform.models.snapshot_pruning import prune_log_offset_snapshots

    shutil.copytree(lake, into)
    copy = lake_for_models(into)
    spark = get_spark()
    ModelRunner(spark, copy, variables={"as_of": as_of}, emit=lambda line: None).run_all()
    prune = {"horizon": timedelta(0), "now": latest_complete_snapshot(copy),
             "emit": lambda line: print(line, file=sys.stderr, flush=True)}
    results = {"log_offset_snapshots": prune_log_offset_snapshots(spark, copy, **prune),
               "committed_offset_snapshots": prune_committed_offset_snapshots(spark, copy, **prune),
               **prune_group_and_config_snapshots(spark, copy, **prune)}
    return {table: {"seconds": result.seconds, "rows_before": result.rows_before, "removed": result.removed,
                    "kept": result.kept, "rows_after": copy.count(table), "losses_settled": result.losses_settled,
                    "settled_through": result.settled_through.isoformat() if result.settled_through else None}
            for table, result in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=32)
    parser.add_argument("--snapshot-every-minutes", type=int, default=360)
    parser.add_argument("--retained-snapshots", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--topic-partitions", type=int, default=20_000)
    parser.add_argument("--lakes", help="a folder for the lake, kept for the next run (default: a temporary one)")
    parser.add_argument("--out", default="benchmarks/results/snapshot_pruning_bench.json")
    parser.add_argument("--child", nargs=3, metavar=("LAKE", "INTO", "AS_OF"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    results: dict = {"repeats": args.repeats, "cpus": os.cpu_count(),
                     "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "runs": {lake: {} for lake in LAKES}, "digests": {lake: [] for lake in LAKES}}
    with tempfile.TemporaryDirectory(prefix="snapshot-pruning-bench-") as scratch:
        scratch = Path(scratch)
        lakes_root = Path(args.lakes).absolute() if args.lakes else scratch / "lakes"
        name = f"snapshots-{args.snapshots}-every-{args.snapshot_every_minutes}m-retained-{args.retained_snapshots}"
        _, _, results["lake"] = open_lake(lakes_root / name, args.records, 0, args.snapshots,
                                          {"groups": args.groups, "topic_partitions": args.topic_partitions},
                                          {"every": timedelta(minutes=args.snapshot_every_minutes),
                                           "retained": args.retained_snapshots})
        paths = {"whole": lakes_root / name, "pruned": scratch / "pruned"}
        # every refresh as of the latest snapshot: the tables are then the same whenever a run takes place
        as_of = f"{latest_complete_snapshot(Lake(paths['whole'])):%Y-%m-%d %H:%M:%S.%f}"
        print("refreshing a copy of the lake and pruning its snapshots", file=sys.stderr, flush=True)
        results["prune"] = pruned_copy(paths["whole"], paths["pruned"], as_of)
        for repeat in range(args.repeats):
            for lake in LAKES if repeat % 2 == 0 else LAKES[::-1]:
                print(f"repeat {repeat + 1}/{args.repeats}, {lake} lake: full refresh of every model, one at a time",
                      file=sys.stderr, flush=True)
                outcome = one_refresh(paths[lake], scratch, as_of)
                for model, value in outcome["seconds"].items():
                    results["runs"][lake].setdefault(model, []).append(value)
                results["digests"][lake].append(outcome["digests"])
    print(report(results))
    write_results(results, Path(args.out))


def report(results: dict) -> str:
    lines = []
    for table, prune in results["prune"].items():
        kept = ", ".join(f"{count:,} {reason}" for reason, count in sorted(prune["kept"].items()))
        lines.append(f"prune of {table}: {prune['removed']:,} of {prune['rows_before']:,} rows removed in "
                     f"{prune['seconds']:.1f} s ({prune['rows_after']:,} left); kept of the older ones: {kept or 'none'}"
                     + (f"; {prune['losses_settled']:,} losses of unconsumed_messages settled, the moves seen through "
                        f"{prune['settled_through']}" if prune.get("settled_through") else ""))
    lines += ["same rows in every model table on both lakes: " +
              str(all(digests == results["digests"]["whole"][0]
                      for lake in LAKES for digests in results["digests"][lake])), ""]
    medians = {lake: {model: statistics.median(seconds) for model, seconds in runs.items()}
               for lake, runs in results["runs"].items()}
    lines += [f"| model, median of {results['repeats']} | whole | pruned | pruned / whole |", "|---|---:|---:|---:|"]
    for model in medians["whole"]:
        whole, pruned = medians["whole"][model], medians["pruned"][model]
        lines.append(f"| `{model}` | {whole:.1f} s | {pruned:.1f} s | {pruned / whole:.2f} |")
    totals = [sum(medians[lake].values()) for lake in LAKES]
    lines.append(f"| every model | {totals[0]:.1f} s | {totals[1]:.1f} s | {totals[1] / totals[0]:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
