"""The one place that builds a SparkSession, and the long-lived Spark Connect server.

Every session this process starts carries Delta Lake (delta-spark): its jars, which `offsets-platform
install-jars` fetches from Maven Central (offsets_platform/jars/delta.pom.xml) into the environment's
`share/offsets-platform/delta-jars` (or `$OFFSETS_PLATFORM_DELTA_JARS`), its SQL extension and its
catalog, so `spark.read.format("delta")`, `MERGE INTO` and the other Delta commands work. A Spark
Connect client gets them from its server, which is started here too.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator
from urllib.parse import urlparse

from offsets_platform.lake import class_archive
from offsets_platform.lake.storage import LAKE_URI_ENV, S3Access, is_object_store

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_CONNECT_PORT = 15002  # Spark Connect's own default

# Settings of a session, which a Spark Connect client sets on its server-side session too. Spark
# writes timezone-less timestamps unless told to write TIMESTAMP_MICROS (docs/design.md, "Known
# traps").
_SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Delta rebuilds a table version's state (its file list) with this many tasks; its default of
    # 50 made every versioned read of a small table run 50 tasks.
    "spark.databricks.delta.snapshotPartitions": "1",
    # Delta's data skipping parses every file's statistics to prune the files a query reads,
    # which made each scan's file listing a heavier job. The models read whole tables, so it
    # pruned nothing; nor do the writes collect the statistics it would use.
    "spark.databricks.delta.stats.skipping": "false",
    "spark.databricks.delta.stats.collect": "false",
}

# Settings of the JVM, fixed when it starts: set only when this process starts it (local mode,
# or the Connect server below): a driver heap above the 1 GB default, as in local mode the driver
# also runs every task of the models' joins over millions of records, and the loopback address
# (docs/design.md, "Known traps").
# Spark's class-data archive, where one was built for this Java and pyspark, is added to these
# options when the JVM starts (offsets_platform.lake.class_archive).
# The JIT's quick first tier only (_QUICK_JIT, below) for a JVM of one run; every tier for the
# Connect server's. That tier alone gets a small code cache by default, which Spark's generated
# code fills within two refreshes in one process (the JVM then stops compiling): hence the larger
# cache.
# Spark keeps the classes it generates for 100 plans by default; one refresh compiles more than
# that, so a long-lived JVM compiled most of them again on every refresh.
# The JVM's own time zone is UTC, like the sessions': where the machine's is another, Delta
# rebuilds a table's whole file list after every commit to check the list it kept in the
# version's checksum (Snapshot.allFilesInCrcVerificationForceEnabled, Delta 4.4), one more Spark
# job per model written. The models' timestamps follow the session's zone, not the JVM's.
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_JVM_CONF = {
    "spark.driver.memory": "6g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    _JAVA_OPTIONS: "-Dlog4j2.level=ERROR -Duser.timezone=UTC -XX:ReservedCodeCacheSize=256m",
    "spark.sql.codegen.cache.maxEntries": "2000",
}

# The just-in-time compiler's quick first tier only, for a JVM that serves one run: a refresh in a
# fresh JVM runs many short queries, where the optimising tier costs more CPU than it saves
# (benchmarks/models_bench.py: the incremental refresh takes a third less, the full one the same).
# A long-lived JVM (the Connect server) keeps every tier: most of a small refresh's time there is
# Spark planning each query on the driver, the same code again and again, which the optimising
# tier makes faster once it has compiled it (benchmarks/README.md, "The server's compiler").
_QUICK_JIT = "-XX:TieredStopAtLevel=1"


# The driver's heap when this process starts the JVM, instead of _JVM_CONF's: less where several
# sessions share a machine's memory (make test runs three), more for a larger lake in local mode.
DRIVER_MEMORY_ENV = "OFFSETS_PLATFORM_SPARK_DRIVER_MEMORY"

DELTA_JARS_ENV = "OFFSETS_PLATFORM_DELTA_JARS"

# Delta's SQL extension and catalog: static settings, fixed when the JVM starts.
# Ingest writes with delta-rs (deltalake 1.6.6), which cannot read a table with deletion vectors.
# delta-spark turns them on for the tables it creates or replaces (CREATE OR REPLACE, saveAsTable)
# when this default says so, as a cluster's spark-defaults.conf may; setting it here, above any
# such file, keeps every table this project's sessions create readable by delta-rs
# (tests/lake/test_delta_interop.py).
_DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
}


class DeltaJarsMissing(RuntimeError):
    """Delta's Spark jars for this pyspark are not installed; the message says what to run."""


