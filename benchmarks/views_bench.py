"""How long the quick views take, as a person runs them: a fresh `offsets-platform` process each time.

    .venv/bin/python benchmarks/views_bench.py --home .offsets_platform/demo [--repeats 7]

Times each command (`groups`, `describe GROUP`, `expiring`, `lost`) end to end, interpreter start
included, and beside them `offsets-platform --help`, which loads the command line but reads no
table: the difference is the views' own work. Reports medians; the runs of all commands alternate,
so a busy moment of a shared machine falls on all of them alike. Writes JSON under
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script

RESULTS = Path(__file__).resolve().parent / "results"


def commands(home: str, group: str) -> dict[str, list[str]]:
    return {"--help": ["--help"], "groups": ["groups", "--home", home],
            "describe": ["describe", group, "--home", home], "expiring": ["expiring", "--home", home],
            "lost": ["lost", "--home", home]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", required=True, help="a home whose lake the models have refreshed (make demo)")
    parser.add_argument("--group", default="billing-slow", help="the group `describe` asks about")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    runs = commands(args.home, args.group)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, argv in runs.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "offsets_platform.cli", *argv], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name, median in medians.items():
        print(f"{name:<10} median {median:.2f} s  (runs {', '.join(f'{s:.2f}' for s in seconds[name])})")
    write_results({"home": args.home, "repeats": args.repeats, "medians_s": medians, "runs_s": seconds},
                  RESULTS / "views_bench.json")


if __name__ == "__main__":
    main()
