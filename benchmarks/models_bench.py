"""Model refresh speed and memory: a full refresh and an incremental refresh, side by side.

Builds a bronze lake of generated coordinator records without a broker (decode + bronze writes
exactly as ingest does, streamed in batches), adds two synthetic admin-API snapshots, then:
  1. full refresh (`run_all(full_refresh=True)`) of all models, R times over the same lake;
  2. incremental refresh (`run_all()`) R times, each after appending M more records of the same
     generator stream to bronze (offsets and timestamps continue);
  3. the same incremental refresh through a long-lived Spark Connect server
     (`offsets-platform spark-server`, as a deployment runs it): W warm-up refreshes, then R timed
     ones, each after appending M records. The server has then run W refreshes, as it has after
     W scheduled refreshes (one hour at the default 15 minutes for W = 4).
Each refresh runs in a child process, as a scheduled refresh starts, so JVM start-up (or the
client's connection) is included and reported apart; a psutil thread samples the RSS and CPU of
the child, its JVM and the server.

--against REV also times the project as it was at commit REV, side by side: its code is
extracted into a temporary folder (`git archive`), it gets a lake of its own whose bronze starts
as hard links of the same files, every appended batch is written to both lakes, and each step
runs once per version, the two alternating which goes first, so that other work on the machine
weighs on both alike. Each version refreshes through a Spark Connect server of its own code.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/models_bench.py \
        [--records 10000000] [--new-records 100000] [--repeats 3] [--warm-up 4] \
        [--groups 10000] [--topic-partitions 100000] [--against REV]

--groups and --topic-partitions shape the history as a large cluster's (the generator's `groups`,
team groups alive at once, and `topic_partitions`, the partitions of the topics they read).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from ingest_bench import timed, write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.broker.embedded import free_loopback_port
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES
from proving_ground.workload.scale_lake import BATCH, BronzeFeed, add_snapshots, append_raw

TARGETS_S = {"full": 60.0, "incremental": 10.0}
REPO = Path(__file__).resolve().parents[1]
CURRENT = "current"


class Tree:
    """A version of the project that runs refreshes: this checkout, or the files of a commit
    extracted into a folder. Its processes import the project from its folder."""

    def __init__(self, label: str, root: Path):
        self.label, self.root = label, root
        self.env = {**os.environ, "PYTHONPATH": str(root)}

    @classmethod
    def at_commit(cls, rev: str, into: Path) -> "Tree":
        commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout.strip()
        into.mkdir(parents=True)
        archive = subprocess.Popen(["git", "archive", commit], cwd=REPO, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
        archive.stdout.close()
        if archive.wait():
            raise SystemExit(f"git archive {commit} failed")
        # The models' SQL is imported as offsets_platform.sql_project, which the installed package
        # maps to this checkout's dbt_like_sql/: the commit's own must be found first.
        if (into / "dbt_like_sql").is_dir() and not (into / "offsets_platform" / "sql_project").exists():
            (into / "offsets_platform" / "sql_project").symlink_to(Path("..") / "dbt_like_sql")
        return cls(commit[:10], into)

    def popen(self, *args: str, **kwargs) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, *args], cwd=self.root, env=self.env, **kwargs)


def _shares_parents_memory(process: psutil.Process) -> bool:
    """Whether `process` is a JVM's child between its spawn and its exec: Java starts a program
    (Hadoop's local file system runs `readlink` for Delta's log files) with a child that shares
    the JVM's memory until it execs, so its RSS is the JVM's, and counting it doubled the peak."""
    try:
        parent = process.parent()
        return parent is not None and process.cmdline() == parent.cmdline()
    except psutil.Error:
        return False


def child(lake_root: str, mode: str, remote: str) -> None:
    """Run in a fresh process: one refresh of every model (`full` or `incremental`), on a local
    Spark or, when `remote` is not "-", through that Spark Connect server; print timings as JSON."""
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models

    spark = get_spark(remote=None if remote == "-" else remote)
    # from the process's creation, so interpreter start-up and imports count as JVM start-up does
    spark_start_s = time.time() - psutil.Process().create_time()
    lake = lake_for_models(lake_root)
    runner = ModelRunner(spark, lake, emit=lambda line: print(f"    {line}", file=sys.stderr, flush=True))
    started = time.perf_counter()
    runs = runner.run_all(full_refresh=mode == "full")
    models_s = time.perf_counter() - started
    spark.stop()
    print(json.dumps({"spark_start_s": spark_start_s, "models_s": models_s,
                      "models": {r.model: {"mode": r.mode, "seconds": r.seconds, "rows_written": r.rows_written,
                                           "rows_in_table": r.rows_in_table} for r in runs}}))


class SparkConnectServer:
    """`offsets-platform spark-server` of a tree's code on a free loopback port, for the server refreshes."""

    def __init__(self, tree: Tree):
        self.endpoint = f"sc://127.0.0.1:{free_loopback_port()}"
        self.process = tree.popen("-m", "offsets_platform.cli", "spark-server", "--port",
                                  self.endpoint.rsplit(":", 1)[1], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
        for line in self.process.stdout:
            if line.startswith("ready:"):
                return
        raise SystemExit(f"the Spark Connect server did not start (exit code {self.process.wait()})")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)


