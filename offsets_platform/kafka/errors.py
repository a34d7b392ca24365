"""Errors that tell an operator which address failed and what to check."""

from __future__ import annotations

import socket
import time


class BrokerUnreachable(RuntimeError):
    """The cluster did not answer; the message names the address and what to check."""

    def __init__(self, bootstrap_servers: str, detail: str):
        self.bootstrap_servers = bootstrap_servers
        super().__init__(
            f"Kafka at {bootstrap_servers} did not answer: {detail}. Check that the broker is "
            "running and listening on that host and port, that this machine can reach it "
            "(firewall, DNS), and that the security protocol and credentials match the "
            "listener (OFFSETS_PLATFORM_BOOTSTRAP_SERVERS / OFFSETS_PLATFORM_SECURITY_PROTOCOL)."
        )


def wait_until_reachable(bootstrap_servers: str, timeout_s: float = 10.0) -> None:
    """Return once a TCP connection to any bootstrap address succeeds.

    Raises:
        BrokerUnreachable: no address accepted a connection within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        failure = _connection_failure(bootstrap_servers)
        if failure is None:
            return
        if time.monotonic() >= deadline:
            raise BrokerUnreachable(bootstrap_servers, f"no connection within {timeout_s:.0f} s ({failure})")
        time.sleep(0.2)


def reachable_now(bootstrap_servers: str, step: str) -> None:
    """Return if any bootstrap address accepts a TCP connection now: one attempt each, so a
    refused connection fails at once (librdkafka would retry it until its own timeout).

    Raises:
        BrokerUnreachable: no address accepted a connection; the message names `step`.
    """
    failure = _connection_failure(bootstrap_servers)
    if failure is not None:
        raise BrokerUnreachable(bootstrap_servers, f"{step}: no connection ({failure})")


def _connection_failure(bootstrap_servers: str) -> str | None:
    """None once one address accepts a TCP connection, else why the last one did not."""
    failure = "no address given"
    for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=1.0):
                return None
        except (OSError, ValueError) as error:
            failure = f"{address}: {error}"
    return failure
