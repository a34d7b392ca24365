"""The settings the one place that builds a SparkSession gives it."""

from __future__ import annotations

import os

import pytest

from offsets_platform.lake.spark import _shuffle_partitions


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