class PeakRss(threading.Thread):
    """Samples the RSS of processes and all their descendants (the Spark JVM) every 100 ms, and
    the CPU seconds they spend meanwhile: other work on the machine inflates wall times, much
    less CPU time. The first process is the refresh (its RSS alone is "Python alone")."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.roots, self.done, self.peak_mb, self.peak_python_mb = [psutil.Process(p) for p in pids], threading.Event(), 0.0, 0.0
        self.cpu_start_s: dict[int, float] = {}  # pid -> user + system seconds when first seen
        self.cpu_s: dict[int, float] = {}  # pid -> user + system seconds, last seen

    @property
    def cpu_used_s(self) -> float:
        """CPU seconds spent while sampling: a long-lived server's earlier work does not count."""
        return sum(self.cpu_s[pid] - self.cpu_start_s[pid] for pid in self.cpu_s)

    def run(self) -> None:
        self._sample()
        for pid, seconds in self.cpu_s.items():  # the refresh just started: all of its CPU counts
            self.cpu_start_s[pid] = seconds if pid != self.roots[0].pid else 0.0
        while not self.done.wait(0.1):
            self._sample()

    def _sample(self) -> None:
        processes = []
        for root in self.roots:
            try:
                processes += [root] + root.children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        rss = {}
        for process in processes:
            try:
                if not _shares_parents_memory(process):
                    rss[process.pid] = process.memory_info().rss / 2**20
                self.cpu_s[process.pid] = sum(process.cpu_times()[:2])
                self.cpu_start_s.setdefault(process.pid, 0.0)  # started during the refresh
            except psutil.NoSuchProcess:  # a child that just ended
                pass
        self.peak_mb = max(self.peak_mb, sum(rss.values()))
        self.peak_python_mb = max(self.peak_python_mb, rss.get(self.roots[0].pid, 0.0))


def measure(tree: Tree, lake_root: Path, mode: str, server: SparkConnectServer | None = None) -> dict:
    started = time.perf_counter()
    process = tree.popen("benchmarks/models_bench.py", "--child", str(lake_root), mode,
                         server.endpoint if server else "-",
                         stdout=subprocess.PIPE, text=True)  # stderr (progress) goes straight through
    return sampled(process, started, [server.process.pid] if server else [])


def sampled(process: subprocess.Popen, started: float, also: list[int]) -> dict:
    """Wait for a child that prints its figures as JSON on its last line of stdout, sampling its
    memory and CPU (and those of the processes in `also`); its figures with the wall time since
    `started`, the peak RSS, the CPU time and the load average."""
    sampler = PeakRss([process.pid, *also])
    sampler.start()
    out, _ = process.communicate()
    wall_s = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    if process.returncode:
        raise SystemExit(f"the child {process.args} failed with exit code {process.returncode}")
    return {**json.loads(out.strip().splitlines()[-1]), "wall_s": wall_s, "peak_mb": sampler.peak_mb,
            "peak_python_mb": sampler.peak_python_mb, "cpu_s": sampler.cpu_used_s,
            "load_1min": os.getloadavg()[0]}  # above the core count, other work competed for the CPUs


def medians(runs: list[dict]) -> dict:
    summary = {key: statistics.median(run[key] for run in runs)
               for key in ("wall_s", "spark_start_s", "models_s", "cpu_s", "peak_mb", "peak_python_mb", "load_1min")}
    # by name, over the runs that had the model (the project may change during a long run)
    summary["models"] = {}
    for name in dict.fromkeys(name for run in runs for name in run["models"]):
        having = [run["models"][name] for run in runs if name in run["models"]]
        summary["models"][name] = {"seconds": statistics.median(h["seconds"] for h in having), "runs": len(having),
                                   "mode": having[-1]["mode"], "rows_in_table": having[-1]["rows_in_table"]}
    return summary


KINDS = ("full", "incremental", "server")


