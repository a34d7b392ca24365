"""The one place that builds the SparkSession."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

# Settings that make local runs correct and predictable on a small machine; see DESIGN.md's
# known traps (timezone-less timestamps, the 1 GB driver heap, the loopback address).
# TieredStopAtLevel=1 keeps the JVM's just-in-time compilation to its quick first tier: a refresh
# runs many short queries in a fresh JVM, where the optimising tier costs more CPU than it saves
# (benchmarks/models_bench.py: the incremental refresh takes a third less, the full one the same).
# That tier alone gets a small code cache by default, which Spark's generated code fills within
# two refreshes in one process (the JVM then stops compiling): hence the larger cache.
_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.driver.memory": "6g",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.extraJavaOptions": "-Dlog4j2.level=ERROR -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m",
}


def get_spark(master: str = "local[*]", remote: str | None = None, app_name: str = "offsets_platform",
              extra_conf: dict[str, str] | None = None) -> SparkSession:
    """Return the active SparkSession, building it on first use.

    Args:
        master: Spark master URL (`local[*]` by default, or a cluster URL).
        remote: a Spark Connect endpoint (`sc://host:port`); takes precedence over `master`.
        app_name: the application name shown in Spark's UI.
        extra_conf: additional Spark settings.

    Returns:
        The session. Later calls return the same session whatever their arguments, so one
        Dagster run (in-process executor) shares one JVM.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    builder = builder.remote(remote) if remote else builder.master(master)
    for key, value in {**_DEFAULTS, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not remote:  # Spark Connect sessions have no SparkContext
        session.sparkContext.setLogLevel("ERROR")
    return session
