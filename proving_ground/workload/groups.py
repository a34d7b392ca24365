"""Offset-only groups and the life every simulated group lives.

`Group` is a standalone group (offsets, no group record); its `life()` drives every kind: join,
commit every interval, act on a plan, and expire what the coordinator would expire.
`LegacyGroup` is a standalone group of old clients (key type 0, value versions 0, 2, then 1).
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from offsets_platform.codec import encode as enc

from .partitioning import partition_for
from .scenarios import DAY, HOUR, MINUTE, RETENTION_MS

if TYPE_CHECKING:
    from .simulation import Simulation

_INF = float("inf")
_V3_NO_METADATA = struct.Struct(">hqihq")


def v3_packer(metadata: str):
    """A function (offset, leader_epoch, ts) -> offset commit value v3, as enc.offset_commit_value writes it."""
    data = metadata.encode()
    if not data:
        pack = _V3_NO_METADATA.pack
        return lambda offset, epoch, ts: pack(3, offset, epoch, 0, ts)
    pack, n = struct.Struct(f">hqih{len(data)}sq").pack, len(data)
    return lambda offset, epoch, ts: pack(3, offset, epoch, n, data, ts)


def member_host(rng: random.Random) -> str:
    """A client host as the coordinator records it ("/10.x.y.z")."""
    return f"/10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


class Topic:
    """A topic groups read: its id, partitions and each partition's current leader epoch."""

    __slots__ = ("name", "partitions", "topic_id", "epochs")

    def __init__(self, rng: random.Random, name: str, partitions: int):
        self.name, self.partitions = name, partitions
        self.topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        self.epochs = [rng.randint(0, 40) for _ in range(partitions)]  # leader epoch per partition


