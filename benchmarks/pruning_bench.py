"""The lake under a constant commit rate, with and without pruning: its size and a refresh's cost.

Two lakes receive the same generated coordinator history (proving_ground's BronzeFeed, one ingest
run per cycle, the same records in both). After each cycle both are refreshed (ModelRunner.run_all,
one local Spark session, side by side) and one of them is pruned with `offsets-platform prune`'s
function at horizon 0, so every record the models no longer need leaves. Per cycle it prints the
records and active data bytes of offset_commit_records in each lake, each refresh's seconds and the
prune's. The generated history has no snapshots, so only the key, tombstone and status-window
rules keep records.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/pruning_bench.py --cycles 6 --records 200000 \\
        --out pruning.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from offsets_platform.lake.spark import get_spark
from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.pruning import PRUNED_TABLE, prune_offset_commits
from proving_ground.workload.scale_lake import BronzeFeed


def run(cycles: int, records: int, root: Path) -> list[dict]:
    spark = get_spark(master="local[2]")
    lakes = {name: lake_for_models(root / name) for name in ("pruned", "kept whole")}
    feeds = {name: BronzeFeed(lake, cycles * records) for name, lake in lakes.items()}
    runners = {name: ModelRunner(spark, lake, emit=lambda line: None) for name, lake in lakes.items()}
    rows = []
    for cycle in range(1, cycles + 1):
        row: dict = {"cycle": cycle, "records_ingested": cycle * records}
        for name, lake in lakes.items():
            feeds[name].append(records, f"cycle-{cycle}")
            started = time.perf_counter()
            runners[name].run_all()
            row[f"refresh_s[{name}]"] = round(time.perf_counter() - started, 1)
            if name == "pruned":
                result = prune_offset_commits(spark, lake, horizon=timedelta(0), emit=lambda line: None)
                row["prune_s"] = round(result.seconds, 1)
                row["removed"] = result.removed
            version = lake.version(PRUNED_TABLE)
            row[f"records[{name}]"] = lake.count(PRUNED_TABLE)
            row[f"mb[{name}]"] = round(lake.data_bytes(PRUNED_TABLE, version) / 1e6, 1)
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--records", type=int, default=200_000, help="records ingested per cycle")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pruning-bench-") as folder:
        rows = run(args.cycles, args.records, Path(folder))
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(f"{row[c]:,}" if isinstance(row[c], int) else str(row[c]) for c in columns) + " |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
