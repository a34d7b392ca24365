"""An admin client on the module's embedded broker (the `broker` fixture is in tests/conftest.py)."""

import pytest

from proving_ground.workload.live.clients import admin_client


@pytest.fixture(scope="module")
def admin(broker):
    client = admin_client(broker.bootstrap_servers, client_id="live-workload-test-admin")
    yield client
    client.close()
