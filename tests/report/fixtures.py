"""The one small demo that the demo's own test and the report, notebook and UI tests share (about 2
minutes).

tests/report/conftest.py and tests/notebooks/conftest.py import these fixtures, as do the test
modules elsewhere that use them. pytest then
holds one fixture definition per conftest, each with its own session cache, so the demo itself
is memoised here, at module level: it runs once per test session whichever folders run.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from offsets_platform.lake import Lake


# A small demo: enough live traffic for every table to have rows.
SMALL_DEMO = {"seed": 3, "live_scale": 0.2}


@dataclass(frozen=True)
class DemoRun:
    home: Path  # the OFFSETS_PLATFORM_HOME of the run: the demo is in home/demo, its lake in home/demo/lake
    lake: Lake
    output: str  # what the demo printed
    started: float  # when it started (epoch seconds): the processes started since are the demo's or later


_runs: list[DemoRun] = []


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    if not _runs:
        from proving_ground.demo import run_demo

        home = tmp_path_factory.mktemp("report_demo")
        printed = io.StringIO()
        started = time.time()
        with contextlib.redirect_stdout(printed):
            lake = run_demo(home, **SMALL_DEMO)
        sys.stdout.write(printed.getvalue())  # still shown by pytest when a test fails
        _runs.append(DemoRun(home, lake, printed.getvalue(), started))
    return _runs[0]


@pytest.fixture(scope="session")
def demo_lake(demo_run) -> Lake:
    """The lake of the small demo (bronze, silver, gold and cleanup tables)."""
    return demo_run.lake
