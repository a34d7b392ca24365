"""`make demo`: the main job on the embedded default, start to finish, leaving nothing running.

Starts a fresh embedded broker, writes a realistic history of coordinator records into its
`__consumer_offsets`, runs the Dagster `refresh` job in process, writes more history, runs the
job again (which reads only the new records), prints a summary and stops the broker.
"""

from __future__ import annotations

import shutil
import time
from itertools import islice
from pathlib import Path

from dagster import DagsterInstance

from offsets_platform.kafka.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.summary import bronze_summary
from offsets_platform.workload.coordinator_history import generate
from offsets_platform.workload.produce import produce_records


def run_demo(home: Path, records: int = 300_000, seed: int = 7) -> Lake:
    """Run the demo under `home/demo` (recreated), print what happened, return the lake."""
    from assets.definitions import defs

    demo_home = home.absolute() / "demo"
    if demo_home.exists():
        print(f"removing the previous demo in {demo_home}")
        shutil.rmtree(demo_home)
    lake = Lake(demo_home / "lake")
    job = defs.resolve_job_def("refresh")
    first_round = records * 4 // 5
    history = generate(seed=seed, records=records)
    with EmbeddedBroker(demo_home / "broker") as broker:
        print(f"embedded broker (noida-db) at {broker.bootstrap_servers}, data in {broker.data_dir}")
        run_config = {
            "resources": {"kafka": {"config": {"bootstrap_servers": broker.bootstrap_servers}},
                          "lake": {"config": {"root": str(lake.root)}}},
            # Progress and results, without Dagster's step-by-step debug events.
            "loggers": {"console": {"config": {"log_level": "INFO"}}},
        }
        with DagsterInstance.ephemeral() as instance:
            for round_number, count in enumerate((first_round, records - first_round), start=1):
                print(f"round {round_number}: writing {count:,} coordinator records into __consumer_offsets")
                produce_records(broker.bootstrap_servers, islice(history, count), progress_every=50_000,
                                progress=lambda done: print(f"  {done:,} of {count:,} records written"))
                started = time.monotonic()
                result = job.execute_in_process(run_config=run_config, instance=instance)
                if not result.success:
                    raise SystemExit(f"the refresh job failed in round {round_number}")
                print(f"round {round_number}: refresh job done in {time.monotonic() - started:.1f} s")
    print("\nsummary")
    for line in bronze_summary(lake):
        print("  " + line)
    print(f"\ntables are in {lake.root}; the embedded broker is stopped.")
    return lake
