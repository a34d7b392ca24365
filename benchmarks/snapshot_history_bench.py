"""Every model's full refresh under two versions of the project, on lakes of few and many snapshots.

A scheduled deployment takes an admin-API snapshot every 15 minutes, and the snapshot-driven
models read all of them; this shows how each model's cost grows with the snapshots the lake holds,
and what a change to the SQL does to it.

Builds one lake per snapshot count (--snapshots 2,32) in --lakes (reused when there already), each
with the same generated history (`model_variants_bench.open_lake`: --records records of --groups
groups on --topic-partitions partitions) and that many snapshots (`scale_lake.add_snapshots`: 15
minutes apart past two; --snapshot-every-minutes and --retained-snapshots shape them as a real
cluster's long history, whose retention deleted what the older snapshots saw). Extracts the `dbt_like_sql/` folder of two commits (--before, --after).
Then, R times (--repeats), for each lake and each project, the two projects alternating which goes
first: a fresh process copies the lake to a new folder (the runner records its runs in the lake,
and a Spark session caches each Delta table's state by its path) and runs a full refresh of every
model, one model at a time (`ModelRunner(workers=1).run_all(full_refresh=True)`), so that no model's
seconds include waiting for another's. Prints each model's median seconds per lake and project,
and after / before; a model that exists in one project only shows a dash in the other.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/snapshot_history_bench.py --before REV \\
        [--after HEAD] [--snapshots 2,32] [--repeats 2] [--records 1000000] [--groups 2000] \\
        [--topic-partitions 20000] [--snapshot-every-minutes M] [--retained-snapshots N] [--lakes FOLDER]
"""

from __future__ import annotations

import argparse
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
from model_variants_bench import LABELS, extract_project, open_lake


def child(project_dir: str, lake_source: str, into: str) -> None:
    """One full refresh of every model on a copy of the lake; each model's seconds as JSON on stdout."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the JVM's and the runner's output goes to stderr
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models, load_project

    shutil.copytree(lake_source, into)
    project = load_project(project_dir)
    runner = ModelRunner(get_spark(), lake_for_models(into, project), project=project, workers=1,
                         emit=lambda line: None)
    answers.write(json.dumps({run.model: run.seconds for run in runner.run_all(full_refresh=True)}) + "\n")
    answers.close()


def one_refresh(project_dir: Path, lake: Path, scratch: Path) -> dict[str, float]:
    into = Path(tempfile.mkdtemp(dir=scratch)) / "lake"
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(project_dir), str(lake), str(into)],
                              stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(into.parent, ignore_errors=True)


def table(results: dict, snapshots: int) -> str:
    commits = {label: results["projects"][label]["commit"][:7] for label in LABELS}
    medians = {label: {model: statistics.median(seconds) for model, seconds in runs.items()}
               for label, runs in results["runs"][str(snapshots)].items()}
    models = list(dict.fromkeys([*medians["before"], *medians["after"]]))
    lines = [f"| {snapshots} snapshots, median of {results['repeats']} | before ({commits['before']}) | "
             f"after ({commits['after']}) | after / before |", "|---|---:|---:|---:|"]
    for model in models:
        before, after = medians["before"].get(model), medians["after"].get(model)
        shown = [f"{value:.1f} s" if value is not None else "-" for value in (before, after)]
        change = f"{after / before:.2f}" if before and after else "-"
        lines.append(f"| `{model}` | {shown[0]} | {shown[1]} | {change} |")
    totals = [sum(medians[label].values()) for label in LABELS]
    lines.append(f"| every model | {totals[0]:.1f} s | {totals[1]:.1f} s | {totals[1] / totals[0]:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="commit of the first project (required)")
    parser.add_argument("--after", default="HEAD", help="commit of the second project")
    parser.add_argument("--snapshots", default="2,32", help="snapshot counts, one lake each")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--topic-partitions", type=int, default=20_000)
    parser.add_argument("--snapshot-every-minutes", type=int, help="the snapshots' spacing (default: 15 minutes)")
    parser.add_argument("--retained-snapshots", type=int,
                        help="the log grows through the snapshots and retention keeps this many snapshots' worth of it "
                             "(scale_lake.add_snapshots)")
    parser.add_argument("--lakes", help="a folder for the lakes, kept for the next run (default: a temporary one)")
    parser.add_argument("--out", default="benchmarks/results/snapshot_history_bench.json")
    parser.add_argument("--child", nargs=3, metavar=("PROJECT", "LAKE", "INTO"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if not args.before:
        parser.error("--before is required: the commit to compare with")

    counts = [int(count) for count in args.snapshots.split(",")]
    results: dict = {"repeats": args.repeats, "cpus": os.cpu_count(), "projects": {}, "lakes": {},
                     "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "runs": {str(count): {label: {} for label in LABELS} for count in counts}}
    with tempfile.TemporaryDirectory(prefix="snapshot-history-bench-") as scratch:
        scratch = Path(scratch)
        lakes_root = Path(args.lakes).absolute() if args.lakes else scratch / "lakes"
        shape = {"groups": args.groups, "topic_partitions": args.topic_partitions}
        snapshot_shape = {}
        lake_name = "snapshots-{}"
        if args.snapshot_every_minutes:
            snapshot_shape["every"] = timedelta(minutes=args.snapshot_every_minutes)
            lake_name += f"-every-{args.snapshot_every_minutes}m"
        if args.retained_snapshots:
            snapshot_shape["retained"] = args.retained_snapshots
            lake_name += f"-retained-{args.retained_snapshots}"
        results["snapshot_shape"] = {key: str(value) for key, value in snapshot_shape.items()}
        for count in counts:
            _, _, results["lakes"][str(count)] = open_lake(lakes_root / lake_name.format(count), args.records, 0,
                                                           count, shape, snapshot_shape)
        projects = {}
        for label, rev in zip(LABELS, (args.before, args.after)):
            commit, projects[label] = extract_project(rev, scratch / label)
            results["projects"][label] = {"rev": rev, "commit": commit}
        for repeat in range(args.repeats):
            for count in counts:
                for label in LABELS if repeat % 2 == 0 else LABELS[::-1]:
                    print(f"repeat {repeat + 1}/{args.repeats}, {count} snapshots, {label}: full refresh of every "
                          "model, one at a time", file=sys.stderr, flush=True)
                    seconds = one_refresh(projects[label], lakes_root / lake_name.format(count), scratch)
                    for model, value in seconds.items():
                        results["runs"][str(count)][label].setdefault(model, []).append(value)
                    print(f"  {sum(seconds.values()):.1f} s over {len(seconds)} models", file=sys.stderr, flush=True)
    for count in counts:
        print()
        print(table(results, count))
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