def delta_jars_dir() -> Path:
    """Where Delta's Spark jars are: $OFFSETS_PLATFORM_DELTA_JARS, else the virtual environment's
    share folder, where `offsets-platform install-jars` puts them."""
    configured = os.environ.get(DELTA_JARS_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "share" / "offsets-platform" / "delta-jars"


def delta_jars() -> list[Path]:
    """Every jar of the installed Delta set (delta-spark and its own dependencies).

    Raises:
        DeltaJarsMissing: the folder holds no delta-spark jar built for this pyspark's Spark line
            (pyspark upgraded without running install-jars again counts as missing: Delta's jars are
            built per Spark minor release). No session is started without them: the lake's tables
            would otherwise fail later, on the first Delta read, with a less helpful error.
    """
    folder = delta_jars_dir()
    spark_line = ".".join(version("pyspark").split(".")[:2])
    artifact = f"delta-spark_{spark_line}_2.13"
    if not sorted(folder.glob(f"{artifact}-*.jar")):
        raise DeltaJarsMissing(
            f"Delta Lake's Spark jars for Spark {spark_line} ({artifact}) are not in {folder}. Run "
            "`offsets-platform install-jars delta` (in a checkout, any `make` target that installs does); "
            f"set {DELTA_JARS_ENV} if they are elsewhere.")
    return sorted(folder.glob("*.jar"))


S3_JARS_ENV = "OFFSETS_PLATFORM_S3_JARS"


class S3JarsMissing(RuntimeError):
    """The lake is on object storage and Spark's s3a connector is not installed."""


def s3_jars_dir() -> Path:
    """Where Spark's s3a connector (hadoop-aws and the AWS SDK modules it uses) is:
    $OFFSETS_PLATFORM_S3_JARS, else the environment's share folder, where `offsets-platform install-jars` puts it."""
    configured = os.environ.get(S3_JARS_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "share" / "offsets-platform" / "s3-jars"


def s3_jars(required: bool = False) -> list[Path]:
    """Every jar of the installed s3a set; none when it is not installed.

    Raises:
        S3JarsMissing: `required` (the lake is on object storage) and hadoop-aws is not there in
            the Hadoop version pyspark ships (a different one fails on the first read).
    """
    folder = s3_jars_dir()
    hadoop = _pyspark_hadoop_version()
    if not sorted(folder.glob(f"hadoop-aws-{hadoop}.jar")):
        if required:
            raise S3JarsMissing(
                f"the lake is on object storage ({LAKE_URI_ENV}), and Spark's s3a connector for Hadoop {hadoop} "
                f"(hadoop-aws-{hadoop}) is not in {folder}. Run `offsets-platform install-jars s3` (in a checkout, "
                f"any `make` target that installs does); set {S3_JARS_ENV} if it is elsewhere.")
        return []
    return sorted(folder.glob("*.jar"))


def _pyspark_hadoop_version() -> str:
    """The Hadoop release of pyspark's own jars (hadoop-client-api-<version>.jar)."""
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    return jars[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar") if jars else "unknown"


def _delta_session_conf() -> dict[str, str]:
    """The jars and settings a JVM this process starts needs for Delta, and for a lake on object
    storage (s3a's jars and its settings, none of them secret). spark.jars also ships the jars to
    a cluster's executors, which run Delta's reader and writer."""
    on_object_store = is_object_store(os.environ.get(LAKE_URI_ENV, "").strip())
    jars = [*delta_jars(), *s3_jars(required=on_object_store)]
    conf = {"spark.jars": ",".join(str(jar) for jar in jars), **_DELTA_CONF}
    if on_object_store:
        conf.update(S3Access.from_env().spark_conf())
    return conf


class SparkConnectError(RuntimeError):
    """No Spark Connect server answers at the endpoint, or a server cannot listen where asked."""


def get_spark(master: str = "local[*]", remote: str | None = None, app_name: str = "offsets_platform",
              extra_conf: dict[str, str] | None = None, long_lived: bool = False) -> SparkSession:
    """Return the active SparkSession, building it on first use.

    Args:
        master: Spark master URL (`local[*]` by default, or a cluster URL).
        remote: a Spark Connect endpoint (`sc://host:port`); takes precedence over `master`.
        app_name: the application name shown in Spark's UI.
        extra_conf: additional Spark settings; `spark.jars` and `spark.driver.extraJavaOptions`
            are added to the project's own rather than replacing them.
        long_lived: the JVM this call starts serves many refreshes (the Connect server): its
            just-in-time compiler keeps every tier (`_QUICK_JIT`).

    Returns:
        The session. Later calls return the same session whatever their arguments, so one
        Dagster run (in-process executor) shares one JVM.

    Raises:
        SparkConnectError: `remote` is given and nothing accepts connections there (the
            client would otherwise retry for minutes without saying why).
        DeltaJarsMissing: the session would start a JVM (no `remote`) and Delta's jars are not
            installed.
    """
    from pyspark.sql import SparkSession  # here: the commands that need no Spark start without it

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if remote:
        _check_reachable(remote)
        builder, conf = builder.remote(remote), {**_SESSION_CONF, **(extra_conf or {})}
    else:
        delta = _delta_session_conf()
        jvm = {**_JVM_CONF, **({"spark.driver.memory": os.environ[DRIVER_MEMORY_ENV]}
                               if os.environ.get(DRIVER_MEMORY_ENV) else {})}
        jvm[_JAVA_OPTIONS] = " ".join(filter(None, [jvm[_JAVA_OPTIONS], "" if long_lived else _QUICK_JIT,
                                                    class_archive.java_options()]))
        conf = {**_SESSION_CONF, **jvm, **delta, **_shuffle_partitions(master), **(extra_conf or {})}
        # more jars and JVM options, beside the project's rather than instead
        for key, separator, ours in (("spark.jars", ",", delta["spark.jars"]), (_JAVA_OPTIONS, " ", jvm[_JAVA_OPTIONS])):
            if extra_conf and key in extra_conf:
                conf[key] = separator.join(filter(None, [ours, extra_conf[key]]))
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not remote:  # Spark Connect sessions have no SparkContext
        session.sparkContext.setLogLevel("ERROR")
    return session


def _shuffle_partitions(master: str) -> dict[str, str]:
    """One shuffle partition per core of a local master (Spark's default is 200).

    Set where the JVM starts, so a Connect server's own cores decide for its clients. The models'
    shuffles are small after the first full refresh, and each map task writes one file per
    partition. Measured side by side on 2 cores, 8 partitions cost an incremental refresh through
    the server a fifth more CPU than 2, and did not make the 10 M-record full refresh faster.
    Other masters keep Spark's default; adaptive execution merges small partitions there.
    """
    match = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master)
    if not match:
        return {}
    cores = match.group(1) or "1"
    return {"spark.sql.shuffle.partitions": str(os.cpu_count() or 1) if cores == "*" else cores}


# Settings of a session for a refresh of little data, changed at run time:
# - expressions interpreted rather than compiled: Spark compiles each query's expressions and
#   operators to Java classes (code generation, whole stages at a time) before it runs them. On a
#   few thousand rows compiling costs more than it saves, most of all in a fresh JVM, where the
#   compiler itself runs cold: the first full refresh of a generated lake of 2,000 records took a
#   median 18.2 s interpreted against 23.9 s compiled, the second one in the same session, with the
#   compiled classes cached, about 9.6 s either way (benchmarks/cold_refresh_bench.py);
# - one shuffle partition and no adaptive execution: a shuffle of a few hundred rows is quicker
#   in one task than split over the cores, and adaptive execution re-plans each query stage by
#   stage, a round of driver work per stage (a model such as unconsumed_messages runs dozens of
#   stages);
# - no broadcast joins: Spark broadcasts every join side under 10 MB, and each broadcast is a job
#   of its own (run the small side, collect it, send it) before the query's job starts; joined in
#   the query's one shuffle partition instead, a warm refresh of the tests' small lake took a
#   median 9.5 s against 10.9 s, faster or as fast in each of 9 alternating runs (coordinator_metrics
#   ran 3 jobs instead of 6, unconsumed_messages 6 instead of 10).
_SMALL_DATA = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
               "spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false",
               "spark.sql.autoBroadcastJoinThreshold": "-1"}


@contextmanager
def small_data_settings(spark: SparkSession) -> Iterator[None]:
    """Within the block, the session runs its queries with the settings for little data
    (`_SMALL_DATA`); its own settings come back afterwards."""
    before = {key: spark.conf.get(key, None) for key in _SMALL_DATA}
    for key, value in _SMALL_DATA.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


# the thread's local properties that SparkContext.setJobGroup sets
_JOB_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


@contextmanager
def labelled_jobs(spark: SparkSession, label: str) -> Iterator[None]:
    """Within the block, the Spark jobs this thread starts carry `label`: as their job group and
    description (their SQL queries' too) with a local Spark, where the Spark UI, the history
    server and an event log show it, and as a tag through Spark Connect. A refresh runs two models
    at once, so without it the jobs of one model cannot be told from the other's. Per thread."""
    if _through_connect(spark):
        tag = re.sub(r"[^A-Za-z0-9_.-]", "_", label)  # a tag may not hold a comma
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    context = spark.sparkContext
    # what the thread had (a notebook's own job group), set again afterwards
    before = {key: context.getLocalProperty(key) for key in _JOB_GROUP_PROPERTIES}
    context.setJobGroup(label, label)
    try:
        yield
    finally:
        for key, value in before.items():
            context.setLocalProperty(key, value)


def lazy_sql(spark: SparkSession, sql: str) -> "DataFrame":
    """A DataFrame of a query, analysed only when it is used.

    Through Spark Connect, `spark.sql(sql)` first sends the query as a command, to learn whether
    it is one: a round trip and an analysis on the server before the DataFrame is even used. A
    model's query never is a command, so here it becomes a lazy plan of the pinned pyspark's
    internal SQL relation, and the server analyses it when its columns are asked for and when it
    is written (tests/lake/test_spark_connect.py runs every model through a server).
    """
    if _through_connect(spark):
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
        from pyspark.sql.connect.plan import SQL

        return ConnectDataFrame(SQL(sql), spark)
    return spark.sql(sql)


def to_arrow(frame: "DataFrame") -> "pa.Table":
    """The frame's rows as Arrow, as `frame.toArrow()` gives them, with one analysis of its query.

    Through Spark Connect, `toArrow()` first asks the server for the frame's schema (a round trip
    and an analysis of the whole query) and then runs the query, whose answer carries the same
    schema: here the query is only run (the pinned pyspark's internal `_to_table`, then the same
    cast as `toArrow`'s). A model's small result is collected so: the second analysis was about a
    sixth of what collecting it cost through a server (benchmarks/README.md, "The server's
    compiler"; tests/lake/test_spark_connect.py runs every model through a server).
    """
    if _through_connect(frame):
        from pyspark.sql.pandas.types import to_arrow_schema

        table, schema = frame._to_table()
        return table.cast(to_arrow_schema(schema if schema is not None else frame.schema,
                                          error_on_duplicated_field_names_in_struct=True, timezone="UTC"))
    return frame.toArrow()


def _through_connect(session_or_frame) -> bool:
    """Whether a session or DataFrame is a Spark Connect client's (pyspark.sql.connect)."""
    return type(session_or_frame).__module__.startswith("pyspark.sql.connect")


def serve_spark_connect(host: str = "127.0.0.1", port: int = DEFAULT_CONNECT_PORT, master: str = "local[*]",
                        on_ready: Callable[[], None] = lambda: None) -> None:
    """Run a Spark Connect server in this process until SIGTERM or Ctrl-C.

    Refreshes that connect to it (OFFSETS_PLATFORM_SPARK_REMOTE) skip the JVM's start and reuse
    its compiled code: each scheduled run otherwise starts a cold JVM. Its JVM compiles with every
    tier of the just-in-time compiler (`get_spark`'s `long_lived`).
    """
    _check_free(host, port)
    session = get_spark(master=master, app_name="offsets_platform-connect", long_lived=True, extra_conf={
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    })
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    on_ready()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        session.stop()


def _check_reachable(remote: str, timeout_s: float = 5.0) -> None:
    address = urlparse(remote.split(";", 1)[0])  # sc://host:port/;param=value
    host, port = address.hostname or "localhost", address.port or DEFAULT_CONNECT_PORT
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as error:
        raise SparkConnectError(
            f"no Spark Connect server answers at {host}:{port} ({remote}): {error.strerror or error}. "
            "Start one with `offsets-platform spark-server`, check the address in "
            "OFFSETS_PLATFORM_SPARK_REMOTE (or the spark resource's `remote`), or leave it empty to "
            "run Spark in this process.") from error


def _check_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as error:
            raise SparkConnectError(
                f"cannot listen on {host}:{port}: {error.strerror or error}. Is a Spark Connect server "
                "already running there? Stop it, or give another --port.") from error
