"""The models on a real Spark standalone cluster (a master and two workers on loopback, from
pyspark's own jars): a full and then an incremental refresh give every table exactly what a
local session's refresh gives on the same lake.

The cluster's refreshes run in a child process, because a process holds one SparkSession (the
tests' local one); both run in one application, whose executors start once. The master's own
account shows the application ran there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from offsets_platform.lake.spark_cluster import SparkClusterError, StandaloneCluster
from offsets_platform.models import ModelRunner, default_project, lake_for_models
from tests.models.bronze_builder import BronzeBuilder, at

ROOT = Path(__file__).resolve().parents[2]
AS_OF = {"as_of": "2026-01-05 00:00:00"}
APP_NAME = "offsets_platform-on-the-cluster"


def history(builder: BronzeBuilder, start_hour: int) -> None:
    for hour in range(start_hour, start_hour + 3):
        builder.group_record("g", at(hours=hour), members={"m": ["t"]}, current_state_at=at(hours=hour),
                             generation=hour)
        builder.commit("g", "t", 0, hour * 10, at(hours=hour, minutes=5))
        builder.commit("g", "old", hour % 2, hour, at(hours=hour, minutes=6))
        builder.commit("quiet", "t", 1, hour, at(hours=hour, minutes=7))
    builder.offset_tombstone("g", "old", 0, at(hours=start_hour + 2, minutes=30))
    builder.snapshot(at(hours=start_hour + 3))


def rounds() -> tuple[BronzeBuilder, BronzeBuilder]:
    first = BronzeBuilder()
    history(first, 0)
    second = BronzeBuilder()
    second._next_offset = first._next_offset  # the log goes on where it stopped
    history(second, 3)
    return first, second


def refreshes_on_the_cluster(master_url: str, lake_root: str) -> None:
    """In a child process: a refresh of the lake on the cluster for each line read from stdin, all
    in one application, so its executors start once; prints what each refresh ran on."""
    from offsets_platform.lake.spark import get_spark

    spark = get_spark(master=master_url, app_name=APP_NAME)
    runner = ModelRunner(spark, lake_for_models(lake_root), variables=AS_OF, emit=lambda line: None)
    for _ in sys.stdin:
        runs = runner.run_all()
        # Delta's reader runs in the executors: the session's spark.jars reached the workers
        delta_rows = spark.read.format("delta").load(str(runner.lake.path("group_state"))).count()
        print(json.dumps({"master": spark.sparkContext.master, "modes": {run.model: run.mode for run in runs},
                          "delta_rows": delta_rows}), flush=True)
    spark.stop()


@contextmanager
def cluster_child(master_url: str, lake_root: Path, log: Path) -> Iterator[Callable[[], dict]]:
    """The child above, running; yields a function that asks it for one refresh and returns what
    it printed. Its stderr goes to `log` (a pipe nobody reads would fill and stop it)."""
    code = (f"from tests.lake.test_spark_cluster import refreshes_on_the_cluster as r; "
            f"r({master_url!r}, {str(lake_root)!r})")
    with open(log, "w") as errors:
        child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=errors, text=True,
                                 env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})

        def refresh() -> dict:
            child.stdin.write("refresh\n")
            child.stdin.flush()
            for line in child.stdout:
                if line.startswith("{"):
                    return json.loads(line)
            raise AssertionError(f"the cluster's refresh ended without an answer: {log.read_text()[-3000:]}")

        try:
            yield refresh
        finally:
            child.stdin.close()
            returncode = child.wait(timeout=300)
    assert returncode == 0, log.read_text()[-3000:]


def table_rows(lake, name: str) -> list[tuple]:
    """The rows, in a fixed order."""
    return sorted((tuple(row.items()) for row in lake.read_arrow(name).to_pylist()), key=repr)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, memory_per_worker="1g") as running:
        yield running


# Six JVMs (master, two workers, their executors, the child's driver) beside the tests' own: on a
# shared 2-core runner this took 860 s, close to the suite's 900 s guard against a hang
@pytest.mark.timeout(1500)
def test_a_full_and_an_incremental_refresh_on_the_cluster_equal_a_local_one(cluster, spark, tmp_path):
    first, second = rounds()
    on_cluster, local = lake_for_models(tmp_path / "cluster"), lake_for_models(tmp_path / "local")
    for lake in (on_cluster, local):
        first.write(lake)

    with cluster_child(cluster.master_url, on_cluster.root, tmp_path / "child.log") as refresh_on_the_cluster:
        full = refresh_on_the_cluster()
        assert full["master"] == cluster.master_url
        assert set(full["modes"].values()) == {"full"}
        assert full["delta_rows"] == len(table_rows(on_cluster, "group_state")) > 0

        for lake in (on_cluster, local):
            second.write(lake)
        incremental = refresh_on_the_cluster()
        assert incremental["master"] == cluster.master_url
        assert incremental["modes"]["log_offset_state"] == "incremental"
    # locally, one full refresh of both rounds (an incremental refresh equals it: test_runner.py)
    ModelRunner(spark, local, variables=AS_OF, emit=lambda line: None).run_all()

    models = [model.name for model in default_project().models if local.exists(model.name)]
    assert len(models) == len(default_project().models)
    for name in models:
        assert table_rows(on_cluster, name) == table_rows(local, name), name
    apps = cluster.state()["completedapps"]
    assert [app["name"] for app in apps].count(APP_NAME) == 1  # both refreshes, in one application
    assert all(app["cores"] >= 1 for app in apps)


def test_a_worker_that_cannot_start_is_named_with_its_log(tmp_path):
    with pytest.raises(SparkClusterError, match=r"the Spark worker-1 exited .* while waiting for 1 workers"):
        StandaloneCluster(tmp_path, workers=1, memory_per_worker="not-a-size", start_timeout_s=60).start()
