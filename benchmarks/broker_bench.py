"""The embedded broker's start time and memory: medians over repeats.

For each repeat, on a new data folder (the first start also formats it) and again on the same
folder (a restart), it measures the time from `EmbeddedBroker.start()` to clients being able to
use the broker, and the JVM's resident memory then and after 200,000 records were produced to
and consumed from one topic.

    .venv/bin/python benchmarks/broker_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ingest_bench import write_results  # benchmarks/ is on sys.path when this file runs as a script
from offsets_platform.broker.embedded import DEFAULT_HEAP_MB, EmbeddedBroker

RECORDS = 200_000


def timed_start(broker: EmbeddedBroker) -> float:
    started = time.perf_counter()
    broker.start()
    return time.perf_counter() - started


def rss_mb(broker: EmbeddedBroker) -> float:
    return psutil.Process(broker.pid).memory_info().rss / 2**20


def traffic(bootstrap: str) -> None:
    """RECORDS small records produced to a 4-partition topic, then consumed back."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench", 4, 1)])["bench"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for index in range(RECORDS):
        while True:
            try:
                producer.produce("bench", value=b"%08d" % index, partition=index % 4)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    consumer.assign([TopicPartition("bench", p, 0) for p in range(4)])
    seen = 0
    while seen < RECORDS:
        seen += len(consumer.consume(num_messages=10_000, timeout=1.0))
    consumer.commit(asynchronous=False)
    consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/broker.json")
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as scratch:
            first = EmbeddedBroker(Path(scratch) / "broker")
            run = {"first_start_s": timed_start(first), "rss_ready_mb": rss_mb(first)}
            traffic(first.bootstrap_servers)
            run["rss_after_traffic_mb"] = rss_mb(first)
            first.stop()
            again = EmbeddedBroker(Path(scratch) / "broker")
            run["restart_s"] = timed_start(again)
            again.stop()
        runs.append(run)
        print(", ".join(f"{key} {value:.1f}" for key, value in run.items()))
    results = {"repeats": args.repeats, "heap_mb": DEFAULT_HEAP_MB, "cores": psutil.cpu_count(),
               **{key: statistics.median(run[key] for run in runs) for key in runs[0]}}
    print("medians: " + ", ".join(f"{key} {value:.1f}" for key, value in results.items()))
    write_results(results, Path(args.out))


if __name__ == "__main__":
    main()
