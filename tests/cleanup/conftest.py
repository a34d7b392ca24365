"""Fixtures of the cleanup tests: the module's broker with the `orders` and `payments` topics."""

from __future__ import annotations

import pytest

from offsets_platform.kafka.admin_calls import open_admin
from tests.cleanup.direct_helpers import make_topics


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    make_topics(broker.bootstrap_servers)
    return broker.bootstrap_servers


@pytest.fixture
def admin(connection, bootstrap):
    with open_admin(connection, 10, 10) as client:
        yield client
