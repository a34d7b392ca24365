"""A lake on S3 refreshed through a Spark Connect server (`offsets-platform spark-server`): the
server's JVM reads the credentials from its own environment, the client sets s3a's other settings
on its session; the tables equal a local run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from offsets_platform.models import ModelRunner, default_project, lake_for_models
from tests.lake.connect_server import ROOT, start_spark_connect_server
from tests.lake.test_spark_connect import AS_OF, _history, _rows


_CLIENT = """
import json, sys
from offsets_platform.lake.spark import get_spark
from offsets_platform.models import ModelRunner, lake_for_models
endpoint, uri, leases, as_of = sys.argv[1:]
spark = get_spark(remote=endpoint)
lake = lake_for_models(uri, leases=leases)
runs = ModelRunner(spark, lake, variables={"as_of": as_of}, emit=lambda line: None).run_all()
spark.stop()
print(json.dumps({run.model: run.mode for run in runs}))
"""


@pytest.fixture
def connect_server(s3_env):
    """The server as a user starts it, in an environment that holds the lake's connection."""
    process, endpoint, output = start_spark_connect_server(stderr=subprocess.STDOUT)
    yield endpoint, output
    process.send_signal(signal.SIGTERM)
    output.append(process.communicate(timeout=120)[0])


def test_models_over_spark_connect_on_a_lake_on_s3_equal_a_local_run(spark, s3_server, s3_lake, connect_server,
                                                                      tmp_path):
    endpoint, server_output = connect_server
    history = _history()
    local = lake_for_models(tmp_path / "local")
    history.write(local)
    history.write(s3_lake)
    ModelRunner(spark, local, variables={"as_of": AS_OF}, emit=lambda line: None).run_all()

    client = subprocess.run([sys.executable, "-c", _CLIENT, endpoint, s3_lake.root, str(s3_lake.leases), AS_OF],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert client.returncode == 0, client.stderr[-3000:]
    modes = json.loads(client.stdout.strip().splitlines()[-1])
    models = [model.name for model in default_project().models]
    assert set(modes) == set(models) and set(modes.values()) == {"full"}
    for name in models:
        assert _rows(s3_lake, name) == _rows(local, name), name
    shown = "".join(server_output) + client.stdout + client.stderr
    assert s3_server.secret_key not in shown and s3_server.access_key not in shown
