"""`offsets-platform`: the command line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from offsets_platform.cli.alerts import add_alerts_command
from offsets_platform.cli.direct import add_direct_commands
from offsets_platform.cli.args import NotWhoRuns, cluster_and_lake, lake_of
from offsets_platform.cli.plans import add_plan_commands
from offsets_platform.cli.reset import add_reset_command
from offsets_platform.cli.prune import add_prune_command
from offsets_platform.cli.rebase import add_rebase_command
from offsets_platform.cli.spark_cluster import add_spark_cluster_command
from offsets_platform.cli.metrics import add_metrics_commands
from offsets_platform.cli.views import add_view_commands
from offsets_platform.ingest.offsets_topic import DEFAULT_LEASE_WAIT_S
from offsets_platform.broker.embedded import DEFAULT_HEAP_MB
from offsets_platform.jars import INSTALL_STEPS
from offsets_platform.lake.spark import DEFAULT_CONNECT_PORT, serve_spark_connect
from offsets_platform.settings import Settings


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
    from offsets_platform.views.summary import bronze_summary

    target = cluster_and_lake(args, settings)
    if target is None:
        return 2
    connection, lake = target
    if args.offsets_topic:
        connection = replace(connection, offsets_topic=args.offsets_topic)
    print(f"ingesting {connection.offsets_topic} from {connection.describe()} into {lake.root}")
    result = ingest_offsets_topic(connection, lake, lease_wait_s=args.wait, accept_gap=args.accept_gap)
    print(f"read {result.records_read:,} records, rejected {result.rejected:,}, in {result.seconds:.1f} s")
    for line in bronze_summary(lake):
        print("  " + line)
    return 0


def _snapshot(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.ingest.snapshots import snapshot_cluster
    from offsets_platform.views.summary import snapshot_summary

    target = cluster_and_lake(args, settings)
    if target is None:
        return 2
    connection, lake = target
    snapshot_cluster(connection, lake, offsets_retention_fallback_minutes=args.offsets_retention_minutes)
    for line in snapshot_summary(lake):
        print(line)
    return 0


def _models(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunError, ModelRunner
    from offsets_platform.views.summary import models_summary

    lake = lake_of(args, settings, must_exist=True)
    print(f"running the Spark SQL models on the lake in {lake.root}")
    runner = ModelRunner(get_spark(master=settings.spark_master, remote=settings.spark_remote), lake,
                         variables={"offsets_retention_minutes_fallback": args.offsets_retention_minutes})
    try:
        runner.run_all(select=args.select or None, full_refresh=args.full_refresh)
    except ModelRunError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for line in models_summary(lake):
        print(line)
    return 0


def _broker(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.broker.embedded import EmbeddedBroker
    from offsets_platform.broker.jvm import kafka_version

    overrides = dict(args.override or [])
    data_dir = Path(args.data_dir) if args.data_dir else settings.broker_data_dir
    broker = EmbeddedBroker(data_dir, port=args.port, overrides=overrides, heap_mb=args.heap_mb)
    print(f"starting Apache Kafka {kafka_version()} (KRaft, broker and controller in one JVM) on "
          f"{broker.bootstrap_servers}, data in {broker.data_dir} ...", flush=True)
    # SIGTERM ends the broker like Ctrl-C does: a controlled shutdown, then exit code 0.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with broker:
            print(f"ready: {broker.bootstrap_servers}", flush=True)
            while broker.running:
                time.sleep(0.5)
            print(f"error: the broker stopped on its own; see {broker.log_file}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("stopping the broker ...", flush=True)
    print("broker stopped", flush=True)
    return 0


def _install_jars(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.jars import install_jars

    install_jars(tuple(args.sets) or INSTALL_STEPS, force=args.force, say=lambda line: print(line, flush=True))
    return 0


def _jar_set(name: str) -> str:
    if name not in INSTALL_STEPS:
        raise argparse.ArgumentTypeError(f"nothing named {name!r} to install: choose from {', '.join(INSTALL_STEPS)}")
    return name


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _key_value(item: str) -> tuple[str, str]:
    key, separator, value = item.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"--override expects KEY=VALUE, got {item!r}")
    return key.strip(), value.strip()


def _spark_server(args: argparse.Namespace, settings: Settings) -> int:
    endpoint = f"sc://{args.host}:{args.port}"
    print(f"starting a Spark Connect server on {endpoint} (Spark master {settings.spark_master}) ...", flush=True)
    serve_spark_connect(args.host, args.port, master=settings.spark_master, on_ready=lambda: print(
        f"ready: runs with OFFSETS_PLATFORM_SPARK_REMOTE={endpoint} use it; Ctrl-C or SIGTERM stops it",
        flush=True))
    print("Spark Connect server stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="offsets-platform", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="read __consumer_offsets of a cluster into bronze")
    ingest.add_argument("--bootstrap-server", help="host:port of the cluster")
    ingest.add_argument("--home", help="folder holding the lake")
    ingest.add_argument("--offsets-topic", help="read this topic instead of __consumer_offsets: a regular topic "
                        "of the same layout (a mirror, or generated history); default $OFFSETS_PLATFORM_OFFSETS_TOPIC")
    ingest.add_argument("--wait", type=float, default=DEFAULT_LEASE_WAIT_S, metavar="SECONDS",
                        help="how long to wait while another ingest of the same lake runs, then give up "
                        f"(default {DEFAULT_LEASE_WAIT_S:.0f}; 0: do not wait)")
    ingest.add_argument("--accept-gap", action="store_true",
                        help="where records were deleted before ingest read them, read on from the log start "
                        "and record how many were skipped, instead of stopping")
    ingest.set_defaults(run=_ingest)

    snapshot = commands.add_parser("snapshot", help="append an admin-API snapshot of a cluster to the lake")
    snapshot.add_argument("--bootstrap-server", help="host:port of the cluster")
    snapshot.add_argument("--home", help="folder holding the lake")
    snapshot.add_argument("--offsets-retention-minutes", type=int, default=10080,
                          help="offsets.retention.minutes to assume when the broker does not expose it")
    snapshot.set_defaults(run=_snapshot)

    models = commands.add_parser("models", help="run the Spark SQL models over the lake (silver and gold)")
    models.add_argument("--home", help="folder holding the lake")
    models.add_argument("--select", action="append", metavar="MODEL", help="run only this model (repeatable)")
    models.add_argument("--full-refresh", action="store_true",
                        help="run every model from scratch, even one whose inputs are unchanged")
    models.add_argument("--offsets-retention-minutes", type=int, default=10080,
                        help="offsets.retention.minutes when no snapshot knows the broker's")
    models.set_defaults(run=_models)

    broker = commands.add_parser("broker", help="run Apache Kafka (the embedded broker) in the foreground")
    broker.add_argument("--port", type=int, default=9092, help="client port on 127.0.0.1 (default 9092)")
    broker.add_argument("--data-dir", help="the broker's folder (default: $OFFSETS_PLATFORM_HOME/broker)")
    broker.add_argument("--override", action="append", metavar="KEY=VALUE", type=_key_value,
                        help="a broker config, for example offsets.retention.minutes=5 (repeatable)")
    broker.add_argument("--heap-mb", type=int, default=DEFAULT_HEAP_MB, help="the JVM's maximum heap")
    broker.set_defaults(run=_broker)

    jars = commands.add_parser("install-jars", help="fetch the Java jars the product runs with (Maven; cached)",
                               description="Fetch Apache Kafka's jars, Delta Lake's Spark jars and Spark's s3a "
                               "connector with Maven into the environment's share/offsets-platform/ folder, then "
                               "build Spark's class-data archive (spark-classes: a training refresh of one to two "
                               "minutes), which every Spark the product starts maps to start faster. A set already "
                               "fetched from the same pom, and an archive built for the same Java and pyspark, are "
                               "left alone.")
    jars.add_argument("sets", nargs="*", type=_jar_set, metavar="SET",
                      help=f"only these ({', '.join(INSTALL_STEPS)}; default: all)")
    jars.add_argument("--force", action="store_true", help="fetch and build again even what is already there")
    jars.set_defaults(run=_install_jars)

    server = commands.add_parser("spark-server", help="a long-lived Spark Connect server that refreshes reuse")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    server.add_argument("--port", type=int, default=DEFAULT_CONNECT_PORT)
    server.set_defaults(run=_spark_server)

    add_view_commands(commands)
    add_metrics_commands(commands)
    add_alerts_command(commands)
    add_plan_commands(commands)
    add_reset_command(commands)
    add_direct_commands(commands)
    add_rebase_command(commands)
    add_prune_command(commands)
    add_spark_cluster_command(commands)

    args = parser.parse_args(argv)
    try:
        return args.run(args, Settings.from_env())
    except BrokenPipeError:
        # the reader went away (`| head`): what it read is all it wanted, nothing went wrong.
        # stdout goes to /dev/null so that Python's flush at exit does not fail on the pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:
        if not isinstance(error, _errors_told_plainly()):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("offsets-platform")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def _errors_told_plainly() -> tuple[type[Exception], ...]:
    """The errors whose message says what happened and what to do: printed as one line, exit 1.
    Imported here, when one was raised, so that each command loads only the modules it uses."""
    from offsets_platform.broker.embedded import BrokerStartFailed, PortInUse
    from offsets_platform.broker.jvm import KafkaNotInstalled
    from offsets_platform.kafka.group_calls import GroupCallError
    from offsets_platform.cleanup.plans import PlanError
    from offsets_platform.cleanup.reset_targets import ResetSpecError
    from offsets_platform.ingest.log_check import LogMismatch
    from offsets_platform.ingest.offsets_topic import IngestError
    from offsets_platform.jars import JarsNotInstalled
    from offsets_platform.jars.class_archive import ClassArchiveNotBuilt
    from offsets_platform.kafka.errors import BrokerUnreachable, NotAuthorized
    from offsets_platform.lake import MissingTable, NoLake, OutdatedTable
    from offsets_platform.lake.lease import LeaseBusy
    from offsets_platform.lake.spark import DeltaJarsMissing, SparkConnectError

    return (BrokerStartFailed, BrokerUnreachable, ClassArchiveNotBuilt, DeltaJarsMissing, GroupCallError, IngestError, JarsNotInstalled,
            KafkaNotInstalled, LeaseBusy, LogMismatch, MissingTable, NoLake, NotAuthorized, NotWhoRuns, OutdatedTable, PlanError, PortInUse,
            ResetSpecError, SparkConnectError)


if __name__ == "__main__":
    sys.exit(main())
