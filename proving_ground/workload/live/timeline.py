"""The clients of a run and the timeline they follow, tick by tick, from one driver thread.

Each tick the producer writes that tick's messages (messages.py), scenario events fire at
their tick (billing-slow stalls, search-changed-subscription re-subscribes, reports-stopped
leaves), every member consumes what has arrived until the tick ends, and then commits (the
transactional member commits its transaction). Consumers are polled round-robin without
blocking, so no thread is needed during the run. The share consumer and the streams app are
Java processes (jvm_members.py) that consume on their own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .connect_worker import ConnectWorker
from .keepalive import close_all
from .clients import committed_offsets, set_group_config
from .jvm_members import JvmMembers
from .members import GroupMember, Kip848Member, LiveConsumer, StandaloneConsumer, TransactionalMember
from .messages import tick_messages
from .producer import TickProducer
from .retention import RetentionWatch
from .scenarios import (CHANGED_GROUP, CHANGED_KEPT_TOPIC, CLASSIC, CONNECT, GROUPS, KIP848, KIP848_REGEX, REGEX,
                        REPORTS_STOP_TICK, RESUBSCRIBE_TICK, SHARE, SLOW_STALL_TICK, STANDALONE, STREAMS, TICK_S,
                        TICKS, TOPICS, TRANSACTIONAL, TRANSACTIONAL_OUTPUT)

SLOW_PER_TICK = 3
"""billing-slow consumes at most this many messages per tick (times the scale) before it stalls."""
CONNECT_TASKS = 2
TRANSACTIONAL_ID = "fx-rates-enricher"


@dataclass
class Fleet:
    producer: TickProducer
    groups: dict[str, list[LiveConsumer]] = field(default_factory=dict)
    bootstrap_servers: str = ""
    workers: list[ConnectWorker] = field(default_factory=list)
    jvms: JvmMembers | None = None
    errors: list[str] = field(default_factory=list)

    def consumers(self):
        return [member for members in self.groups.values() for member in members if not member.closed]

    def close(self) -> None:
        close_all([*self.consumers(), *self.workers, self.producer], self.errors)
        if self.jvms is not None:
            self.jvms.stop()


def build_fleet(bootstrap_servers: str, admin) -> Fleet:
    """Start the Java members first (their JVMs warm up while the rest forms), then create the
    producer, every group's members, the standalone consumer and the Connect workers.

    `admin` is a confluent-kafka AdminClient (group configs)."""
    fleet = Fleet(TickProducer(bootstrap_servers), bootstrap_servers=bootstrap_servers)
    try:
        fleet.jvms = JvmMembers(bootstrap_servers)
        for spec in GROUPS.values():
            if spec.kind == SHARE:
                # A share group starts at the log end by default (share.auto.offset.reset=latest);
                # from the start, it reads every alert whatever the JVM's start-up time.
                set_group_config(admin, spec.group, {"share.auto.offset.reset": "earliest"})
                fleet.jvms.start_share_consumer(spec.group, spec.topics[0])
            elif spec.kind == STREAMS:
                fleet.jvms.start_wordcount(spec.group)
        for spec in GROUPS.values():
            name = f"{spec.group}-1"
            if spec.kind == CLASSIC:
                fleet.groups[spec.group] = [
                    GroupMember(bootstrap_servers, spec.group, f"{spec.group}-{i + 1}", spec.topics)
                    for i in range(spec.members)]
            elif spec.kind == KIP848:
                fleet.groups[spec.group] = [
                    Kip848Member(bootstrap_servers, spec.group, f"{spec.group}-{i + 1}", spec.topics)
                    for i in range(spec.members)]
            elif spec.kind == KIP848_REGEX:
                pass  # subscribes once the others formed: see form_groups
            elif spec.kind == TRANSACTIONAL:
                fleet.groups[spec.group] = [TransactionalMember(bootstrap_servers, spec.group, name, spec.topics,
                                                                TRANSACTIONAL_OUTPUT, TRANSACTIONAL_ID)]
            elif spec.kind == STANDALONE:
                topic = spec.topics[0]
                fleet.groups[spec.group] = [StandaloneConsumer(bootstrap_servers, spec.group, name,
                                                               topic, TOPICS[topic].partitions)]
            elif spec.kind == CONNECT:
                fleet.workers += [ConnectWorker(bootstrap_servers, spec.group, f"connect-worker-{i + 1}", "s3-sink",
                                                CONNECT_TASKS) for i in range(spec.members)]
    except BaseException:
        fleet.close()
        raise
    return fleet


def _assignment_complete(group: str, members: list[LiveConsumer]) -> bool:
    """Every partition of the group's topics assigned exactly once. A classic group assigns them
    all in one SyncGroup, so each member must hold some; a KIP-848 group hands partitions over
    member by member (a newcomer waits until the holder's next heartbeat revokes them), so the
    run starts as soon as every partition has one owner."""
    spec = GROUPS[group]
    # what the group subscribes to now (a re-subscription changes it); a regex's matching topics
    topics = spec.topics if spec.kind == KIP848_REGEX else members[0].topics
    wanted = {(t, p) for t in topics for p in range(TOPICS[t].partitions)}
    assignments = [member.assignment() for member in members]
    each_busy = all(assignments) or spec.group_type == "consumer"
    return each_busy and set().union(*assignments) == wanted and sum(map(len, assignments)) == len(wanted)


def form_groups(fleet: Fleet, timeout_s: float = 30.0) -> None:
    """Poll until every consumer group has a complete assignment and the Connect workers share
    one generation. One loop drives all of them: a worker that joined first learns of the next
    rebalance only from its heartbeat, and must rejoin for the others' JoinGroup to complete.

    The regex member subscribes only then, and is not waited for. Kafka resolves a regular
    expression against the coordinator's metadata when the member subscribes, and again only
    on a later refresh: subscribed right after CreateTopics it matched nothing for 20 s or more
    on the embedded broker, subscribed once other groups hold partitions of the new topics it
    got them about 5 s later (one heartbeat interval). It reads from the earliest offset, and
    drain_and_commit waits for its assignment."""
    deadline = time.monotonic() + timeout_s
    pending = {g: m for g, m in fleet.groups.items() if GROUPS[g].kind not in (STANDALONE, KIP848_REGEX)}
    while True:
        for member in (m for members in pending.values() for m in members):
            member.poll(max_messages=1, timeout=0.02)  # nothing is produced yet
        for worker in fleet.workers:
            worker.tick()
        pending = {g: m for g, m in pending.items() if not _assignment_complete(g, m)}
        if not pending and _workers_joined(fleet.workers):
            for spec in GROUPS.values():
                if spec.kind == KIP848_REGEX:
                    fleet.groups[spec.group] = [Kip848Member(fleet.bootstrap_servers, spec.group,
                                                             f"{spec.group}-1", (REGEX,))]
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"groups {sorted(pending)} not formed (Connect workers joined: "
                               f"{_workers_joined(fleet.workers)}) within {timeout_s} s")


def _workers_joined(workers: list[ConnectWorker]) -> bool:
    generations = {worker.generation for worker in workers if not worker.coordinator.need_rejoin()}
    return len(generations) == 1 and min(generations) > 0 and all(not w.coordinator.need_rejoin() for w in workers)


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
            # A scaled-to-zero deployment: each member commits and leaves, one after the other.
            # The second one's commit arrives while the group is PreparingRebalance after the
            # first left; Kafka accepts commits of the current generation in that state.
            for member in groups["reports-stopped"]:
                member.commit()
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


def drain_and_commit(members: list[LiveConsumer], ends: dict[tuple[str, int], int], timeout_s: float = 30.0) -> None:
    """Once the group's partitions are all assigned, consume until every position is at `ends`,
    then commit exactly the ends."""
    deadline = time.monotonic() + timeout_s
    while True:
        behind = [] if _assignment_complete(members[0].group, members) else [
            f"(not all partitions assigned: {sorted(set().union(*(m.assignment() for m in members)))})"]
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


def wait_for_java_members(admin, fleet: Fleet, ends: dict[tuple[str, int], int], timeout_s: float = 30.0) -> None:
    """Wait until the share consumer printed every alert and the streams app committed the log end
    of its input (it commits every 500 ms). `admin` is the project's kafka-python admin client."""
    deadline = time.monotonic() + timeout_s
    while True:
        behind = []
        for group, spec in GROUPS.items():
            process = fleet.jvms.processes.get(group) if fleet.jvms else None
            if spec.kind not in (SHARE, STREAMS):
                continue
            if process is None or not process.running:
                raise RuntimeError(f"{group}: its Java process is not running; its log ends with:\n"
                                   + (process.log_tail() if process else "(never started)"))
            topic = spec.topics[0]
            wanted = {tp: end for tp, end in ends.items() if tp[0] == topic}
            if spec.kind == SHARE and process.output_lines() < sum(wanted.values()):
                behind.append(f"{group} printed {process.output_lines()} of {sum(wanted.values())} records")
            if spec.kind == STREAMS:
                committed = {tp: o for tp, o in committed_offsets(admin, group).items() if tp[0] == topic}
                if committed != wanted:
                    behind.append(f"{group} committed {committed}, log end {wanted}")
        if not behind:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"Java members behind after {timeout_s} s: {behind}")
        time.sleep(0.25)
