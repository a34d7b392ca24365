"""A real S3-compatible server (SeaweedFS) on loopback for the whole session, and the lake on it.

These tests run in a pytest process of their own (`make test` runs them after the rest of the
suite; `make test-object-storage` runs them alone): Spark's JVM reads the S3 credentials from its environment when it starts, as
s3a's environment-variable provider does in a deployment, so the server and its variables must
come before the session. Collected after another test started Spark, they skip, saying so.
"""

from __future__ import annotations

import os

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models.project import model_table_specs
from tests.object_storage.s3_server import start_s3_server

# the connection's variables, set for the whole process (the JVM's environment is fixed at its start)
_CONNECTION = ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """The server, with a bucket; its endpoint, region and credentials in os.environ while it
    runs. One for every test (each works under a prefix of its own): it starts in 2-4 s, and
    s3a keeps one filesystem per bucket for the life of the JVM."""
    server = start_s3_server(tmp_path_factory.mktemp("s3"))
    saved = {key: os.environ.get(key) for key in _CONNECTION}
    os.environ.update({key: value for key, value in server.env().items() if key in _CONNECTION})
    yield server
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    server.stop()


@pytest.fixture(scope="session")
def spark(s3_server):
    """The session of these tests, started once the server's variables are set."""
    from pyspark.sql import SparkSession

    from offsets_platform.lake.spark import get_spark

    active = SparkSession.getActiveSession()
    if active is not None and active._jvm.System.getenv("AWS_ACCESS_KEY_ID") != s3_server.access_key:
        pytest.skip("Spark started before the S3 server's credentials were set: run these tests in a process "
                    "of their own (make test-object-storage)")
    session = get_spark(master="local[2]")
    yield session
    session.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch, request):
    """The environment of a lake on the server, under a prefix named after the test: the lake's
    URI besides the connection's variables, as a deployment sets them."""
    prefix = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    env = s3_server.env(prefix)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def s3_lake(s3_env, tmp_path) -> Lake:
    """An empty lake on the server that knows the shipped models' tables; its leases in tmp_path."""
    return Lake(s3_env["OFFSETS_PLATFORM_LAKE_URI"], model_tables=model_table_specs(), leases=tmp_path / "leases")