def markdown(results: dict) -> str:
    full, incremental, server = (results[kind]["median"] for kind in KINDS)
    lines = [f"| median of {results['repeats']} | full refresh | incremental (+{results['new_records']:,}), "
             f"local Spark | incremental (+{results['new_records']:,}), Spark Connect server | "
             "rows in table (last incremental) |", "|---|---:|---:|---:|---:|"]
    missing = {"seconds": float("nan"), "mode": "not run", "rows_in_table": 0}
    for name in dict.fromkeys([*full["models"], *incremental["models"]]):
        run, other, served = (kind["models"].get(name, missing) for kind in (full, incremental, server))
        lines.append(f"| {name} | {run['seconds']:.1f} s | {other['seconds']:.1f} s ({other['mode']}) | "
                     f"{served['seconds']:.1f} s ({served['mode']}) | {other['rows_in_table']:,} |")
    rows = (("models_s", "**all models (run_all)**"), ("spark_start_s", "process start to SparkSession"),
            ("wall_s", "**process wall time**"), ("cpu_s", "CPU time, Python + JVM (+ server)"))
    for key, label in rows:
        lines.append(f"| {label} | " + " | ".join(f"{kind[key]:.1f} s" for kind in (full, incremental, server)) + " | |")
    lines.append("| peak RSS, Python + JVM (+ server) | "
                 + " | ".join(f"{kind['peak_mb']:,.0f} MB" for kind in (full, incremental, server)) + " | |")
    lines.append("| peak RSS, Python alone | "
                 + " | ".join(f"{kind['peak_python_mb']:,.0f} MB" for kind in (full, incremental, server)) + " | |")
    lines.append(f"| load average (1 min) at the end, {results['cpus']} CPUs | "
                 + " | ".join(f"{kind['load_1min']:.1f}" for kind in (full, incremental, server)) + " | |")
    return "\n".join(lines)


def tree_lake(shared: Path, root: Path) -> Lake:
    """A lake of its own (model tables, model_runs) holding the shared lake's source layers as
    hard links (the same files, so the same page cache; a copy where links cannot be made)."""
    root.mkdir(parents=True)

    def link(source: str, target: str) -> None:
        try:
            os.link(source, target)
        except OSError:  # another file system
            shutil.copy2(source, target)

    for layer in sorted({spec.layer for spec in TABLES.values()} - {"meta"}):
        if (shared / layer).is_dir():
            shutil.copytree(shared / layer, root / layer, copy_function=link)
    return Lake(root)


def append_to_all(feed: BronzeFeed, lakes: dict[str, Lake], records: int, label: str) -> dict[str, float]:
    """The feed's next `records` records, written to every lake as ingest writes them (one ingest
    batch per BATCH records); returns each lake's write seconds."""
    seconds = dict.fromkeys(lakes, 0.0)
    while records > 0:
        raw = feed.take(min(records, BATCH))
        records -= raw.num_rows
        feed.written += raw.num_rows
        for name, lake in lakes.items():
            seconds[name] += timed(lambda lake=lake, raw=raw: append_raw(lake, raw, label))
    return seconds


def alternating(trees: list[Tree], repeat: int) -> list[Tree]:
    """The trees in the order they run in this repeat: who goes first alternates."""
    return trees if repeat % 2 == 0 else trees[::-1]


def summarise(results: dict) -> None:
    for kind in KINDS:
        results[kind]["median"] = medians(results[kind]["runs"])
        results[kind]["target_s"] = TARGETS_S.get(kind, TARGETS_S["incremental"])
        results[kind]["target_met"] = results[kind]["median"]["wall_s"] < results[kind]["target_s"]


def print_summary(label: str, results: dict, cpus: int) -> None:
    print(f"\n{label}:\n")
    print(markdown({**results, "cpus": cpus}))
    print()
    labels = {"full": "full refresh", "incremental": "incremental refresh, a local Spark per refresh",
              "server": "incremental refresh through the Spark Connect server"}
    for kind in KINDS:
        median = results[kind]["median"]
        print(f"{labels[kind]}: target < {results[kind]['target_s']:.0f} s "
              f"{'met' if results[kind]['target_met'] else 'NOT met'} "
              f"(process wall {median['wall_s']:.1f} s, of which models {median['models_s']:.1f} s)")
        if median["load_1min"] > cpus:
            print(f"  note: load average {median['load_1min']:.1f} on {cpus} CPUs at the end; the refresh's "
                  "own threads (two models at a time, the JVM's) count too, so compare CPU time as well")
    print("server warm-up refreshes (process wall): "
          + ", ".join(f"{run['wall_s']:.1f} s" for run in results["server"]["warm_up"]))


