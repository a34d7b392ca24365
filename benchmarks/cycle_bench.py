"""A real cluster's cycle: the records its coordinators wrote since the last cycle ingested from
Kafka and refreshed, cycle after cycle, with the time and peak memory of each.

The target of the refresh-cost issue: a cluster whose consumers commit 10,000 offsets a second
(10,000 groups on 100,000 partitions) writes 9 M records in the 15 minutes between two scheduled
refreshes; ingesting and refreshing them must take at most 3 minutes, and the peak memory must
not grow with the history.

On the embedded Apache Kafka broker, each cycle:
1. produces the next `--records` records of one generator stream (the same groups, later times,
   offsets that continue) into a regular 50-partition topic laid out like `__consumer_offsets`
   (a real coordinator's own topic is never written to). After each cycle two admin-API
   snapshots derived from the log are added (`scale_lake.add_snapshots`: the generated history has
   no live groups to describe), which the next cycle's refresh reads. Neither is timed: they stand
   for the cluster's own traffic and the scheduled snapshot;
2. then, timed, in a fresh child process as a scheduled run starts: ingest of the new records from
   Kafka into bronze, Spark's start, and an incremental refresh of every model (the first cycle's
   refresh is a full one: the lake is new). A psutil thread samples the RSS and CPU time of the
   child and its Spark JVM.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/cycle_bench.py \
        [--records 9000000] [--cycles 3] [--groups 10000] [--topic-partitions 100000]

The generator spreads the whole run over about ten days, so a cycle here spans days of the
simulated cluster rather than 15 minutes: the records per cycle and the cluster's shape are the
real cycle's, the commit times are further apart.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from models_bench import sampled
from offsets_platform.broker.embedded import EmbeddedBroker
from proving_ground.workload.coordinator_history import generate
from proving_ground.workload.produce import HISTORY_TOPIC, create_history_topic, produce_records

TARGET_S = 180.0


def child(bootstrap: str, lake_root: str) -> None:
    """Run in a fresh process: ingest what is new, then refresh every model; print timings as JSON."""
    from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models
    from offsets_platform.settings import KafkaConnection

    lake = lake_for_models(lake_root)
    started = time.perf_counter()
    ingested = ingest_offsets_topic(KafkaConnection(bootstrap, offsets_topic=HISTORY_TOPIC), lake,
                                    emit=lambda line: None)
    ingest_s = time.perf_counter() - started
    spark = get_spark()
    spark_start_s = time.perf_counter() - started - ingest_s
    runs = ModelRunner(spark, lake, emit=lambda line: print(f"    {line}", file=sys.stderr, flush=True)).run_all()
    refresh_s = time.perf_counter() - started - ingest_s - spark_start_s
    spark.stop()
    print(json.dumps({"records_ingested": ingested.records_read, "ingest_s": ingest_s, "spark_start_s": spark_start_s,
                      "refresh_s": refresh_s, "modes": sorted({run.mode for run in runs}),
                      "slowest_models": sorted(((run.seconds, run.model) for run in runs), reverse=True)[:5]}))


def one_cycle(bootstrap: str, lake_root: Path) -> dict:
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, __file__, "--child", bootstrap, str(lake_root)],
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    return sampled(process, started, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=9_000_000, help="records the cluster writes per cycle")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--groups", type=int, default=10_000, help="groups alive at once in the generated history")
    parser.add_argument("--topic-partitions", type=int, default=100_000,
                        help="partitions of the topics the generated groups read")
    parser.add_argument("--out", default="benchmarks/results/cycle_bench.json")
    parser.add_argument("--child", nargs=2, metavar=("BOOTSTRAP", "LAKE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from offsets_platform.models import lake_for_models
    from proving_ground.workload.scale_lake import add_snapshots

    stream = generate(seed=7, records=args.records * args.cycles, groups=args.groups,
                      topic_partitions=args.topic_partitions)
    cycles = []
    with tempfile.TemporaryDirectory(prefix="cycle-bench-") as scratch, \
            EmbeddedBroker(Path(scratch) / "broker") as broker:
        create_history_topic(broker.bootstrap_servers)
        lake_root = Path(scratch) / "lake"
        for number in range(1, args.cycles + 1):
            produced = produce_records(broker.bootstrap_servers, itertools.islice(stream, args.records))
            print(f"cycle {number}: {produced.records:,} records produced in {produced.seconds:.0f} s", flush=True)
            cycle = one_cycle(broker.bootstrap_servers, lake_root)
            # the snapshots the next cycle's refresh reads (add_snapshots derives them from bronze)
            add_snapshots(lake_for_models(lake_root))
            cycles.append(cycle)
            print(f"cycle {number}: {cycle['records_ingested']:,} records ingested in {cycle['ingest_s']:.1f} s, "
                  f"Spark started in {cycle['spark_start_s']:.1f} s, models {', '.join(cycle['modes'])} in "
                  f"{cycle['refresh_s']:.1f} s; {cycle['wall_s']:.1f} s in all (target {TARGET_S:.0f} s), "
                  f"peak RSS {cycle['peak_mb']:,.0f} MB (Python {cycle['peak_python_mb']:,.0f} MB), "
                  f"CPU {cycle['cpu_s']:.0f} s, load {cycle['load_1min']:.1f}", flush=True)
            print("  slowest models: " + ", ".join(f"{model} {seconds:.1f} s"
                                                   for seconds, model in cycle["slowest_models"]), flush=True)
    write_results({"records_per_cycle": args.records, "groups": args.groups,
                   "topic_partitions": args.topic_partitions, "target_s": TARGET_S, "cycles": cycles}, Path(args.out))


if __name__ == "__main__":
    main()
