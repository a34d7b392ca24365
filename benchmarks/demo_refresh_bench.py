"""The demo's Dagster refresh job, two versions side by side: through a warm Spark Connect server, as
`make ui`'s runs reach theirs, or with a Spark of its own, as `make demo` runs it.

Runs the demo (`python -m proving_ground.demo`) of this checkout and, with --against REV, of the
project as it was at commit REV (extracted with `git archive`), WARM_UP times each, then REPEATS
times more, the versions alternating which goes first so that other work on the machine weighs on
both alike. Each demo prints the Dagster `refresh` job's wall time ("final cycle ... refresh job
done in X s": snapshot, ingest, the bronze checks, every model with its checks, a cleanup plan and
the report). With `--spark connect` (the default) each version gets an `offsets-platform
spark-server` of its own code, which its demos use, and the server's CPU seconds during each demo
are sampled too (the demo's earlier cycles only ingest, without Spark); with `--spark local` the
refresh job starts its own JVM, Spark's start included. Medians are printed and written as JSON.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/demo_refresh_bench.py [--against REV]
        [--spark connect|local] [--repeats 3] [--warm-up 1]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from model_variants_bench import cpu_seconds
from models_bench import REPO, CURRENT, SparkConnectServer, Tree

REFRESH_DONE = re.compile(r"final cycle .*refresh job done in ([0-9.]+) s")


def demo_refresh(tree: Tree, server: SparkConnectServer | None, home: Path) -> dict[str, float]:
    """One demo, through the server when there is one: its refresh job's seconds, and the
    server's CPU seconds."""
    remote = {"OFFSETS_PLATFORM_SPARK_REMOTE": server.endpoint} if server else {}
    before = cpu_seconds(psutil.Process(server.process.pid)) if server else 0.0
    demo = subprocess.Popen([sys.executable, "-m", "proving_ground.demo", "--home", str(home)], cwd=tree.root,
                            env={**tree.env, **remote, "SPARK_LOCAL_IP": "127.0.0.1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = demo.communicate()[0]
    found = REFRESH_DONE.search(output)
    if demo.returncode or not found:
        raise SystemExit(f"the demo of {tree.label} failed (exit code {demo.returncode}):\n{output[-3000:]}")
    result = {"refresh_job_s": float(found.group(1))}
    if server:
        result["server_cpu_s"] = cpu_seconds(psutil.Process(server.process.pid)) - before
    return result


def shown(result: dict[str, float]) -> str:
    text = f"refresh job {result['refresh_job_s']:.1f} s"
    return text + (f", server CPU {result['server_cpu_s']:.1f} s" if "server_cpu_s" in result else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="also the project at this commit, side by side")
    parser.add_argument("--spark", choices=("connect", "local"), default="connect",
                        help="through a Spark Connect server per version, or a Spark of each run's own")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "demo_refresh.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="demo-refresh-") as folder:
        trees = [Tree(CURRENT, REPO)]
        if args.against:
            trees.append(Tree.at_commit(args.against, Path(folder) / "against"))
        servers = {tree.label: SparkConnectServer(tree) if args.spark == "connect" else None for tree in trees}
        try:
            runs: dict[str, list[dict[str, float]]] = {tree.label: [] for tree in trees}
            for round_ in range(args.warm_up + args.repeats):
                order = trees if round_ % 2 == 0 else trees[::-1]
                for tree in order:
                    result = demo_refresh(tree, servers[tree.label], Path(folder) / f"home-{tree.label}")
                    warm = round_ >= args.warm_up
                    if warm:
                        runs[tree.label].append(result)
                    print(f"{'run' if warm else 'warm-up'} {round_ + 1} {tree.label}: {shown(result)}",
                          file=sys.stderr, flush=True)
        finally:
            for server in servers.values():
                if server:
                    server.stop()

    medians = {label: {key: statistics.median(run[key] for run in results) for key in results[0]}
               for label, results in runs.items()}
    where = "through a warm Spark Connect server" if args.spark == "connect" else "with a Spark of its own"
    print(f"\nthe demo's refresh job {where}, medians of {args.repeats}:")
    for label, median in medians.items():
        print(f"  {label:12} {shown(median)}")
    if args.against:
        against = trees[1].label
        ratio = medians[CURRENT]["refresh_job_s"] / medians[against]["refresh_job_s"]
        print(f"  ratio {CURRENT} / {against}: {ratio:.2f}")
    write_results({"spark": args.spark, "warm_up": args.warm_up, "repeats": args.repeats, "runs": runs,
                   "medians": medians, "cpu_count": os.cpu_count()}, args.out)


if __name__ == "__main__":
    main()
