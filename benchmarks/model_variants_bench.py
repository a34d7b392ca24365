"""One model's cost under two versions of the project, side by side on the same lake.

Extracts the `dbt_like_sql/` folder of two commits (`git archive <rev> dbt_like_sql`; defaults:
--before 6bf9054, the last commit where unconsumed_messages read only snapshot tables, and
--after HEAD, where it also reads the log's commits in offset_commit_records), builds a bronze
lake of generated coordinator records as models_bench.py does (or reuses one with --lake), runs
the model's upstream models once under each project (unconsumed_messages has none), then times
the one model (--model) under each project, the two alternating in every repeat:
  1. its full refresh (`ModelRunner.run(model, full_refresh=True)`), R times, after W untimed
     warm-up runs per project;
  2. an append-only incremental refresh, R times: M records appended to bronze (log records only,
     no new snapshot), then a normal run of the model (`run(model)`). The runner skips a model
     whose inputs are as at its last run (mode `unchanged`): a model reading only snapshot tables
     is skipped, one reading offset_commit_records runs again. With --next-snapshot, one more
     snapshot follows the records (`scale_lake.add_next_snapshot`), as each scheduled refresh
     takes one: the log start moves on every partition.
The time is the runner's own for the model (`ModelRun.seconds`: finding the source versions,
deciding whether to run, the query, the Delta write, recording the run); the CPU seconds of the
worker process and its JVM during the call are reported too, since other work on the machine
inflates wall times much more. Ratios are after / before, of the medians and, less sensitive to
the machine's speed changing during the run, the median of the per-repeat ratios.

Each project runs in its own long-lived worker process with its own SparkSession (get_spark,
local): the lake's table registry holds one schema per model name, and the two versions declare
different columns for the same models. Each worker also has its own run state: the runner keeps
what each model read in the lake's `model_runs` table (meta layer), and decides `unchanged` from
the model's latest row there (its code version and a fingerprint of its inputs), and it writes
the model's table in the lake. So each project gets its own lake in a temporary folder: the
shared lake's source layers (`bronze`, and `cleanup` if present) copied as hard links (the same
files, so the same page cache; a copy where links cannot be made), and its own `model_runs`,
silver and gold. Symbolic links to the shared bronze do not work: delta-rs gives the files'
resolved paths, which Spark refuses under the table's path. The appended records go to both
project lakes (the same generated batches, written once to each) and not to the shared lake, so
a lake given with --lake stays as built and every run starts from the same bronze.

After the full refreshes, each worker runs the model's query once more, untimed, and keeps
Spark's final (adaptive) physical plan: the joins and the file scans (columns read, pushed
filters) are printed and written with the results.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/model_variants_bench.py \
        [--model unconsumed_messages] [--before 6bf9054] [--after HEAD] [--records 10000000] \
        [--new-records 100000] [--repeats 5] [--warm-up 1] [--groups G] [--topic-partitions P] \
        [--snapshots 2] [--next-snapshot] [--lake LAKE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psutil

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from models_bench import BATCH, BronzeFeed, add_snapshots, append_to_all, tree_lake
from offsets_platform.lake import Lake
from proving_ground.workload.coordinator_history import default_start_ms, generate_batches
from proving_ground.workload.partitioning import DEFAULT_PARTITIONS
from proving_ground.workload.scale_lake import add_next_snapshot

REPO = Path(__file__).resolve().parents[1]
PROJECT_FOLDER = "dbt_like_sql"
MARKER = "model_variants_bench.json"  # in a lake this benchmark built: how to continue its stream
SEED = 7  # models_bench's
LABELS = ("before", "after")


class Feed(BronzeFeed):
    """models_bench's feed, with a known start time so that a reused lake's stream can continue."""

    def __init__(self, lake: Lake, total: int, start_ms: int, shape: dict):
        super().__init__(lake, total)
        self.batches = generate_batches(seed=SEED, records=total, batch_size=BATCH, start_ms=start_ms, **shape)
        self.start_ms = start_ms

    def skip(self, records: int) -> None:
        """Pass over the stream's first `records` records (already in the lake)."""
        while records > 0:
            records -= self.take(min(records, BATCH)).num_rows


