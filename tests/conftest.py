"""Shared fixtures: a real embedded broker (Apache Kafka) and a real local SparkSession."""

from __future__ import annotations

import os

import pytest

from offsets_platform.broker.embedded import EmbeddedBroker
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


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