def comparison(results: dict, against: str) -> str:
    """The current code beside `against`'s, per kind of refresh: medians and their ratios."""
    lines = [f"| median of {results['repeats']} | wall, {CURRENT} | wall, {against} | ratio | CPU, {CURRENT} | "
             f"CPU, {against} | ratio | peak RSS, {CURRENT} | peak RSS, {against} |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for kind in KINDS:
        now, then = results["trees"][CURRENT][kind]["median"], results["trees"][against][kind]["median"]
        lines.append(f"| {kind} | {now['wall_s']:.1f} s | {then['wall_s']:.1f} s | {now['wall_s'] / then['wall_s']:.2f} | "
                     f"{now['cpu_s']:.1f} s | {then['cpu_s']:.1f} s | {now['cpu_s'] / then['cpu_s']:.2f} | "
                     f"{now['peak_mb']:,.0f} MB | {then['peak_mb']:,.0f} MB |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000, help="records in bronze before the refreshes")
    parser.add_argument("--new-records", type=int, default=100_000, help="records appended before each incremental")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=4, help="refreshes through the server before the timed ones")
    parser.add_argument("--groups", type=int, help="groups alive at once in the generated history")
    parser.add_argument("--topic-partitions", type=int, help="partitions of the topics the generated groups read")
    parser.add_argument("--against", metavar="REV", help="also time the project at this commit, side by side")
    parser.add_argument("--out", default="benchmarks/results/models_bench.json")
    parser.add_argument("--child", nargs=3, metavar=("LAKE", "MODE", "REMOTE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    results: dict = {"records": args.records, "new_records": args.new_records, "repeats": args.repeats,
                     "groups": args.groups, "topic_partitions": args.topic_partitions,
                     "cpus": os.cpu_count(), "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    with tempfile.TemporaryDirectory(prefix="models-bench-") as scratch:
        trees = [Tree(CURRENT, REPO)]
        lake = Lake(Path(scratch) / "lake")
        feed = BronzeFeed(lake, args.records + (2 * args.repeats + args.warm_up) * args.new_records,
                          args.groups, args.topic_partitions)
        print(f"building bronze: {args.records:,} records in {lake.root}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        results["build_write_s"] = feed.append(args.records, "build")
        add_snapshots(lake)
        results["build_s"] = time.perf_counter() - started
        print(f"bronze built in {results['build_s']:.0f} s ({results['build_write_s']:.0f} s writing, the rest "
              "generating)", file=sys.stderr, flush=True)
        lakes = {CURRENT: lake}
        if args.against:
            trees.append(Tree.at_commit(args.against, Path(scratch) / "against"))
            lakes[trees[1].label] = tree_lake(lake.root, Path(scratch) / "against-lake")
            print(f"timing {trees[1].label} ({args.against}) beside the current code, on a lake of its own",
                  file=sys.stderr, flush=True)
            results["against"] = {"rev": args.against, "commit": trees[1].label}
        runs = {tree.label: {"full": {"runs": []}, "incremental": {"runs": []},
                             "server": {"warm_up": [], "runs": [], "warm_up_refreshes": args.warm_up}}
                for tree in trees}

        def each_tree(repeat: int, step: str, mode: str, servers: dict | None = None) -> dict[str, dict]:
            measured = {}
            for tree in alternating(trees, repeat):
                print(f"{step}: {tree.label}", file=sys.stderr, flush=True)
                server = servers[tree.label] if servers else None
                measured[tree.label] = measure(tree, lakes[tree.label].root, mode, server)
            return measured

        # Full refreshes first: they also leave log_offset_state ready for the incremental runs.
        for repeat in range(args.repeats):
            for label, run in each_tree(repeat, f"full refresh {repeat + 1}/{args.repeats}", "full").items():
                runs[label]["full"]["runs"].append(run)
        for repeat in range(args.repeats):
            append_to_all(feed, lakes, args.new_records, f"append-{repeat}")
            step = f"appended {args.new_records:,} records, then incremental refresh {repeat + 1}/{args.repeats}"
            for label, run in each_tree(repeat, step, "incremental").items():
                runs[label]["incremental"]["runs"].append(run)
        print("starting a Spark Connect server per version (offsets-platform spark-server)", file=sys.stderr, flush=True)
        servers = {}
        try:
            for tree in trees:
                servers[tree.label] = SparkConnectServer(tree)
            for repeat in range(args.warm_up + args.repeats):
                timed_run = repeat >= args.warm_up
                label = (f"timed refresh {repeat - args.warm_up + 1}/{args.repeats}" if timed_run
                         else f"warm-up refresh {repeat + 1}/{args.warm_up}")
                append_to_all(feed, lakes, args.new_records, f"server-{repeat}")
                step = f"appended {args.new_records:,} records, then through the server: {label}"
                for tree_label, run in each_tree(repeat, step, "incremental", servers).items():
                    runs[tree_label]["server"]["runs" if timed_run else "warm_up"].append(run)
        finally:
            for server in servers.values():
                server.stop()
    for tree_runs in runs.values():
        summarise(tree_runs)
    results["trees"] = runs
    for tree in trees:
        print_summary(f"{tree.label} ({tree.root})" if tree.label != CURRENT else "the current code",
                      {**runs[tree.label], "repeats": args.repeats, "new_records": args.new_records}, results["cpus"])
    if args.against:
        print()
        print(comparison(results, trees[1].label))
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
