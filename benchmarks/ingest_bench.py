"""Decode and ingest speed and memory, measured side by side in one run.

Reports medians over repeats of:
  1. naive per-record decode (`decode_record` in a loop) and the vectorised `decode_batch`;
  2. decode + bronze writes of generated batches without a broker, in a child process, with
     its peak resident memory at two sizes (everything the project controls);
  3. on the embedded Apache Kafka broker: raw consumption with confluent-kafka and no decoding
     (the client ceiling on this machine) and broker-to-bronze ingest (`ingest_offsets_topic`),
     each in a fresh child process, alternating, with the child's peak resident memory and the
     broker's share of the CPU time, at two topic sizes, so that memory growth with topic size is
     visible. The records are generated coordinator history in a regular topic laid out like
     `__consumer_offsets` (a real coordinator's own topic is never written to), which ingest
     reads as its `offsets_topic`.

    .venv/bin/python benchmarks/ingest_bench.py [--records 2000000] [--repeats 3]

The two sizes are a quarter of --records and all of them, unless --sizes names others; --groups
and --topic-partitions shape the history as a large cluster's (the generator's `groups` and
`topic_partitions`), e.g. the load run of 10 M records for 10,000 groups and 100,000 partitions:

    .venv/bin/python benchmarks/ingest_bench.py --sizes 1000000,4000000,10000000 \
        --groups 10000 --topic-partitions 100000 --out benchmarks/results/ingest_load.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from offsets_platform.codec import decode_batch, decode_record
from offsets_platform.broker.embedded import EmbeddedBroker
from proving_ground.workload.coordinator_history import default_start_ms, generate, generate_batches
from proving_ground.workload.produce import HISTORY_TOPIC, create_history_topic, produce_records


@dataclass(frozen=True)
class Shape:
    """The generated history's shape: groups alive at once and team topics' partitions (None:
    the generator's defaults, which grow with the records)."""

    groups: int | None = None
    topic_partitions: int | None = None

    def generator(self) -> dict:
        return asdict(self)

    def args(self) -> list[str]:
        return [str(value) if value else "-" for value in (self.groups, self.topic_partitions)]

    @classmethod
    def parse(cls, groups: str, topic_partitions: str) -> "Shape":
        return cls(*(None if value == "-" else int(value) for value in (groups, topic_partitions)))


def median_rate(records: int, seconds: list[float]) -> float:
    return records / statistics.median(seconds)


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def naive_decode(keys: list, values: list) -> None:
    for key, value in zip(keys, values):
        try:
            decode_record(key, value)
        except ValueError:
            pass


def measure_decode(records: int, repeats: int, start_ms: int, shape: Shape) -> dict:
    batches = list(generate_batches(seed=7, records=records, batch_size=100_000, start_ms=start_ms,
                                    **shape.generator()))
    keys, values = batches[0]["key"].to_pylist(), batches[0]["value"].to_pylist()
    naive = [timed(lambda: naive_decode(keys, values)) for _ in range(repeats)]
    vectorised = [timed(lambda: [decode_batch(b["key"], b["value"]) for b in batches]) for _ in range(repeats)]
    return {"naive_decode_records_per_s": median_rate(len(keys), naive),
            "vectorised_decode_records_per_s": median_rate(records, vectorised)}


def child(mode: str, bootstrap: str, lake_root: str, records: int, shape: Shape) -> None:
    """Run in a fresh process: consume or ingest everything, print seconds and peak memory."""
    if mode == "write":
        seconds = write_without_broker(lake_root, records, shape)
    elif mode == "raw":
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-raw", "enable.auto.commit": False,
                             "isolation.level": "read_committed", "fetch.max.bytes": 64 * 1024 * 1024})
        consumer.assign([TopicPartition(HISTORY_TOPIC, p, 0) for p in range(50)])
        started, seen = time.perf_counter(), 0
        while seen < records:
            seen += len(consumer.consume(num_messages=100_000, timeout=1.0))
        seconds = time.perf_counter() - started
    else:
        from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
        from offsets_platform.lake import Lake
        from offsets_platform.settings import KafkaConnection

        result = ingest_offsets_topic(KafkaConnection(bootstrap, offsets_topic=HISTORY_TOPIC), Lake(lake_root),
                                      emit=lambda line: None)
        assert result.records_read == records, result.records_read
        seconds = result.seconds
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"seconds": seconds, "peak_mb": peak_rss_mb(), "cpu_s": usage.ru_utime + usage.ru_stime}))


