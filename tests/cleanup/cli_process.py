"""`offsets-platform` in a child process, with the faults and timing a test needs.

    python -m tests.cleanup.cli_process [--barrier DIR:N] [--send-delay S] [--die-before-answer] -- ARGS...

- `--barrier DIR:N`: wait until N processes reached `apply_plan` (each leaves a file in DIR), so
  that concurrent applies start at the same moment rather than seconds apart (imports take that long);
- `--send-delay S`: sleep S seconds right before each OffsetDelete or DeleteGroups goes out, so
  that concurrent applies are still running when the other one reads the audit;
- `--die-before-answer`: SIGKILL this process when it is about to append Kafka's answer
  ('deleted' or 'failed' rows) to cleanup_audit, i.e. after the request was sent.

Prints `SENT <request> <group or groups>` (flushed) for each request that goes out. Not a test
module (no `test_` prefix); tests start it with `run_cli_processes`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = {"deleted", "failed"}


def run_cli_processes(commands: list[list[str]], timeout_s: float = 180) -> list[subprocess.CompletedProcess]:
    """Start every command (this module's arguments) at once; wait for all. Output as text."""
    processes = [subprocess.Popen([sys.executable, "-m", "tests.cleanup.cli_process", *command], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for command in commands]
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


def _install_faults(args: argparse.Namespace) -> None:
    from offsets_platform.cleanup import apply, kafka_calls
    from offsets_platform.lake import Lake

    if args.barrier:
        folder, parties = args.barrier.rsplit(":", 1)
        real_apply = apply.apply_plan

        def apply_plan_together(*positional, **keywords):
            _wait_at_barrier(Path(folder), int(parties))
            return real_apply(*positional, **keywords)

        apply.apply_plan = apply_plan_together

    real_offsets, real_groups = kafka_calls.delete_offsets, kafka_calls.delete_groups

    def delete_offsets(admin, group, partitions):
        time.sleep(args.send_delay)
        print(f"SENT OffsetDelete {group}", flush=True)
        return real_offsets(admin, group, partitions)

    def delete_groups(admin, groups):
        groups = list(groups)
        time.sleep(args.send_delay)
        print(f"SENT DeleteGroups {','.join(groups)}", flush=True)
        return real_groups(admin, groups)

    kafka_calls.delete_offsets, kafka_calls.delete_groups = delete_offsets, delete_groups

    if args.die_before_answer:
        real_append = Lake.append

        def append(self, name, data):
            if name == "cleanup_audit" and ANSWERS & set(data.column("outcome").to_pylist()):
                os.kill(os.getpid(), signal.SIGKILL)
            return real_append(self, name, data)

        Lake.append = append


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--barrier", help="DIR:N")
    parser.add_argument("--send-delay", type=float, default=0.0)
    parser.add_argument("--die-before-answer", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    _install_faults(args)
    from offsets_platform.cli import main as cli_main

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return cli_main(command)


if __name__ == "__main__":
    sys.exit(main())
