"""The clients of a run and the timeline they follow, tick by tick, from one driver thread.

Each tick the producer writes that tick's messages (messages.py), scenario events fire at
their tick (billing-slow stalls, search-changed-subscription re-subscribes, reports-stopped
leaves), every member consumes what has arrived until the tick ends, and then commits.
Consumers are polled round-robin without blocking, so no thread is needed during the run.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .connect_worker import ConnectWorker
from .keepalive import close_all
from .members import GroupMember, LiveConsumer, StandaloneConsumer
from .messages import tick_messages
from .producer import TickProducer
from .retention import RetentionWatch
from .scenarios import (CHANGED_GROUP, CHANGED_KEPT_TOPIC, GROUPS, REPORTS_STOP_TICK, RESUBSCRIBE_TICK,
                        SLOW_STALL_TICK, TICK_S, TICKS, TOPICS)

SLOW_PER_TICK = 3
"""billing-slow consumes at most this many messages per tick (times the scale) before it stalls."""
CONNECT_TASKS = 2


@dataclass
class Fleet:
    producer: TickProducer
    groups: dict[str, list[LiveConsumer]] = field(default_factory=dict)
    workers: list[ConnectWorker] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def consumers(self):
        return [member for members in self.groups.values() for member in members if not member.closed]

    def close(self) -> None:
        close_all([*self.consumers(), *self.workers, self.producer], self.errors)


def build_fleet(bootstrap_servers: str) -> Fleet:
    """Create the producer, every group's members, the standalone consumer and the Connect workers."""
    fleet = Fleet(TickProducer(bootstrap_servers))
    try:
        for spec in GROUPS.values():
            if spec.kind == "consumer":
                fleet.groups[spec.group] = [
                    GroupMember(bootstrap_servers, spec.group, f"{spec.group}-{i + 1}", spec.topics)
                    for i in range(spec.members)]
            elif spec.kind == "standalone":
                topic = spec.topics[0]
                fleet.groups[spec.group] = [StandaloneConsumer(bootstrap_servers, spec.group, f"{spec.group}-1",
                                                               topic, TOPICS[topic].partitions)]
            else:
                fleet.workers += [ConnectWorker(bootstrap_servers, spec.group, f"connect-worker-{i + 1}", "s3-sink",
                                                CONNECT_TASKS) for i in range(spec.members)]
    except BaseException:
        fleet.close()
        raise
    return fleet


def _assignment_complete(members: list[LiveConsumer]) -> bool:
    wanted = {(t, p) for t in members[0].topics for p in range(TOPICS[t].partitions)}
    assignments = [member.assignment() for member in members]
    return all(assignments) and set().union(*assignments) == wanted and sum(map(len, assignments)) == len(wanted)


def form_groups(fleet: Fleet, timeout_s: float = 30.0) -> None:
    """Poll until every consumer group has a complete assignment and every Connect worker joined."""
    deadline = time.monotonic() + timeout_s
    with ThreadPoolExecutor(max_workers=max(1, len(fleet.workers)), thread_name_prefix="live-connect-join") as pool:
        joins = [pool.submit(worker.join, int(timeout_s * 1000)) for worker in fleet.workers]
        pending = [m for g, m in fleet.groups.items() if GROUPS[g].kind == "consumer"]
        while pending:
            for member in (m for members in pending for m in members):
                member.poll(max_messages=1, timeout=0.02)  # nothing is produced yet
            pending = [members for members in pending if not _assignment_complete(members)]
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"groups {[m[0].group for m in pending]} not formed within {timeout_s} s")
        if not all(join.result() for join in joins):
            raise TimeoutError(f"Connect workers did not join within {timeout_s} s")