def next_offsets(lake: Lake) -> np.ndarray:
    """Per partition of the log, the next offset ingest would write (from its checkpoints)."""
    rows = lake.query("select source_partition, max(next_offset) as next_offset from offsets_topic_checkpoints "
                      "group by source_partition", "offsets_topic_checkpoints").to_pydict()
    offsets = np.zeros(DEFAULT_PARTITIONS, np.int64)
    offsets[rows["source_partition"]] = rows["next_offset"]
    return offsets


def open_lake(root: Path, records: int, appends: int, snapshots: int, shape: dict,
              snapshot_shape: dict | None = None) -> tuple[Lake, Feed, dict]:
    """The shared lake: built with `records` records and `snapshots` snapshots (shaped by
    `add_snapshots`'s keywords in `snapshot_shape`), or reused as it is; and a feed whose next
    `appends` records continue its stream."""
    lake = Lake(root)
    marker = root / MARKER
    if not lake.exists("offset_commit_records"):
        start_ms = default_start_ms()
        feed = Feed(lake, records + appends, start_ms, shape)
        print(f"building bronze: {records:,} records in {root}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        write_s = feed.append(records, "build")
        add_snapshots(lake, snapshots, **(snapshot_shape or {}))
        build = {"built": True, "build_s": time.perf_counter() - started, "build_write_s": write_s}
        print(f"bronze built in {build['build_s']:.0f} s ({write_s:.0f} s writing, the rest generating)",
              file=sys.stderr, flush=True)
    else:
        offsets = next_offsets(lake)
        written = int(offsets.sum())  # each partition's offsets start at 0 and have no gaps
        if marker.exists():
            built_as = json.loads(marker.read_text())
            start_ms, shape = built_as["start_ms"], built_as.get("shape", {})
        else:  # a lake built by models_bench: its stream started at the minute of its first record
            first = lake.query("select min(source_timestamp) as t from offset_commit_records",
                               "offset_commit_records")["t"][0].as_py()
            start_ms = int(first.timestamp() // 60) * 60_000
        print(f"reusing the lake in {root}: {written:,} records; continuing its stream", file=sys.stderr, flush=True)
        feed = Feed(lake, written + appends, start_ms, shape)
        feed.skip(written)
        feed.next_offset, feed.written = offsets, written
        build = {"built": False}
        if not lake.exists("broker_configs") or not lake.count("broker_configs"):
            add_snapshots(lake, snapshots)
    marker.write_text(json.dumps({"seed": SEED, "start_ms": start_ms, "records": feed.written, "shape": shape}))
    return lake, feed, {**build, "records": feed.written, "start_ms": start_ms, "shape": shape}


def extract_project(rev: str, into: Path) -> tuple[str, Path]:
    """The commit id of `rev` and its `dbt_like_sql/` folder, extracted under `into`."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout.strip()
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", commit, PROJECT_FOLDER], cwd=REPO, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    archive.stdout.close()
    if archive.wait():
        raise SystemExit(f"git archive {commit} {PROJECT_FOLDER} failed")
    return commit, into / PROJECT_FOLDER


def cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU seconds of a process and its descendants (the JVM), as of now."""
    total = 0.0
    for each in [process, *process.children(recursive=True)]:
        try:
            total += sum(each.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def worker(project_dir: str, lake_root: str, model_name: str) -> None:
    """Serve one project's runs: a JSON command per line on stdin, a JSON answer per line on stdout."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else written to stdout (this process, the JVM) goes to stderr
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, load_project
    from offsets_platform.models.render import render

    spark = get_spark()
    project = load_project(project_dir)
    runner = ModelRunner(spark, Lake(lake_root), project=project,
                         emit=lambda line: print(f"    {line}", file=sys.stderr, flush=True))
    model = project.model(model_name)
    me = psutil.Process()
    answers.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["op"] == "upstream":
                upstream = upstream_of(project, model_name)
                runs = runner.run_all(select=upstream, full_refresh=True) if upstream else []
                answer = {"models": {run.model: {"mode": run.mode, "seconds": run.seconds} for run in runs}}
            elif command["op"] == "run":
                cpu, load = cpu_seconds(me), os.getloadavg()[0]
                started = time.perf_counter()
                run = runner.run(model_name, full_refresh=command["full_refresh"])
                answer = {"seconds": run.seconds, "call_s": time.perf_counter() - started,
                          "cpu_s": cpu_seconds(me) - cpu, "mode": run.mode, "rows_written": run.rows_written,
                          "rows_in_table": run.rows_in_table, "load_1min": max(load, os.getloadavg()[0])}
            elif command["op"] == "plan":  # the views of the last run are still registered
                spark.conf.set("spark.sql.maxMetadataStringLength", "1000")  # scans name their files in full
                try:
                    frame = spark.sql(render(model.name, model.sql, runner.variables,
                                            ephemerals=project.ephemeral_sql()).sql)
                    frame.toArrow()
                    answer = {"plan": frame._jdf.queryExecution().executedPlan().toString()}
                finally:
                    spark.conf.unset("spark.sql.maxMetadataStringLength")
            else:
                break
        except Exception:  # noqa: BLE001  (the parent reports it and stops)
            answer = {"error": traceback.format_exc()}
        answers.write(json.dumps(answer) + "\n")
    spark.stop()


def upstream_of(project, name: str) -> list[str]:
    """The models `name` refs, directly or not."""
    wanted, todo = set(), list(project.model(name).refs)
    while todo:
        ref = todo.pop()
        if ref not in wanted:
            wanted.add(ref)
            todo += project.model(ref).refs
    return [m.name for m in project.models if m.name in wanted]


class Worker:
    def __init__(self, label: str, project_dir: Path, lake_root: Path, model: str):
        self.label = label
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", str(project_dir), str(lake_root), model],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._answer()

    def ask(self, **command) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.label} worker ended (exit code {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"the {self.label} worker failed:\n{answer['error']}")
        return answer

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()


def plan_tree(plan: str) -> list[tuple[int, str]]:
    """The final plan's nodes as (depth column, text), in order (an adaptive plan's initial plan left out)."""
    lines = plan.splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip().startswith("+- == ")]
    if marks:
        final = [i for i in marks if "Final Plan" in lines[i]]
        start = final[0] + 1 if final else marks[0] + 1
        ends = [i for i in marks if i > start]
        lines = lines[start:ends[0] if ends else len(lines)]
    return [(len(line) - len(line.lstrip(" :+-")), line.lstrip(" :+-")) for line in lines if line.strip()]


def node_name(text: str) -> str:
    return re.sub(r"^\*\(\d+\)\s*", "", text).split(" ", 1)[0]


def scanned_table(text: str) -> str:
    match = re.search(r"file:\S*?/(\w+)/(\w+)/[^/\s,\]]+\.parquet", text)
    return match.group(2) if match else "?"


def plan_summary(plan: str, only: set[str] | None = None) -> dict:
    """What a final physical plan does: its joins by kind (and exchanges reused); per table scanned, the scans, the columns
    read and the filters pushed to Parquet; for the scans of the tables in `only`, the join that
    consume each within its stage (their kind, build side, which side the scan's rows come in on,
    condition)."""
    nodes = plan_tree(plan)
    joins: dict[str, int] = {}
    scans: dict[str, dict] = {}
    for index, (_depth, text) in enumerate(nodes):
        name = node_name(text)
        if name.endswith("Join") or name == "ReusedExchange":
            joins[name] = joins.get(name, 0) + 1
        if not text.startswith("FileScan"):
            continue
        table = scanned_table(text)
        scan = scans.setdefault(table, {"scans": 0, "read_schema": "", "pushed_filters": "", "consumed_by": []})
        scan["scans"] += 1
        scan["read_schema"] = (re.search(r"ReadSchema: (struct<.*?>)(?:$|,)", text) or [None, "?"])[1]
        scan["pushed_filters"] = (re.search(r"PushedFilters: (\[.*?\])", text) or [None, "?"])[1]
        if only is not None and table not in only:
            continue
        child, consumed = index, []  # walk up to the stage's end (an exchange)
        for parent in range(index - 1, -1, -1):
            if nodes[parent][0] >= nodes[child][0]:
                continue
            parent_name = node_name(nodes[parent][1])
            if parent_name.endswith("Exchange"):
                break
            if parent_name.endswith("Join"):
                build = re.search(r"Build(Left|Right)", nodes[parent][1])
                consumed.append({
                    "join": parent_name, "build_side": build.group(1).lower() if build else None,
                    "scan_side": "left" if child == parent + 1 else "right",
                    "join_text": re.sub(r"#\d+L?", "", re.sub(r"^\*\(\d+\)\s*", "", nodes[parent][1]))[:300]})
            child = parent
        scan["consumed_by"].append(consumed)
    return {"joins": joins, "scans": scans}


def print_plan(label: str, commit: str, summary_: dict) -> None:
    joins = ", ".join(f"{name} x{count}" for name, count in sorted(summary_["joins"].items()))
    print(f"{label} ({commit[:7]}): final physical plan: {joins}")
    for table, scan in sorted(summary_["scans"].items()):
        print(f"  {table}: {scan['scans']} scan(s), reads {scan['read_schema']}, pushed {scan['pushed_filters']}")
        for number, consumed in enumerate(scan["consumed_by"], start=1):
            print(f"    scan {number}, the joins of its stage, from the scan up:")
            for join in consumed:
                print(f"      {join['join']}, build {join['build_side']}, the scan's rows on the "
                      f"{join['scan_side']}: {join['join_text']}")


def summary(runs: list[dict]) -> dict:
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "modes": sorted({r["mode"] for r in runs}), "rows_in_table": runs[-1]["rows_in_table"]}


def ratio(after: float, before: float) -> float | None:
    return after / before if before > 0 else None  # a skipped run can take no measurable CPU


def paired(case: dict, key: str) -> float | None:
    """Median over repeats of after / before, each pair measured back to back."""
    ratios = [ratio(a[key], b[key]) for a, b in zip(case["after"]["runs"], case["before"]["runs"])]
    return None if None in ratios else statistics.median(ratios)


def shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def markdown(results: dict) -> str:
    commits = {label: results["projects"][label]["commit"][:7] for label in LABELS}
    lines = [(f"| {results['model']}, {results['lake']['records']:,} records, median of {results['repeats']} | "
              f"before ({commits['before']}) | after ({commits['after']}) | after / before (of medians) | "
              "after / before (median of pairs) |"), "|---|---:|---:|---:|---:|"]
    for case, title in (("full", "full refresh"),
                        ("incremental", f"incremental (+{results['new_records']:,} records"
                                        + (" and a snapshot)" if results.get("next_snapshot") else ")"))):
        before, after = (results[case][label]["median"] for label in LABELS)
        lines.append(f"| {title}: run time | {before['seconds']:.2f} s ({', '.join(before['modes'])}) | "
                     f"{after['seconds']:.2f} s ({', '.join(after['modes'])}) | "
                     f"{shown(ratio(after['seconds'], before['seconds']))} | {shown(paired(results[case], 'seconds'))} |")
        lines.append(f"| {title}: CPU, Python + JVM | {before['cpu_s']:.2f} s | {after['cpu_s']:.2f} s | "
                     f"{shown(ratio(after['cpu_s'], before['cpu_s']))} | {shown(paired(results[case], 'cpu_s'))} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="unconsumed_messages")
    parser.add_argument("--before", default="6bf9054", help="commit of the first project")
    parser.add_argument("--after", default="HEAD", help="commit of the second project")
    parser.add_argument("--records", type=int, default=10_000_000, help="records in bronze when building the lake")
    parser.add_argument("--new-records", type=int, default=100_000, help="records appended before each incremental")
    parser.add_argument("--next-snapshot", action="store_true",
                        help="also take one more snapshot after the records, as a scheduled refresh does")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warm-up", type=int, default=1, help="untimed full runs per project before the timed ones")
    parser.add_argument("--groups", type=int, help="groups alive at once in a lake built here (the generator's default)")
    parser.add_argument("--topic-partitions", type=int, help="partitions the groups of a lake built here read")
    parser.add_argument("--snapshots", type=int, default=2, help="admin-API snapshots in a lake built here")
    parser.add_argument("--lake", help="a lake folder to reuse (built there if it holds no bronze yet)")
    parser.add_argument("--out", default="benchmarks/results/model_variants_bench.json")
    parser.add_argument("--worker", nargs=3, metavar=("PROJECT", "LAKE", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return

    results: dict = {"model": args.model, "new_records": args.new_records, "next_snapshot": args.next_snapshot,
                     "repeats": args.repeats, "warm_up": args.warm_up, "cpus": os.cpu_count(),
                     "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "projects": {}}
    with tempfile.TemporaryDirectory(prefix="model-variants-bench-") as scratch:
        scratch = Path(scratch)
        shared = Path(args.lake).absolute() if args.lake else scratch / "lake"
        _, feed, results["lake"] = open_lake(shared, args.records, args.repeats * args.new_records, args.snapshots,
                                             {"groups": args.groups, "topic_partitions": args.topic_partitions})
        results["lake"]["reused"] = bool(args.lake) and not results["lake"]["built"]
        lakes, workers = {}, {}
        try:
            for label, rev in zip(LABELS, (args.before, args.after)):
                commit, project_dir = extract_project(rev, scratch / label / "project")
                results["projects"][label] = {"rev": rev, "commit": commit}
                lakes[label] = tree_lake(shared, scratch / label / "lake")
                print(f"starting the {label} worker ({rev} = {commit[:7]})", file=sys.stderr, flush=True)
                workers[label] = Worker(label, project_dir, lakes[label].root, args.model)
            for label in LABELS:
                results["projects"][label]["upstream"] = workers[label].ask(op="upstream")["models"]
                print(f"{label}: upstream models run: {list(results['projects'][label]['upstream']) or 'none'}",
                      file=sys.stderr, flush=True)

            def alternate(repeat: int, full_refresh: bool, into: dict) -> None:
                for label in LABELS if repeat % 2 == 0 else LABELS[::-1]:
                    run = workers[label].ask(op="run", full_refresh=full_refresh)
                    into[label]["runs"].append(run)
                    print(f"  {label}: {run['mode']}, {run['seconds']:.2f} s (CPU {run['cpu_s']:.2f} s)",
                          file=sys.stderr, flush=True)

            warm_up = {label: {"runs": []} for label in LABELS}
            for repeat in range(args.warm_up):
                print(f"warm-up full refresh {repeat + 1}/{args.warm_up}", file=sys.stderr, flush=True)
                alternate(repeat, True, warm_up)
            results["warm_up"] = warm_up
            results["full"] = {label: {"runs": []} for label in LABELS}
            for repeat in range(args.repeats):
                print(f"full refresh {repeat + 1}/{args.repeats}", file=sys.stderr, flush=True)
                alternate(repeat, True, results["full"])
            plans = {label: workers[label].ask(op="plan")["plan"] for label in LABELS}
            read = {label: set(plan_summary(plan)["scans"]) for label, plan in plans.items()}
            for label, plan in plans.items():  # the tables one version reads and the other not: how it joins them
                results["projects"][label]["plan"] = plan
                results["projects"][label]["plan_summary"] = plan_summary(plan, read[label] - set.intersection(*read.values()))
            results["incremental"] = {label: {"runs": []} for label in LABELS}
            results["incremental"]["append_s"] = []
            for repeat in range(args.repeats):
                print(f"appending {args.new_records:,} records, then incremental refresh {repeat + 1}/{args.repeats}",
                      file=sys.stderr, flush=True)
                results["incremental"]["append_s"].append(
                    append_to_all(feed, lakes, args.new_records, f"variants-{repeat}"))
                if args.next_snapshot:
                    for lake in lakes.values():
                        add_next_snapshot(lake)
                alternate(repeat, False, results["incremental"])
        finally:
            for each in workers.values():
                each.stop()
        results["lake"]["records_at_end"] = feed.written
    for case in ("full", "incremental"):
        for label in LABELS:
            results[case][label]["median"] = summary(results[case][label]["runs"])
        results[case]["ratio_of_medians"] = {key: ratio(results[case]["after"]["median"][key],
                                                         results[case]["before"]["median"][key])
                                             for key in ("seconds", "cpu_s")}
        results[case]["median_of_paired_ratios"] = {key: paired(results[case], key) for key in ("seconds", "cpu_s")}

    print()
    print(markdown(results))
    print()
    for label in LABELS:
        print_plan(label, results["projects"][label]["commit"], results["projects"][label]["plan_summary"])
    print("runs (seconds), in order: " + "; ".join(
        f"{case} {label}: " + ", ".join(f"{r['seconds']:.2f}" for r in results[case][label]["runs"])
        for case in ("full", "incremental") for label in LABELS))
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
