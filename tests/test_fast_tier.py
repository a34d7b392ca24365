"""The fast tier's rule (tests/conftest.py): a test marked `fast` that starts a JVM fails, saying
why, whether it asks for a JVM fixture or starts one itself. These tests are in the fast tier, so
the rule is in force while they run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import FAST_TIER_RULE, refuse_jvm_starts

pytestmark = pytest.mark.fast  # make test-fast

ROOT = Path(__file__).resolve().parents[1]
REFUSED = pytest.fail.Exception  # what pytest.fail raises: no Exception, so nothing under test swallows it


def test_a_fast_test_that_starts_spark_fails_naming_the_rule():
    from pyspark.sql import SparkSession

    from offsets_platform.lake.spark import get_spark

    with pytest.raises(REFUSED, match="must start no JVM.*called get_spark"):
        get_spark(master="local[1]")
    with pytest.raises(REFUSED, match="must start no JVM.*built a SparkSession"):
        SparkSession.builder.master("local[1]").getOrCreate()


def test_a_fast_test_that_starts_a_broker_or_java_fails_naming_the_rule(tmp_path):
    from offsets_platform.broker.embedded import EmbeddedBroker

    with pytest.raises(REFUSED, match="must start no JVM.*started EmbeddedBroker"):
        EmbeddedBroker(tmp_path / "broker").start()
    with pytest.raises(REFUSED, match="must start no JVM.*ran java"):
        subprocess.run(["java", "-version"], capture_output=True)
    assert not (tmp_path / "broker").exists()


def test_java_started_by_a_child_process_fails_the_test():
    # A child process starts its JVM out of this process' reach: its java is the guard's, which
    # refuses and records the call. Checked here by hand (the check would fail this test
    # otherwise); a guard of its own, so the test's own stays as it was.
    with pytest.MonkeyPatch.context() as monkeypatch:
        child_java = refuse_jvm_starts(monkeypatch)
        child = subprocess.run(["sh", "-c", "java -version"], capture_output=True, text=True)
        assert child.returncode != 0 and FAST_TIER_RULE in child.stderr
        with pytest.raises(REFUSED, match="must start no JVM.*started java in a child process: .*-version"):
            child_java.check()
        child_java.check()  # each call is reported once


def test_a_fast_test_asking_for_a_jvm_fixture_is_an_error_at_collection(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner run imports the project's tests/conftest.py
    pytester.makeini("[pytest]\nmarkers =\n    fast: the fast tier\n")
    pytester.makeconftest("from tests.conftest import broker, connection, pytest_collection_modifyitems, spark  "
                          "# noqa: F401\n")
    pytester.makepyfile(test_tiers="""
        import pytest

        @pytest.mark.fast
        def test_on_spark(spark):
            pass

        @pytest.mark.fast
        def test_on_a_connection(connection):
            pass

        @pytest.mark.fast
        def test_pure():
            pass

        def test_in_the_full_suite(spark, connection):
            pass
    """)
    result = pytester.runpytest_subprocess("--collect-only", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert FAST_TIER_RULE in errors
    assert "test_tiers.py::test_on_spark: spark" in errors
    assert "test_tiers.py::test_on_a_connection: broker" in errors
    assert "test_pure" not in errors and "test_in_the_full_suite" not in errors
