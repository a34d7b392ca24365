"""Shared fixtures: a real embedded broker (Apache Kafka) and a real local SparkSession; and the
fast tier's rule, that its tests start neither (nor any other JVM)."""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# pytester: tests/test_fast_tier.py runs a pytest of its own; xdist_scheduling: make test's processes
pytest_plugins = ("pytester", "tests.xdist_scheduling")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A fresh Apache Kafka broker per test module (it starts in about 4-6 s)."""
    with EmbeddedBroker(tmp_path_factory.mktemp("broker")) as running:
        yield running


@pytest.fixture(scope="module")
def connection(broker) -> KafkaConnection:
    return KafkaConnection(bootstrap_servers=broker.bootstrap_servers)


@pytest.fixture
def lake(tmp_path) -> Lake:
    """An empty lake that knows the shipped models' tables, as the commands' and Dagster's do."""
    return lake_for_models(tmp_path / "lake")


@pytest.fixture(scope="session")
def spark():
    from offsets_platform.lake.spark import get_spark

    session = get_spark(master="local[2]")
    yield session
    session.stop()


# The fast tier (`pytest -m fast`, make test-fast) starts no JVM: no Spark session, no Kafka broker,
# no other Java process, so that it stays within two minutes. The rule is checked twice: at
# collection, by the JVM-starting fixtures in a fast test's fixture closure, and while a fast test
# sets up and runs, by refusing every way the project starts a JVM. Both look at the test itself,
# not at whether a JVM is already running: the full suite's other tests start Spark and brokers.
FAST_TIER_RULE = "a test marked `fast` must start no JVM (no Spark session, no Kafka broker, no Java process)"

# The shared fixtures that start a JVM; every fixture built on them (connection, bootstrap,
# fresh_connection, mirror_connection, demo_lake...) brings them into a test's closure.
JVM_FIXTURES = frozenset({"spark", "broker", "fresh_broker", "demo_run"})

# Programs that are, or start, a JVM: Kafka's and Spark's java, and Spark's launch scripts (pyspark
# starts its JVM through spark-submit, a standalone cluster through spark-class).
JVM_PROGRAMS = frozenset({"java", "spark-submit", "spark-class", "spark-shell", "pyspark"})


def _is_fast(item: pytest.Item) -> bool:
    return item.get_closest_marker("fast") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    offenders = [f"  {item.nodeid}: {', '.join(sorted(JVM_FIXTURES & set(item.fixturenames)))}"
                 for item in items if _is_fast(item) and JVM_FIXTURES & set(item.fixturenames)]
    if offenders:
        raise pytest.UsageError(f"{FAST_TIER_RULE}; these fast tests use fixtures that start one "
                                "(remove their `fast` mark, or their JVM):\n" + "\n".join(offenders))


def _refuse(what: str) -> None:
    # pytest.fail raises an exception that is no Exception, so the code under test cannot swallow it
    pytest.fail(f"{FAST_TIER_RULE}; this one {what}")


def _refuse_jvm_programs(execute_child):
    """Popen's start of a child process, refusing the JVM programs: every subprocess call goes
    through it, however the caller imported subprocess (pyspark imports Popen by name)."""
    def guarded(popen, args, executable, *rest, **named):
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = os.fsdecode(executable or argv[0])
        if Path(program).name in JVM_PROGRAMS:
            _refuse(f"ran {program}")
        return execute_child(popen, args, executable, *rest, **named)
    return guarded


class _ChildJava:
    """A `java` that refuses to start, first on PATH and in JAVA_HOME, for the fast tests' child
    processes (a command run as a subprocess starts its JVM out of this process' reach): it
    records each call, and the test fails."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="fast-tier-java-"))
        self.calls = self.home / "calls"
        java = self.home / "bin" / "java"
        java.parent.mkdir()
        java.write_text(f'#!/bin/sh\necho "$0 $*" >> {shlex.quote(str(self.calls))}\n'
                        f'echo {shlex.quote(FAST_TIER_RULE)} >&2\nexit 1\n')
        java.chmod(0o755)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls.unlink(missing_ok=True)
        monkeypatch.setenv("JAVA_HOME", str(self.home))
        monkeypatch.setenv("PATH", f"{self.home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    def check(self) -> None:
        if self.calls.exists():
            calls = self.calls.read_text().strip()
            self.calls.unlink()
            _refuse(f"started java in a child process: {calls}")


_child_java: _ChildJava | None = None


def refuse_jvm_starts(monkeypatch: pytest.MonkeyPatch) -> _ChildJava:
    """Make every way the project starts a JVM fail the test instead, until `monkeypatch` undoes
    it. Returns the child processes' java, to `check()` afterwards."""
    import pyspark.sql

    from offsets_platform.broker import embedded
    from offsets_platform.lake import spark, spark_cluster

    global _child_java
    if _child_java is None:
        _child_java = _ChildJava()
        atexit.register(shutil.rmtree, _child_java.home, True)
    _child_java.install(monkeypatch)
    monkeypatch.setattr(spark, "get_spark", lambda *args, **kwargs: _refuse("called get_spark"))
    monkeypatch.setattr(pyspark.sql.SparkSession.Builder, "getOrCreate",
                        lambda builder: _refuse("built a SparkSession"))
    for broker in (embedded.EmbeddedBroker, embedded.EmbeddedCluster):
        monkeypatch.setattr(broker, "start", lambda self: _refuse(f"started {type(self).__name__}"))
    monkeypatch.setattr(spark_cluster.StandaloneCluster, "start", lambda self: _refuse("started a Spark cluster"))
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse_jvm_programs(subprocess.Popen._execute_child))
    return _child_java


def _guarded(item: pytest.Item):
    """Run a fast test's phase (its fixtures' setup, or the test) with every JVM start refused;
    others as they are. A hook rather than an autouse fixture: the module- and session-scoped
    fixtures a test asks for are set up before any function-scoped fixture of its own."""
    if not _is_fast(item):
        return (yield)
    with pytest.MonkeyPatch.context() as monkeypatch:
        child_java = refuse_jvm_starts(monkeypatch)
        try:
            return (yield)
        finally:  # also when the test failed: a java it started may be why
            child_java.check()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _guarded(item))