class Timeline:
    def __init__(self, fleet: Fleet, seed: int, scale: float, watch: RetentionWatch, emit):
        self.fleet, self.seed, self.scale, self.watch, self.emit = fleet, seed, scale, watch, emit
        self.slow_budget = 0
        self.sink_pending: dict[tuple[str, int], int] = {}

    def run(self) -> None:
        started = time.monotonic()
        for tick in range(TICKS):
            self.fleet.producer.produce({topic: tick_messages(self.seed, self.scale, topic, tick) for topic in TOPICS})
            self._events(tick)
            self._consume_until(started + (tick + 1) * TICK_S)
            self._commit(tick)
            self.watch.check()

    def _events(self, tick: int) -> None:
        groups = self.fleet.groups
        self.slow_budget = max(1, round(SLOW_PER_TICK * self.scale)) if tick < SLOW_STALL_TICK else 0
        if tick == SLOW_STALL_TICK:
            groups["billing-slow"][0].pause_all()
            self.emit(f"tick {tick}: billing-slow stalls (pauses its partitions, stays in the group)")
        if tick == RESUBSCRIBE_TICK:
            groups[CHANGED_GROUP][0].subscribe((CHANGED_KEPT_TOPIC,))
            self.emit(f"tick {tick}: {CHANGED_GROUP} re-subscribes to {CHANGED_KEPT_TOPIC} only")
        if tick == REPORTS_STOP_TICK:
            # All members commit, then all leave: a scaled-to-zero deployment. (One by one, the
            # second member's commit fails on noida-db: once a member has left, it answers
            # ILLEGAL_GENERATION during PreparingRebalance, where Kafka accepts the commit.)
            for member in groups["reports-stopped"]:
                member.commit()
            for member in groups["reports-stopped"]:
                member.close()
            self.emit(f"tick {tick}: reports-stopped members committed and left the group")

    def _consume_until(self, deadline: float) -> None:
        while True:
            for group, members in self.fleet.groups.items():
                for member in members:
                    if member.closed:
                        continue
                    if group != "billing-slow":
                        member.poll(timeout=0.01)
                    elif self.slow_budget > 0:
                        self.slow_budget -= member.poll(max_messages=self.slow_budget, timeout=0.01)
            for worker in self.fleet.workers:
                worker.tick()
            if time.monotonic() >= deadline:
                return

    def _commit(self, tick: int) -> None:
        for group, members in self.fleet.groups.items():
            if group == "billing-slow" and tick >= SLOW_STALL_TICK:
                continue
            for member in members:
                if not member.closed:
                    member.commit()
        # The sink commits what it flushed: everything delivered up to the previous tick.
        workers = self.fleet.workers
        for index, worker in enumerate(workers):
            mine = {tp: offset for tp, offset in self.sink_pending.items() if tp[1] % len(workers) == index}
            try:
                worker.commit(mine)
            except Exception as error:  # e.g. a rebalance in progress; the next tick commits again
                self.fleet.errors.append(f"{worker.worker_id} commit: {error!r}")
        self.sink_pending = {tp: end for tp, end in self.fleet.producer.ends.items() if tp[0] == "s3-sink-input"}

    def finish_sink(self) -> None:
        """The sink catches up: commit the log end of every s3-sink-input partition."""
        self.sink_pending = {tp: end for tp, end in self.fleet.producer.ends.items() if tp[0] == "s3-sink-input"}
        self._commit(TICKS)


def drain_and_commit(members: list[LiveConsumer], ends: dict[tuple[str, int], int], timeout_s: float = 20.0) -> None:
    """Consume until every assigned partition's position is at `ends`, then commit exactly the ends."""
    deadline = time.monotonic() + timeout_s
    while True:
        behind = []
        for member in members:
            positions = member.positions()
            behind += [tp for tp in member.assignment() if positions.get(tp, 0) < ends.get(tp, 0)]
        if not behind:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"could not consume to the log end within {timeout_s} s: {sorted(behind)}")
        for member in members:
            member.poll(timeout=0.05)
    for member in members:
        offsets = {tp: ends.get(tp, 0) for tp in member.assignment()}
        while not member.commit(offsets):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{member.client_id}: commit of {offsets} failed: {member.errors[-3:]}")
            member.poll(timeout=0.1)
