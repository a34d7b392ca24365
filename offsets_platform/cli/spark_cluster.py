"""`offsets-platform spark-cluster`: a Spark standalone cluster on loopback, in the foreground."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from offsets_platform.lake.spark_cluster import DEFAULT_MASTER_PORT, SparkClusterError, StandaloneCluster
from offsets_platform.settings import Settings


def add_spark_cluster_command(commands) -> None:
    cluster = commands.add_parser("spark-cluster", help="a Spark standalone master and workers on 127.0.0.1 "
                                                        "(Ctrl-C stops them); runs use it with "
                                                        "OFFSETS_PLATFORM_SPARK_MASTER")
    cluster.add_argument("--port", type=int, default=DEFAULT_MASTER_PORT,
                         help=f"the master's port (default {DEFAULT_MASTER_PORT})")
    cluster.add_argument("--workers", type=int, default=2, help="how many workers (default 2)")
    cluster.add_argument("--cores", type=int, default=1, help="cores each worker offers (default 1)")
    cluster.add_argument("--memory", default="2g", help="memory each worker offers (default 2g)")
    cluster.add_argument("--folder", help="logs and scratch space (default: $OFFSETS_PLATFORM_HOME/spark-cluster)")
    cluster.set_defaults(run=_spark_cluster)


def _spark_cluster(args: argparse.Namespace, settings: Settings) -> int:
    folder = Path(args.folder) if args.folder else settings.home / "spark-cluster"
    cluster = StandaloneCluster(folder, port=args.port, workers=args.workers, cores_per_worker=args.cores,
                                memory_per_worker=args.memory)
    print(f"starting a Spark master on {cluster.master_url} and {args.workers} workers "
          f"({args.cores} cores, {args.memory} each), logs in {cluster.folder} ...", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops the cluster like Ctrl-C does
    try:
        with cluster:
            print(f"ready: runs with OFFSETS_PLATFORM_SPARK_MASTER={cluster.master_url} use it; the master's "
                  f"page is http://127.0.0.1:{cluster.web_port}", flush=True)
            while cluster.running:
                time.sleep(0.5)
            print(f"error: a process of the cluster stopped on its own; see the logs in {cluster.folder}",
                  file=sys.stderr)
            return 1
    except SparkClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping the Spark cluster ...", flush=True)
    print("Spark cluster stopped", flush=True)
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
