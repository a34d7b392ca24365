"""A refresh in a fresh JVM, as the command line and Dagster's runs start one: Spark's start and
first full refresh, then a second one in the same session, two ways side by side:

- `--compare settings` (the default): with the settings for little data (the runner's choice for a
  refresh of little data, SMALL_DATA_MAX_BYTES: expressions interpreted, one shuffle partition, no
  adaptive execution) beside the session's own (compiled, adaptive);
- `--compare class-archive`: the JVM mapping Spark's class-data archive (offsets_platform.lake.
  class_archive; `offsets-platform install-jars spark-classes` builds it) beside one without it.

Each measurement is a child process of its own (a new JVM, as a run gets), on a copy of one
generated lake (`refresh_paths_bench.generated_lake`: the generator's history written to bronze as
ingest writes it, and two snapshots). The two ways alternate, REPEATS times each, so that other
work on the machine weighs on both alike; medians are printed and written as JSON.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/cold_refresh_bench.py [--records 2000] [--repeats 3]
        [--compare settings|class-archive]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.lake.class_archive import CLASS_ARCHIVE_ENV, archive_path, is_up_to_date
from offsets_platform.models.runner import SMALL_DATA_MAX_BYTES
from refresh_paths_bench import generated_lake

# per comparison, each way's small_data_max_bytes and environment
COMPARISONS = {
    "settings": {"small-data settings": (SMALL_DATA_MAX_BYTES, {}), "session settings": (-1, {})},
    # without: the archive looked for where there is none
    "class-archive": {"class archive": (SMALL_DATA_MAX_BYTES, {}),
                      "no class archive": (SMALL_DATA_MAX_BYTES, {CLASS_ARCHIVE_ENV: "no-class-archive-here.jsa"})},
}

# The child: start Spark, refresh a copy of the lake twice in full, print the three durations.
CHILD = """
import json, shutil, sys, tempfile, time
from pathlib import Path
from offsets_platform.lake.spark import get_spark
from offsets_platform.models import ModelRunner, lake_for_models
bronze, small_data_max_bytes = Path(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory(prefix="cold-refresh-") as folder:
    root = Path(folder) / "lake"
    shutil.copytree(bronze, root)
    started = time.perf_counter()
    spark = get_spark()
    runner = ModelRunner(spark, lake_for_models(root), emit=lambda line: None,
                         small_data_max_bytes=small_data_max_bytes)
    session = time.perf_counter()
    runner.run_all(full_refresh=True)
    first = time.perf_counter()
    runner.run_all(full_refresh=True)
    second = time.perf_counter()
print(json.dumps({"session_s": session - started, "first_refresh_s": first - session,
                  "second_refresh_s": second - first}))
"""


def measure(bronze: Path, small_data_max_bytes: int, environment: dict[str, str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(bronze), str(small_data_max_bytes)],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd(), **environment})
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000, help="bronze records of the generated lake")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="settings")
    parser.add_argument("--out", default="benchmarks/results/cold_refresh_bench.json")
    args = parser.parse_args()
    if args.compare == "class-archive" and not is_up_to_date():
        parser.error(f"no class archive for this Java and pyspark at {archive_path()}: run "
                     "`offsets-platform install-jars spark-classes` first")
    ways = COMPARISONS[args.compare]
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(prefix="cold-refresh-bronze-") as folder:
        bronze = Path(folder) / "lake"
        generated_lake(bronze, args.records)
        for repeat in range(args.repeats):
            for way, (small_data_max_bytes, environment) in ways.items():
                runs[way].append(measure(bronze, small_data_max_bytes, environment))
                print(f"{way} {repeat + 1}/{args.repeats}: " + ", ".join(
                    f"{key} {value:.1f}" for key, value in runs[way][-1].items()), flush=True)
    medians = {way: {key: round(statistics.median(run[key] for run in measured), 2) for key in measured[0]}
               for way, measured in runs.items()}
    for way, values in medians.items():
        print(f"median, {way}: " + ", ".join(f"{key} {value}" for key, value in values.items()))
    write_results({"compare": args.compare, "records": args.records, "repeats": args.repeats,
                   "small_data_max_bytes": SMALL_DATA_MAX_BYTES, "medians": medians, "runs": runs}, Path(args.out))


if __name__ == "__main__":
    main()
