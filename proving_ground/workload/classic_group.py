"""Classic groups: members join and sync, the coordinator writes the group record (key type 2)."""

from __future__ import annotations

import itertools
import struct
import uuid
from typing import TYPE_CHECKING

from offsets_platform.codec import encode as enc

from .groups import Group, Topic, member_host
from .scenarios import SECOND

if TYPE_CHECKING:
    from .simulation import Simulation

_INT32 = struct.Struct(">i")


class ClassicGroup(Group):
    """A classic group (protocol_type "consumer" or "connect"): one group record per completed rebalance."""

    standalone = False

    def __init__(self, sim: Simulation, name: str, topics: list[Topic], interval: int, *, members: int,
                 protocol_type: str = "consumer", protocol: str = "range", sub_version: int = 3,
                 static: bool = False, metadata: str = ""):
        super().__init__(sim, name, topics, interval, metadata)
        self.initial_members, self.protocol_type, self.protocol = members, protocol_type, protocol
        self.sub_version, self.static = sub_version, static
        self.generation, self.members, self.owned = 0, [], {}
        self.key = enc.group_metadata_key(name)
        self.clients = itertools.count(1)

    def _new_member(self) -> dict:
        k, rng = next(self.clients), self.rng
        connect = self.protocol_type == "connect"
        client_id = f"connect-{k}" if connect else f"consumer-{self.name}-{k}"
        instance = f"{self.name}-{k}" if self.static else None
        return {"member_id": f"{instance or client_id}-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
                "group_instance_id": instance, "client_id": client_id, "client_host": member_host(rng),
                "rebalance_timeout": 60_000 if connect else 300_000,
                "session_timeout": 10_000 if connect else 45_000, "rack": f"az{k % 3 + 1}"}

    def _assign(self) -> dict[str, dict[str, list[int]]]:
        ids = sorted(m["member_id"] for m in self.members)
        out: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
        if self.protocol == "range":
            for topic in sorted(self.topics, key=lambda t: t.name):
                share, extra = divmod(topic.partitions, len(ids))
                p = 0
                for i, member in enumerate(ids):
                    n = share + (i < extra)
                    if n:
                        out[member][topic.name] = list(range(p, p + n))
                    p += n
        else:  # round robin stands in for the sticky and connect assignors
            pairs = [(t.name, p) for t in sorted(self.topics, key=lambda t: t.name) for p in range(t.partitions)]
            for i, (topic, p) in enumerate(pairs):
                out[ids[i % len(ids)]].setdefault(topic, []).append(p)
        return out

    def _payloads(self, member: dict, assigned: dict, leader: dict) -> tuple[bytes, bytes]:
        owned = self.owned.get(member["member_id"])
        if self.protocol_type == "connect":  # Connect's own protocol: opaque to the coordinator
            url = f"http://{member['client_host'][1:]}:8083/"
            sub = enc.int16(2) + enc.string(url) + enc.int64(self.generation * 7) + enc.bytes_field(None)
            assignment = (enc.int16(2) + enc.int16(0) + enc.string(leader["member_id"])
                          + enc.string(f"http://{leader['client_host'][1:]}:8083/") + enc.int64(self.generation * 7)
                          + enc.array(assigned.items(),
                                      lambda ct: enc.string(ct[0] + "-sink") + enc.array(ct[1], enc.int32))
                          + enc.array([], enc.string) + enc.int32(0))
            return sub, assignment
        coop = self.protocol == "cooperative-sticky"
        previous = self.generation - 1 if owned is not None else -1
        sub = enc.consumer_subscription(
            [t.name for t in self.topics], user_data=_INT32.pack(previous) if coop else None,
            owned_partitions=owned if coop and owned else None, generation_id=previous,
            rack_id=member["rack"], version=self.sub_version)
        return sub, enc.consumer_assignment(assigned, version=self.sub_version)

    def group_record(self, now: int) -> tuple:
        self.generation += 1
        if not self.members:  # Empty: no protocol, no leader; the timestamp says when it became Empty
            self.owned = {}
            value = enc.group_metadata_value(self.protocol_type, self.generation, None, None, now, [], version=3)
            return (self.pid, self.key, value, now)
        assignment, leader = self._assign(), self.members[0]
        members = []
        for m in self.members:
            sub, assigned = self._payloads(m, assignment[m["member_id"]], leader)
            members.append(dict(m, subscription=sub, assignment=assigned))
        self.owned = assignment
        # Kafka stamps the state change into CompletingRebalance, just before the leader's SyncGroup
        value = enc.group_metadata_value(self.protocol_type, self.generation, self.protocol, leader["member_id"],
                                         now - self.rng.randint(5, 400), members, version=3)
        return (self.pid, self.key, value, now)

    def join(self, now: int, members: int) -> list[tuple]:
        self.members = [self._new_member() for _ in range(members)]
        return [(now, [self.group_record(now)])]

    def on_rebalance(self, now: int, members: int) -> list[tuple]:
        if members <= len(self.members):
            leaving = len(self.members) - members or 1  # same size: the oldest restarts, with a new id
            self.members = self.members[leaving:]
        while len(self.members) < members:
            self.members.append(self._new_member())
        return [(now, [self.group_record(now)])]

    def on_subscribe(self, now: int, names: tuple[str, ...] | None) -> list[tuple]:
        current = [t.name for t in self.topics]
        if names is None:
            if len(current) > 1 and self.rng.random() < 0.6:
                dropped = self.rng.choice(current)
                names = tuple(n for n in current if n != dropped)
            else:
                extra = [t.name for t in self.sim.team_topics if t.name not in current]
                names = tuple(current + [self.rng.choice(extra)])
        self.topics = [t for t in self.topics if t.name in names]
        if self.protocol_type == "consumer":  # KIP-496: unsubscribed offsets expire by commit time
            self._orphan([e for e in self.live if e[5] not in names])
        self.live = [e for e in self.live if e[5] in names]
        self.orphans = [[due, [e for e in entries if e[5] not in names]] for due, entries in self.orphans]
        for name in names:
            if name not in current:
                self._add_topic(self.sim.topics[name])
        if self.ms_per_record and self.live:
            self.interval = max(5 * SECOND, int(len(self.live) * self.ms_per_record))
        return [(now, [self.group_record(now)])]

    def on_empty(self, now: int, _) -> list[tuple]:
        self.members = []
        self._become_empty(now)
        return [(now, [self.group_record(now)])]

    def group_tombstones(self, now: int) -> list[tuple]:
        return [(self.pid, self.key, None, now)]
