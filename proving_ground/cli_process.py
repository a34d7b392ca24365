"""`offsets-platform` in a child process, with the faults and timing a test or a fault trial needs.

    python -m proving_ground.cli_process [OPTIONS] -- ARGS...

ARGS are the command line of `offsets-platform` (offsets_platform.cli). Each run prints `READY`
(flushed) right before the command's main step (ingest, the refresh, building a plan, apply), once
the imports are done, so that a caller can time a kill from there. The options:

- `--barrier DIR:N`: wait at that point until N processes reached it (each leaves a file in DIR),
  so that concurrent runs start their main step at the same moment rather than seconds apart
  (imports take that long);
- `--send-delay S`: sleep S seconds right before each OffsetDelete or DeleteGroups goes out, so
  that concurrent applies are still running when the other one reads the audit;
- `--die-before-answer`: SIGKILL this process when it is about to append Kafka's answer
  ('deleted' or 'failed' rows) to cleanup_audit, i.e. after the request was sent;
- `--batch-records N`: ingest reads N records per batch (one Delta commit per table each);
- `--write-delay S`: ingest sleeps S seconds after each of its Delta commits, so that a fault
  lands in the middle of the run;
- `--prefetch-records N`: ingest's Kafka client buffers about N records per partition ahead of
  the reader, and fetches little at a time (its defaults buffer up to a million records in all), so
  that a small log behaves as a large one: the broker is still needed when a fault lands mid-read;
- `--die-after-write TABLE:N`: SIGKILL this process right after ingest's Nth Delta commit to
  TABLE (`offsets_topic_checkpoints` included), counting from 1;
- `--as-of "YYYY-MM-DD HH:MM:SS"`: the models' "now", so that two refreshes give the same result;
- `--die-after-model-write MODEL`: SIGKILL this process right after a refresh wrote MODEL's table,
  before the run is recorded in model_runs;
- `--plan-time ISO`: the time a plan is made at (its id depends on it), so that two `plan`
  commands propose the same plan.

Prints `SENT <request> <group or groups>` (flushed) for each request that goes out. The faults are
installed by replacing functions of the library in this process only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = {"deleted", "failed"}


def start_cli_process(command: list[str], **popen: object) -> subprocess.Popen:
    """Start this module with `command` (its options, then `--` and the CLI's arguments), output as
    text on pipes unless `popen` says otherwise."""
    options = {"cwd": ROOT, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    return subprocess.Popen([sys.executable, "-m", "proving_ground.cli_process", *command], **options)


def run_cli_processes(commands: list[list[str]], timeout_s: float = 180) -> list[subprocess.CompletedProcess]:
    """Start every command (this module's arguments) at once; wait for all. Output as text."""
    processes = [start_cli_process(command) for command in commands]
    results = []
    for process, command in zip(processes, commands):
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            for running in processes:
                running.kill()
            raise
        results.append(subprocess.CompletedProcess(command, process.returncode, stdout, stderr))
    return results


def _wait_at_barrier(folder: Path, parties: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < parties:
        if time.monotonic() > deadline:
            raise SystemExit(f"barrier {folder}: the other processes did not arrive")
        time.sleep(0.01)


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _install_faults(args: argparse.Namespace) -> None:
    from offsets_platform.cleanup import apply, plans
    from offsets_platform.kafka import group_calls
    from offsets_platform.ingest import offsets_topic
    from offsets_platform.lake import Lake
    from offsets_platform.models import runner

    def main_step(function):
        """`function`, announced with READY and started at the barrier."""
        def started_together(*positional, **keywords):
            print("READY", flush=True)
            if args.barrier:
                folder, parties = args.barrier.rsplit(":", 1)
                _wait_at_barrier(Path(folder), int(parties))
            return function(*positional, **keywords)
        return started_together

    apply.apply_plan = main_step(apply.apply_plan)
    plans.save_plan = main_step(plans.save_plan)
    real_run_all = runner.ModelRunner.run_all

    def run_all(self, *positional, **keywords):
        if args.as_of:
            self.variables["as_of"] = args.as_of
        return real_run_all(self, *positional, **keywords)

    runner.ModelRunner.run_all = main_step(run_all)
    _install_ingest_faults(args, offsets_topic, main_step)

    if args.plan_time:
        real_build = plans.build_plan
        plan_time = datetime.fromisoformat(args.plan_time)
        plans.build_plan = lambda *positional, **keywords: real_build(*positional, **{**keywords, "now": plan_time})

    real_offsets, real_groups = group_calls.delete_offsets, group_calls.delete_groups

    def delete_offsets(admin, group, partitions):
        time.sleep(args.send_delay)
        print(f"SENT OffsetDelete {group}", flush=True)
        return real_offsets(admin, group, partitions)

    def delete_groups(admin, groups):
        groups = list(groups)
        time.sleep(args.send_delay)
        print(f"SENT DeleteGroups {','.join(groups)}", flush=True)
        return real_groups(admin, groups)

    group_calls.delete_offsets, group_calls.delete_groups = delete_offsets, delete_groups

    if args.die_before_answer:
        real_append = Lake.append

        def append(self, name, data):
            if name == "cleanup_audit" and ANSWERS & set(data.column("outcome").to_pylist()):
                _die()
            return real_append(self, name, data)

        Lake.append = append

    if args.die_after_model_write:
        # the runner writes a model's table through Lake.spark_merge (an incremental model) or
        # Lake.spark_overwrite (a table model), with Delta's Spark writer or, for a small result,
        # delta-rs (via_arrow); the patch passes on whatever else says how to write
        for method in ("spark_merge", "spark_overwrite"):
            real_write = getattr(Lake, method)

            def write(self, name, data, *positional, real_write=real_write, **how):
                written = real_write(self, name, data, *positional, **how)
                if name == args.die_after_model_write:
                    _die()
                return written

            setattr(Lake, method, write)


def _install_ingest_faults(args: argparse.Namespace, offsets_topic, main_step) -> None:
    if args.prefetch_records:
        from confluent_kafka import Consumer

        from offsets_platform.kafka import offsets_topic as reader

        small = {"queued.min.messages": args.prefetch_records, "fetch.message.max.bytes": 32 * 1024,
                 "queued.max.messages.kbytes": 1024}
        reader.Consumer = lambda config: Consumer({**config, **small})
    real_ingest = offsets_topic.ingest_offsets_topic
    die_table, die_at = (args.die_after_write.rsplit(":", 1) if args.die_after_write else (None, "0"))
    commits = {"n": 0}

    def after_write(table: str) -> None:
        if table == die_table:
            commits["n"] += 1
            if commits["n"] == int(die_at):
                _die()
        if args.write_delay:
            time.sleep(args.write_delay)

    def ingest(connection, lake, **keywords):
        if args.batch_records:
            keywords["batch_records"] = args.batch_records
        if die_table or args.write_delay:
            keywords["after_write"] = after_write
        return real_ingest(connection, lake, **keywords)

    offsets_topic.ingest_offsets_topic = main_step(ingest)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--barrier", help="DIR:N")
    parser.add_argument("--send-delay", type=float, default=0.0)
    parser.add_argument("--die-before-answer", action="store_true")
    parser.add_argument("--batch-records", type=int)
    parser.add_argument("--write-delay", type=float, default=0.0)
    parser.add_argument("--prefetch-records", type=int)
    parser.add_argument("--die-after-write", metavar="TABLE:N")
    parser.add_argument("--as-of")
    parser.add_argument("--die-after-model-write", metavar="MODEL")
    parser.add_argument("--plan-time")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    _install_faults(args)
    from offsets_platform.cli import main as cli_main

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return cli_main(command)


if __name__ == "__main__":
    sys.exit(main())
