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
    last_error = "no address given"
    while True:
        for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
            host, _, port = address.rpartition(":")
            try:
                with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=1.0):
                    return
            except (OSError, ValueError) as error:
                last_error = f"{address}: {error}"
        if time.monotonic() >= deadline:
            raise BrokerUnreachable(bootstrap_servers, f"no connection within {timeout_s:.0f} s ({last_error})")
        time.sleep(0.2)
