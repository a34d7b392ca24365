"""The fault trials' quick tier (`python -m proving_ground.fault_trials --quick`, about a minute):
ingest killed with SIGKILL at a commit and at a random time, the broker down at start and frozen
mid-read (the run gives up within a bound, names the address, leaves a checkpointed prefix), and
two ingest processes at once. The full trials (refreshes killed, the broker killed and restarted,
two refreshes, plans and applies at once) run as a script: docs/fault-trials.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_the_quick_fault_trials_pass():
    run = subprocess.run([sys.executable, "-m", "proving_ground.fault_trials", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[-1] == "5 trials, 0 failed", run.stdout[-2000:]
    for trial in ("SIGKILL right after the 1st commit of offset_commit_records: ok",
                  "broker down at start, into a lake holding a prefix: ok", "broker frozen mid-ingest: ok",
                  "two ingests: ok"):
        assert any(trial in line for line in lines), (trial, run.stdout[-2000:])
