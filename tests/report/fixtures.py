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


@dataclass(frozen=True)
class CleanedDemo:
    before: Lake  # the demo's own lake: its tables as the last refresh left them, before the apply showed
    after: Lake  # a copy, refreshed by the `refresh` job once the apply's tombstones were in the log
    plan_id: str  # the plan the demo applied
    deleted: frozenset  # (group, topic, partition) of each offset the apply deleted


_cleaned: list[CleanedDemo] = []


@pytest.fixture(scope="session")
def cleaned_demo(demo_run, tmp_path_factory) -> CleanedDemo:
    """The demo before and after its applied cleanup reached the tables: a copy of its home (lake
    and broker data), its broker started again on that data, and one more `refresh` job run, as
    the next scheduled refresh does. Memoised like the demo itself."""
    if not _cleaned:
        import shutil

        from dagster import DagsterInstance

        from offsets_platform_dagster.definitions import defs
        from offsets_platform.broker.embedded import EmbeddedBroker
        from offsets_platform.models.project import lake_for_models
        from proving_ground.demo import DEMO_STATUS_MIN_DISTANCE_S

        audit = demo_run.lake.read_arrow("cleanup_audit").to_pylist()
        deleted = frozenset((r["group"], r["topic"], r["partition"]) for r in audit if r["outcome"] == "deleted")
        (plan_id,) = {r["plan_id"] for r in audit if r["outcome"] == "deleted"}
        home = tmp_path_factory.mktemp("cleaned_demo") / "demo"
        shutil.copytree(demo_run.home / "demo", home)
        after = lake_for_models(home / "lake")
        with EmbeddedBroker(home / "broker") as broker:
            run_config = {"resources": {
                "kafka": {"config": {"bootstrap_servers": broker.bootstrap_servers}},
                "lake": {"config": {"root": str(after.root)}},
                "models": {"config": {"consumer_status_min_distance_seconds": DEMO_STATUS_MIN_DISTANCE_S}}}}
            result = defs.resolve_job_def("refresh").execute_in_process(run_config=run_config,
                                                                        instance=DagsterInstance.ephemeral())
            assert result.success, "the refresh after the demo's cleanup failed"
        _cleaned.append(CleanedDemo(demo_run.lake, after, plan_id, deleted))
    return _cleaned[0]