def peak_rss_mb() -> float:
    """This process's peak resident memory. Not getrusage's ru_maxrss: Linux carries it over from
    the parent through fork and exec, so a child of the benchmark (which holds a million decoded
    records by then) reported at least the parent's size. The kernel's high-water mark of this
    process's own memory (VmHWM) starts afresh at exec."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux; no /proc elsewhere


def write_without_broker(lake_root: str, records: int, shape: Shape) -> float:
    """Decode and append generated batches to bronze exactly as ingest does, with no Kafka in
    the way: the memory of everything the project controls."""
    from datetime import datetime, timezone

    import numpy as np
    import pyarrow as pa

    from offsets_platform.ingest.offsets_topic import IngestResult, write_batch
    from offsets_platform.kafka.offsets_topic import RAW_SCHEMA
    from offsets_platform.lake import Lake
    from offsets_platform.lake.tables import RECORD_TABLES

    lake, result, started = Lake(lake_root), IngestResult(run_id="bench"), datetime.now(timezone.utc)
    next_offset = np.zeros(50, np.int64)
    seconds = 0.0
    for batch in generate_batches(seed=7, records=records, batch_size=250_000, **shape.generator()):
        partitions = batch["partition"].to_numpy()
        offsets = np.empty(len(partitions), np.int64)
        for partition in np.unique(partitions):  # consecutive offsets per partition, as a log has
            rows = np.flatnonzero(partitions == partition)
            offsets[rows] = next_offset[partition] + np.arange(len(rows))
            next_offset[partition] += len(rows)
        raw = pa.table([batch["partition"], pa.array(offsets), batch["timestamp"], batch["key"], batch["value"]],
                       schema=RAW_SCHEMA)
        seconds += timed(lambda raw=raw: write_batch(lake, raw, result, started, {name: {} for name in RECORD_TABLES}, HISTORY_TOPIC))
    return seconds  # the write path only, not the generator


def run_child(mode: str, bootstrap: str, lake_root: Path, records: int, shape: Shape) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, bootstrap, str(lake_root), str(records),
                          *shape.args()], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_broker(records: int, repeats: int, start_ms: int, shape: Shape) -> dict:
    with tempfile.TemporaryDirectory() as scratch, EmbeddedBroker(Path(scratch) / "broker") as broker:
        create_history_topic(broker.bootstrap_servers)
        produced = produce_records(broker.bootstrap_servers, generate(seed=7, records=records, start_ms=start_ms,
                                                                      **shape.generator()))
        print(f"{records:>10,} records produced in {produced.seconds:.0f} s", flush=True)
        broker_process = psutil.Process(broker.pid)
        runs: dict[str, list[dict]] = {"raw": [], "ingest": []}
        for repeat in range(repeats):
            for mode in runs:  # alternating, so both see the same machine
                before = sum(broker_process.cpu_times()[:2])
                run = run_child(mode, broker.bootstrap_servers, Path(scratch) / f"lake-{repeat}", records, shape)
                run["broker_cpu_s"] = sum(broker_process.cpu_times()[:2]) - before
                runs[mode].append(run)
    measured = {"records": records}
    for mode, name in (("raw", "raw_consume"), ("ingest", "ingest")):
        measured[f"{name}_records_per_s"] = median_rate(records, [r["seconds"] for r in runs[mode]])
        measured[f"{name}_seconds"] = statistics.median(r["seconds"] for r in runs[mode])
        measured[f"{name}_peak_mb_runs"] = [r["peak_mb"] for r in runs[mode]]
        measured[f"{name}_peak_mb"] = statistics.median(r["peak_mb"] for r in runs[mode])
        # the broker's part of the CPU time that the broker and the client spent on the run
        measured[f"{name}_broker_cpu_share"] = statistics.median(
            r["broker_cpu_s"] / (r["broker_cpu_s"] + r["cpu_s"]) for r in runs[mode])
    measured["ingest_vs_raw_consume"] = measured["ingest_records_per_s"] / measured["raw_consume_records_per_s"]
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", help="comma-separated topic sizes to measure (default: records/4,records)")
    parser.add_argument("--groups", type=int, help="groups alive at once in the generated history")
    parser.add_argument("--topic-partitions", type=int, help="partitions of the topics the generated groups read")
    parser.add_argument("--out", default="benchmarks/results/ingest.json")
    parser.add_argument("--child", nargs=6, metavar=("MODE", "BOOTSTRAP", "LAKE", "RECORDS", "GROUPS", "PARTITIONS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, bootstrap, lake_root, records, groups, topic_partitions = args.child
        child(mode, bootstrap, lake_root, int(records), Shape.parse(groups, topic_partitions))
        return

    sizes = [int(size) for size in args.sizes.split(",")] if args.sizes else [args.records // 4, args.records]
    shape = Shape(args.groups, args.topic_partitions)
    start_ms = default_start_ms()  # one start, so every measurement sees the same records
    results: dict = {"repeats": args.repeats, "sizes": sizes, "shape": shape.generator(),
                     "decode": measure_decode(min(max(sizes), 1_000_000), args.repeats, start_ms, shape)}
    print(f"decode: naive {results['decode']['naive_decode_records_per_s']:,.0f} records/s, "
          f"vectorised {results['decode']['vectorised_decode_records_per_s']:,.0f} records/s")
    results["write_without_broker"] = []
    for records in sizes:
        with tempfile.TemporaryDirectory() as scratch:
            runs = [run_child("write", "-", Path(scratch) / f"lake-{r}", records, shape) for r in range(args.repeats)]
        measured = {"records": records, "records_per_s": median_rate(records, [r["seconds"] for r in runs]),
                    "peak_mb": statistics.median(r["peak_mb"] for r in runs)}
        results["write_without_broker"].append(measured)
        print(f"{records:>10,} records: decode + bronze writes without a broker {measured['records_per_s']:,.0f}/s "
              f"(peak {measured['peak_mb']:.0f} MB)")
    results["broker"] = []
    for records in sizes:
        measured = measure_broker(records, args.repeats, start_ms, shape)
        results["broker"].append(measured)
        print(f"{records:>10,} records: raw consume {measured['raw_consume_records_per_s']:,.0f}/s "
              f"(peak {measured['raw_consume_peak_mb']:.0f} MB, broker {measured['raw_consume_broker_cpu_share']:.0%} "
              f"of the CPU), ingest {measured['ingest_records_per_s']:,.0f}/s in {measured['ingest_seconds']:.1f} s "
              f"(peak {measured['ingest_peak_mb']:.0f} MB, "
              f"broker {measured['ingest_broker_cpu_share']:.0%} of the CPU), "
              f"ingest/raw {measured['ingest_vs_raw_consume']:.0%}")
    write_results(results, Path(args.out))


def write_results(results: dict, out: Path) -> None:
    """The measurements as JSON, for comparing runs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
