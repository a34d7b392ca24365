"""`make demo`: the main job on the embedded default, start to finish, leaving nothing running.

On a fresh embedded broker:
1. a history of coordinator records is written into `__consumer_offsets` (the embedded broker
   keeps that topic empty on its own, so this is what the log-based path reads), and the Dagster
   `refresh` job runs in process: it ingests the history, takes an admin-API snapshot, and runs
   every Spark SQL model with its Great Expectations checks;
2. the live workload starts: real producers and consumer groups (active, slow until retention
   deletes what it never read, changed subscription, stopped, standalone, Connect); while it
   runs, the `ingest` job (ingest + snapshot, no Spark) runs every few seconds, so the snapshots
   follow the cluster as it changes;
3. more history is written and a last `refresh` ingests only what is new and refreshes the models.
Then it prints a summary, ends the live members and stops the broker.
"""

from __future__ import annotations

import shutil
import threading
import time
from itertools import islice
from pathlib import Path

from dagster import DagsterInstance

from offsets_platform.kafka.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.report import report_path, write_report
from offsets_platform.summary import bronze_summary, models_summary, snapshot_summary
from offsets_platform.workload.coordinator_history import generate
from offsets_platform.workload.live import run_live_workload
from offsets_platform.workload.produce import produce_records

SECONDS_BETWEEN_REFRESHES = 3.0


class _Background:
    """Runs the live workload in a thread and hands back its result or its error."""

    def __init__(self, bootstrap_servers: str, seed: int, scale: float):
        self.result = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(bootstrap_servers, seed, scale), daemon=True)
        self._thread.start()

    def _run(self, bootstrap_servers: str, seed: int, scale: float) -> None:
        try:
            self.result = run_live_workload(bootstrap_servers, seed=seed, scale=scale)
        except BaseException as error:  # re-raised in the demo's thread by finish()
            self.error = error

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def finish(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def run_demo(home: Path, records: int = 300_000, seed: int = 7, live_scale: float = 1.0) -> Lake:
    """Run the demo under `home/demo` (recreated), print what happened, return the lake.

    Args:
        home: the folder whose `demo` subfolder holds the broker's data and the lake.
        records: coordinator records to write into `__consumer_offsets`, in two rounds.
        seed: seed of both workloads.
        live_scale: message volume of the live workload (1.0 takes about 15 s).
    """
    from assets.definitions import defs

    demo_home = home.absolute() / "demo"
    if demo_home.exists():
        print(f"removing the previous demo in {demo_home}")
        shutil.rmtree(demo_home)
    lake = Lake(demo_home / "lake")
    job = defs.resolve_job_def("refresh")
    ingest_job = defs.resolve_job_def("ingest")
    history = generate(seed=seed, records=records)
    first_round = records * 4 // 5
    with EmbeddedBroker(demo_home / "broker") as broker, DagsterInstance.ephemeral() as instance:
        print(f"embedded broker (noida-db) at {broker.bootstrap_servers}, data in {broker.data_dir}")
        run_config = {
            "resources": {"kafka": {"config": {"bootstrap_servers": broker.bootstrap_servers}},
                          "lake": {"config": {"root": str(lake.root)}}},
            # Progress and results, without Dagster's step-by-step debug events.
            "loggers": {"console": {"config": {"log_level": "INFO"}}},
        }

        def refresh(label: str, which=job) -> None:
            started = time.monotonic()
            if not which.execute_in_process(run_config=run_config, instance=instance).success:
                raise SystemExit(f"the {which.name} job failed ({label})")
            print(f"{label}: {which.name} job done in {time.monotonic() - started:.1f} s")

        def write_history(count: int) -> None:
            print(f"writing {count:,} coordinator records into __consumer_offsets")
            produce_records(broker.bootstrap_servers, islice(history, count), progress_every=100_000,
                            progress=lambda done: print(f"  {done:,} of {count:,} records written"))

        write_history(first_round)
        refresh("cycle 1 (before the live workload)")
        print("starting the live workload (real producers and consumer groups)")
        live = _Background(broker.bootstrap_servers, seed, live_scale)
        try:
            cycle = 1
            while live.running:
                time.sleep(SECONDS_BETWEEN_REFRESHES)
                cycle += 1
                refresh(f"cycle {cycle} (snapshot while the live workload runs)", ingest_job)
        finally:
            workload = live.finish()  # waits for it; its own error, if any, is raised here
        try:
            write_history(records - first_round)
            refresh("final cycle (after the live workload)")
            _print_summary(lake, workload)
        finally:
            workload.stop()
    print(f"\ntables are in {lake.root}; the live members and the embedded broker are stopped.")
    return lake


def _print_summary(lake: Lake, workload) -> None:
    print("\nsummary: __consumer_offsets in bronze")
    for line in bronze_summary(lake):
        print("  " + line)
    print("summary: the live cluster (admin-API snapshots)")
    for line in snapshot_summary(lake):
        print("  " + line)
    print(f"  retention: {workload.retention_note}")
    changed = workload.changed_subscription
    print(f"  {changed['group']} left committed offsets on {changed['left_behind_topic']}, "
          f"which it no longer reads")
    for scenario, why in workload.not_exercised.items():
        print(f"  not exercised: {scenario}: {why}")
    print("summary: the Spark SQL models (silver and gold)")
    for line in models_summary(lake):
        print("  " + line)
    # The same answers as figures, in one HTML file that opens offline: <demo home>/reports/.
    report = write_report(lake, report_path(lake))
    print(f"report: {report}")
