"""Keeping Stable groups Stable after the run: one background thread polls their members.

A group is Stable only while it has live members, and librdkafka / kafka-python members must
keep polling (max.poll.interval.ms) as well as heartbeating. The share consumer and the streams
app are Java processes that poll on their own. `KeepAlive.stop()` ends the thread, closes every
member (LeaveGroup, or a heartbeat with epoch -1 for KIP-848) and stops the Java processes, so
the groups go Empty at once rather than when Kafka expires their sessions (10 s for these classic
members, 45 s by default for the others); it is idempotent, and also runs at interpreter exit.
"""

from __future__ import annotations

import atexit
import threading

from .connect_worker import ConnectWorker
from .jvm_members import JvmMembers
from .members import LiveConsumer

POLL_INTERVAL_S = 0.2


class KeepAlive:
    def __init__(self, committing: list[LiveConsumer], idle: list[LiveConsumer], workers: list[ConnectWorker],
                 jvms: JvmMembers | None = None):
        """committing: members that keep consuming and committing what arrives (they keep up);
        idle: members that only stay in their group (e.g. paused); workers: Connect workers;
        jvms: the Java members, stopped with the rest."""
        self.committing, self.idle, self.workers, self.jvms = list(committing), list(idle), list(workers), jvms
        self.errors: list[str] = []
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="live-workload-keepalive", daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive() or (self.jvms is not None and self.jvms.running)

    def start(self) -> "KeepAlive":
        atexit.register(self.stop)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop_event.is_set():
            for member in self.committing:
                if member.poll(timeout=0):
                    member.commit()
            for member in self.idle:
                member.poll(timeout=0)
            for worker in self.workers:
                try:
                    worker.tick()
                except Exception as error:  # keep the other members alive; report it in errors
                    self.errors.append(f"{worker.worker_id}: {error!r}")
            self._stop_event.wait(POLL_INTERVAL_S)

    def stop(self) -> None:
        """Stop polling and close every member and worker (LeaveGroup). Safe to call twice."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._stop_event.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        close_all([*self.committing, *self.idle, *self.workers], self.errors)
        if self.jvms is not None:
            self.jvms.stop()
            self.errors += self.jvms.errors
        atexit.unregister(self.stop)


def close_all(clients, errors: list[str]) -> None:
    """close() each client, recording (not raising) failures so every one gets closed."""
    for client in clients:
        try:
            client.close()
        except Exception as error:
            errors.append(f"close {getattr(client, 'client_id', getattr(client, 'worker_id', client))}: {error!r}")
