"""Decode and ingest speed, measured side by side in one run.

Reports medians over repeats of: (1) a naive per-record decode (`decode_record` in a loop),
(2) the vectorised `decode_batch`, (3) raw consumption of `__consumer_offsets` with
confluent-kafka and no decoding (the client ceiling on this machine), (4) broker-to-bronze
ingest (`ingest_offsets_topic`), and the peak memory of ingest at two topic sizes.

    .venv/bin/python benchmarks/ingest_bench.py [--records 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pyarrow as pa
from confluent_kafka import Consumer, TopicPartition

from offsets_platform.codec import decode_batch, decode_record
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.kafka.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.settings import KafkaConnection
from offsets_platform.workload.coordinator_history import default_start_ms, generate, generate_batches
from offsets_platform.workload.produce import produce_records

OFFSETS_TOPIC = "__consumer_offsets"


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median_rate(records: int, seconds: list[float]) -> float:
    return records / statistics.median(seconds)


def naive_decode(batches: list[pa.Table], sample: int) -> int:
    keys = batches[0]["key"].to_pylist()[:sample]
    values = batches[0]["value"].to_pylist()[:sample]
    for key, value in zip(keys, values):
        try:
            decode_record(key, value)
        except ValueError:
            pass
    return len(keys)


def raw_consume(bootstrap: str, expected: int) -> None:
    """Consume everything without decoding: the ceiling any ingest on this client can reach."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-raw", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "fetch.max.bytes": 64 * 1024 * 1024,
                         "max.partition.fetch.bytes": 8 * 1024 * 1024, "queued.min.messages": 500_000})
    consumer.assign([TopicPartition(OFFSETS_TOPIC, p, 0) for p in range(50)])
    seen = 0
    while seen < expected:
        seen += len(consumer.consume(num_messages=100_000, timeout=1.0))
    consumer.close()


class PeakMemory:
    """Samples this process's resident memory every 20 ms while active."""

    def __enter__(self) -> "PeakMemory":
        self.process = psutil.Process()
        self.baseline = self.process.memory_info().rss
        self.peak = self.baseline
        self._running = True
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while self._running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    def __exit__(self, *exc_info) -> None:
        self._running = False
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.baseline) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/ingest.json")
    args = parser.parse_args()
    records, repeats = args.records, args.repeats

    print(f"generating {records:,} coordinator records")
    start_ms = default_start_ms()  # one start, so the decoded and the produced records are the same
    batches = list(generate_batches(seed=7, records=records, batch_size=100_000, start_ms=start_ms))
    results: dict[str, object] = {"records": records, "repeats": repeats}

    sample = min(100_000, batches[0].num_rows)
    naive = [timed(lambda: naive_decode(batches, sample)) for _ in range(repeats)]
    results["naive_decode_records_per_s"] = median_rate(sample, naive)
    vectorised = [timed(lambda: [decode_batch(b["key"], b["value"]) for b in batches]) for _ in range(repeats)]
    results["vectorised_decode_records_per_s"] = median_rate(records, vectorised)
    print(f"decode: naive {results['naive_decode_records_per_s']:,.0f}/s, "
          f"vectorised {results['vectorised_decode_records_per_s']:,.0f}/s")

    with tempfile.TemporaryDirectory() as scratch, EmbeddedBroker(Path(scratch) / "broker") as broker:
        results["produce_seconds"] = timed(lambda: produce_records(
            broker.bootstrap_servers, generate(seed=7, records=records, start_ms=start_ms)))
        print(f"produced {records:,} records in {results['produce_seconds']:.1f} s")
        raw = [timed(lambda: raw_consume(broker.bootstrap_servers, records)) for _ in range(repeats)]
        results["raw_consume_records_per_s"] = median_rate(records, raw)
        connection = KafkaConnection(bootstrap_servers=broker.bootstrap_servers)
        ingest_seconds, peaks = [], []
        for repeat in range(repeats):
            lake = Lake(Path(scratch) / f"lake-{repeat}")
            with PeakMemory() as memory:
                result = ingest_offsets_topic(connection, lake, emit=lambda line: None)
            assert result.records_read == records, result.records_read
            ingest_seconds.append(result.seconds)
            peaks.append(memory.growth_mb)
        results["ingest_records_per_s"] = median_rate(records, ingest_seconds)
        results["ingest_peak_memory_growth_mb"] = statistics.median(peaks)
        results["ingest_vs_raw_consume"] = results["ingest_records_per_s"] / results["raw_consume_records_per_s"]
        print(f"raw consume {results['raw_consume_records_per_s']:,.0f}/s, ingest "
              f"{results['ingest_records_per_s']:,.0f}/s ({results['ingest_vs_raw_consume']:.0%} of raw), "
              f"ingest peak memory growth {results['ingest_peak_memory_growth_mb']:.0f} MB")

    # Memory must not grow with topic size: ingest a quarter of the records and compare.
    quarter_records = records // 4
    with tempfile.TemporaryDirectory() as scratch, EmbeddedBroker(Path(scratch) / "broker") as broker:
        produce_records(broker.bootstrap_servers, generate(seed=7, records=quarter_records, start_ms=start_ms))
        with PeakMemory() as memory:
            ingest_offsets_topic(KafkaConnection(bootstrap_servers=broker.bootstrap_servers),
                                 Lake(Path(scratch) / "lake"), emit=lambda line: None)
    results["ingest_peak_memory_growth_mb_quarter"] = memory.growth_mb
    results["quarter_records"] = quarter_records
    print(f"ingest peak memory growth: {memory.growth_mb:.0f} MB for {quarter_records:,} records, "
          f"{results['ingest_peak_memory_growth_mb']:.0f} MB for {records:,}")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
