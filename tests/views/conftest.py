"""Fixtures of the quick-view tests: the module's broker with the `orders` and `payments` topics."""

from __future__ import annotations

import pytest

from tests.cleanup.direct_helpers import make_topics


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    make_topics(broker.bootstrap_servers)
    return broker.bootstrap_servers