class Group:
    """A standalone group: offsets only, no group record (generation 0, so never a group tombstone).

    Subclasses add membership. `life()` drives every kind: join, commit every interval, act on
    the plan [(time, action, arg)] by calling `on_<action>(now, arg)`, and expire what the
    coordinator would expire.
    """

    initial_members = 0
    standalone = True
    ms_per_record: float | None = None  # team groups keep their record rate when their topics change

    def __init__(self, sim: Simulation, name: str, topics: list[Topic], interval: int, metadata: str = ""):
        self.sim, self.rng, self.name, self.interval = sim, sim.rng, name, interval
        self.pid = partition_for(name, sim.partitions)
        self.pack = v3_packer(metadata)
        self.topics: list[Topic] = []
        self.live: list[list] = []  # committed every interval: [key, offset, rate, epochs, partition, topic]
        self.dormant: list[list] = []  # offsets of an Empty group
        self.orphans: list[list] = []  # [due_ms, entries]: no longer committed, expire at due
        self.last_commit = self.clock = 0
        self.empty_at: int | None = None
        self.dead = False
        for topic in topics:
            self._add_topic(topic)

    def _add_topic(self, topic: Topic) -> None:
        self.topics.append(topic)
        rate = self.rng.choice((0.002, 0.01, 0.05, 0.2))  # messages per ms
        for p in range(topic.partitions):
            key = enc.offset_commit_key(self.name, topic.name, p)
            self.live.append([key, self.rng.randrange(10_000_000), rate * self.rng.uniform(0.5, 1.5),
                              topic.epochs, p, topic.name])

    def commit(self, now: int) -> list[tuple]:
        elapsed = now - self.last_commit if self.last_commit else self.interval
        self.last_commit = now
        pid, pack, out = self.pid, self.pack, []
        append = out.append
        for e in self.live:
            offset = e[1] + int(e[2] * elapsed)
            e[1] = offset
            append((pid, e[0], pack(offset, e[3][e[4]], now), now))
        if self.ms_per_record:
            self.sim.team_records += len(out)
        return out

    def tombstones(self, now: int, entries: Iterable[list]) -> list[tuple]:
        return [(self.pid, e[0], None, now) for e in entries]

    def orphan_due(self) -> int:
        return self.sim.tick(self.last_commit + RETENTION_MS)

    def _orphan(self, entries: list[list]) -> None:
        if entries and self.last_commit:
            self.orphans.append([self.orphan_due(), entries])

    def _become_empty(self, at: int) -> None:
        """No members left: the offsets stop being committed and wait for expiry (KIP-211)."""
        self.empty_at = at
        self.dormant, self.live = self.dormant + self.live, []

    def expire_base(self) -> int:
        return self.empty_at

    def group_tombstones(self, now: int) -> list[tuple]:
        return []

    def _gap(self) -> int:
        gap = self.interval * self.rng.uniform(0.97, 1.03)
        return int(gap * self.sim.pace(self.clock) if self.ms_per_record else gap)

    def life(self, start: int, plan: list[tuple]) -> Iterator[tuple[int, list]]:
        """Yield this group's (time, records) bursts in time order, forever or until it is gone."""
        sim, i = self.sim, 0
        yield from self._out(self.join(start, self.initial_members))
        next_commit = start + self._gap()
        while not self.dead:
            t_plan = plan[i][0] if i < len(plan) else _INF
            t_commit = next_commit if self.live and self.empty_at is None else _INF
            t_orphan = min(o[0] for o in self.orphans) if self.orphans and self.empty_at is None else _INF
            t_expire = sim.tick(self.expire_base() + RETENTION_MS) if self.empty_at is not None else _INF
            t = min(t_plan, t_commit, t_orphan, t_expire)
            if t == _INF:
                return
            now = max(int(t), self.clock)
            if t == t_commit:
                bursts = [(now, self.commit(now))]
                next_commit = now + self._gap()
            elif t == t_expire:
                bursts = [(now, self.expire_all(now))]
            elif t == t_orphan:
                due = [e for o in self.orphans if o[0] <= t for e in o[1]]
                self.orphans = [o for o in self.orphans if o[0] > t]
                bursts = [(now, self.tombstones(now, due))]
                # a standalone group whose offsets are all gone is Dead (no record to tombstone)
                self.dead = self.standalone and not (self.live or self.orphans)
            else:
                _, action, arg = plan[i]
                i += 1
                bursts = getattr(self, "on_" + action)(now, arg)
                if next_commit < now:
                    next_commit = now + self._gap()
            yield from self._out(bursts)

    def _out(self, bursts: list[tuple]) -> Iterator[tuple]:
        for burst in bursts:
            if burst[1]:
                self.clock = burst[0]
                yield burst

    def expire_all(self, now: int) -> list[tuple]:
        entries = self.dormant + [e for o in self.orphans for e in o[1]]
        self.dormant, self.orphans, self.dead = [], [], True
        return self.tombstones(now, entries) + self.group_tombstones(now)

    def join(self, now: int, members: int) -> list[tuple]:
        return []

    def on_stop_partitions(self, now: int, partitions: tuple[int, ...] | None) -> list[tuple]:
        if partitions is None:  # a random one, but never the last
            partitions = (self.rng.choice(self.live)[4],) if len(self.live) > 1 else ()
        self._orphan([e for e in self.live if e[4] in partitions])
        self.live = [e for e in self.live if e[4] not in partitions]
        return []

    def on_stop(self, now: int, _) -> list[tuple]:
        self._orphan(self.live)
        self.live = []
        return []

    def on_offset_delete(self, now: int, _) -> list[tuple]:
        """An administrator's OffsetDelete of the offsets the group no longer commits."""
        if self.empty_at is not None:  # by then they go with the group (expiry or DeleteGroups)
            return []
        entries = [e for o in self.orphans for e in o[1]]
        self.orphans = []
        return [(now, self.tombstones(now, entries))]

    def on_retire(self, now: int, _) -> list[tuple]:
        self.sim.spawn_team(now + self.rng.randrange(MINUTE, 6 * HOUR))
        return []

    def on_restart(self, now: int, members: int) -> list[tuple]:
        """An Empty group's members come back: its offsets are committed again."""
        self.live, self.dormant, self.empty_at = self.live + self.dormant, [], None
        return self.join(now, members)

    def on_delete(self, now: int, _) -> list[tuple]:
        if self.empty_at is None:  # DeleteGroups refuses a group with members: NON_EMPTY_GROUP
            return []
        return [(now, self.expire_all(now))]


class LegacyGroup(Group):
    """Standalone old clients: key type 0 with values v0 then v2, then v1 with an expire_timestamp."""

    commits = 0

    def commit(self, now: int) -> list[tuple]:
        elapsed = now - self.last_commit if self.last_commit else self.interval
        self.last_commit, self.commits = now, self.commits + 1
        self.sim.team_records += len(self.live) if self.ms_per_record else 0
        out = []
        for e in self.live:
            e[1] += int(e[2] * elapsed)
            if self.commits > 8:
                out.append((self.pid, e[0], enc.offset_commit_value(
                    e[1], now, "", expire_timestamp=now + DAY, version=1), now))
            elif self.commits <= 4:
                # the legacy key (type 0) with value version 0, the only one Kafka reads it with
                key = enc.offset_commit_key(self.name, e[5], e[4], key_version=0)
                out.append((self.pid, key, enc.offset_commit_value(e[1], now, "", version=0), now))
            else:
                out.append((self.pid, e[0], enc.offset_commit_value(e[1], now, "", version=2), now))
        return out

    def orphan_due(self) -> int:
        return self.sim.tick(self.last_commit + (DAY if self.commits > 8 else RETENTION_MS))
