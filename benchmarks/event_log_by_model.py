"""Where a refresh's Spark work went, per model: the task metrics of a Spark event log, summed by
the model that started each job.

The runner labels each model's jobs with its name (`offsets_platform.lake.spark.labelled_jobs`,
a job group with a local Spark), and a refresh runs two models at once, so the wall time of one
model includes time it waited for the other's tasks; the CPU its tasks used does not. Run any
refresh with Spark's event log on, for instance the cycle benchmark:

    mkdir -p benchmarks/results/spark-events
    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_SUBMIT_ARGS="--conf spark.eventLog.enabled=true \
        --conf spark.eventLog.dir=$PWD/benchmarks/results/spark-events --conf spark.eventLog.compress=false pyspark-shell" \
        .venv/bin/python benchmarks/cycle_bench.py --records 9000000 --cycles 2
    .venv/bin/python benchmarks/event_log_by_model.py benchmarks/results/spark-events/eventlog_v2_<one cycle's application>/events_*
    .venv/bin/python benchmarks/event_log_by_model.py --stages "model log_observations" FILES...

Each line: jobs, tasks, the tasks' run time and CPU time, garbage collection, rows read from
files and shuffled rows written. Jobs without a model's label (Delta's own between models, the
runner's reads of its state) are summed under "(no model)". With --stages, the stages of one
label instead. Only the task metrics are counted: the driver's planning and commits, the
compiler's threads and Python are not (a process's CPU time, which the benchmarks report, is).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator

NO_MODEL = "(no model)"


def _task_metrics(event: dict) -> Counter:
    metrics = event.get("Task Metrics") or {}
    return Counter({
        "tasks": 1,
        "run_ms": metrics.get("Executor Run Time", 0),
        "cpu_ms": metrics.get("Executor CPU Time", 0) // 1_000_000,  # reported in nanoseconds
        "gc_ms": metrics.get("JVM GC Time", 0),
        "rows_read": (metrics.get("Input Metrics") or {}).get("Records Read", 0),
        "rows_shuffled": (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Records Written", 0),
    })


def _events(paths: list[Path]) -> Iterator[dict]:
    for path in paths:
        with path.open() as lines:
            yield from (json.loads(line) for line in lines)


def summed(paths: list[Path], stages_of: str | None = None) -> dict[str, Counter]:
    """The task metrics per label (model), or per stage of the label `stages_of`."""
    label_of_stage, name_of_stage = {}, {}
    totals: dict[str, Counter] = defaultdict(Counter)
    for event in _events(paths):
        if event["Event"] == "SparkListenerJobStart":
            label = (event.get("Properties") or {}).get("spark.jobGroup.id") or NO_MODEL
            for info in event.get("Stage Infos", []):
                label_of_stage[info["Stage ID"]] = label
                name_of_stage[info["Stage ID"]] = info["Stage Name"]
            if stages_of is None:
                totals[label]["jobs"] += 1
        elif event["Event"] == "SparkListenerTaskEnd":
            stage = event["Stage ID"]
            label = label_of_stage.get(stage, NO_MODEL)
            if stages_of is None:
                totals[label] += _task_metrics(event)
            elif label == stages_of:
                totals[f"stage {stage}: {name_of_stage.get(stage, '?')[:40]}"] += _task_metrics(event)
    return totals


def table(totals: dict[str, Counter]) -> str:
    lines = [f"{'':50} {'jobs':>5} {'tasks':>6} {'run s':>7} {'CPU s':>7} {'GC s':>6} {'rows read':>12} {'shuffled':>12}"]
    everything = Counter()
    for label, counts in sorted(totals.items(), key=lambda item: -item[1]["cpu_ms"]):
        everything += counts
        lines.append(_line(label, counts))
    lines.append(_line("in all", everything))
    return "\n".join(lines)


def _line(label: str, counts: Counter) -> str:
    return (f"{label[:50]:50} {counts['jobs']:5} {counts['tasks']:6} {counts['run_ms'] / 1000:7.1f} "
            f"{counts['cpu_ms'] / 1000:7.1f} {counts['gc_ms'] / 1000:6.1f} {counts['rows_read']:12,} "
            f"{counts['rows_shuffled']:12,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="the event log files of one Spark application")
    parser.add_argument("--stages", metavar="LABEL", help='the stages of one label, e.g. "model log_observations"')
    args = parser.parse_args()
    print(table(summed(args.files, args.stages)))


if __name__ == "__main__":
    main()
