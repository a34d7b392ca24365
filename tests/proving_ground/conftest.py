"""Fixtures for the workload tests: a shared generated stream, and the shared embedded broker."""

from __future__ import annotations

import pytest

from offsets_platform.codec import decode_record
from offsets_platform.broker.embedded import free_loopback_port
from proving_ground.workload import generate

START_MS = 1_700_000_000_000  # fixed, so every run of the suite sees the same bytes


@pytest.fixture(scope="session")
def records_20k() -> list:
    """20k records of seed 7 from a fixed start time."""
    return list(generate(7, 20_000, start_ms=START_MS))


@pytest.fixture(scope="session")
def decoded_20k(records_20k) -> list[tuple]:
    """(record, decode_record(key, value)) for each of the 20k records."""
    return [(r, decode_record(r.key, r.value)) for r in records_20k]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on."""
    return free_loopback_port()


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    """The bootstrap address of this module's embedded broker (tests/conftest.py)."""
    return broker.bootstrap_servers
