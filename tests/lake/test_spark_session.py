"""The settings the one place that builds a SparkSession gives it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets_platform.lake.spark import _shuffle_partitions

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("master, partitions", [
    ("local", "1"), ("local[3]", "3"), ("local[4,2]", "4"), ("local[*]", str(os.cpu_count())),
])
def test_a_local_master_gets_one_shuffle_partition_per_core(master, partitions):
    assert _shuffle_partitions(master) == {"spark.sql.shuffle.partitions": partitions}


@pytest.mark.parametrize("master", ["spark://spark-master:7077", "yarn", "local-cluster[2,1,1024]"])
def test_other_masters_keep_sparks_default(master):
    assert _shuffle_partitions(master) == {}


def test_the_session_runs_with_them(spark):
    # the tests' session is local[2]
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def _jobs_per_commit(spark, path: str) -> int:
    """The Spark jobs of three overwrites of a small Delta table."""
    spark.range(3).write.format("delta").save(path)
    spark.sparkContext.setJobGroup("overwrites", "three overwrites")
    try:
        for _ in range(3):
            spark.range(3).write.format("delta").mode("overwrite").save(path)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup("overwrites"))


# The same count in a process of its own: the JVM's time zone is fixed when it starts, from the
# machine's (TZ) unless the session sets it.
_JOBS_PER_COMMIT_ELSEWHERE = """
import sys
from offsets_platform.lake.spark import get_spark
from tests.lake.test_spark_session import _jobs_per_commit
spark = get_spark(master="local[1]")
print(spark._jvm.java.util.TimeZone.getDefault().getID(), _jobs_per_commit(spark, sys.argv[1]))
spark.stop()
"""


def test_a_machine_in_another_time_zone_costs_delta_no_more_jobs_per_commit(spark, tmp_path):
    """Delta checks the file list it keeps in each version's checksum by rebuilding it, one more
    Spark job after every commit, when the JVM's time zone is not UTC. The sessions run their JVM
    in UTC, so a laptop in Kolkata refreshes as a server in UTC does: the tests' own session
    beside one started in a process whose machine is in Kolkata."""
    here = [spark._jvm.java.util.TimeZone.getDefault().getID(), str(_jobs_per_commit(spark, str(tmp_path / "here")))]
    env = {**os.environ, "TZ": "Asia/Kolkata", "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run([sys.executable, "-c", _JOBS_PER_COMMIT_ELSEWHERE, str(tmp_path / "kolkata")],
                            capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == here
    assert here[0] == "UTC"
