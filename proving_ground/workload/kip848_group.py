"""KIP-848 consumer groups: records of types 3-8, written as members join, reconcile and leave."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from offsets_platform.codec import encode as enc

from .groups import Group, Topic, member_host

if TYPE_CHECKING:
    from .simulation import Simulation

_STABLE, _UNREVOKED, _UNRELEASED = 0, 1, 2  # KIP-848 MemberState


def _as_assignment(pairs: Iterable[tuple]) -> dict:
    out: dict = {}
    for topic_id, p in sorted(pairs):
        out.setdefault(topic_id, []).append(p)
    return out


class Kip848Group(Group):
    """A KIP-848 consumer group: records of types 3-8, written as members join, reconcile and leave."""

    standalone = False

    def __init__(self, sim: Simulation, name: str, topics: list[Topic], interval: int, *, members: int,
                 metadata: str = ""):
        super().__init__(sim, name, topics, interval, metadata)
        self.initial_members, self.epoch, self.members = members, 0, []
        self.metadata_topics: tuple = ()
        self.clients = itertools.count(1)
        self.keys = {t: enc.consumer_group_key(t, name) for t in (3, 4, 6)}

    def _rec(self, key_type: int, member: dict | None, value: bytes | None, at: int) -> tuple:
        key = self.keys[key_type] if member is None else enc.consumer_group_key(key_type, self.name, member["id"])
        return (self.pid, key, value, at)

    def _current(self, m: dict, state: int, at: int, pending: set = frozenset()) -> tuple:
        value = enc.consumer_group_current_member_assignment_value(
            m["epoch"], m["previous"], state, _as_assignment(m["assigned"]), _as_assignment(pending))
        return self._rec(8, m, value, at)

    def _new_epoch(self, now: int) -> tuple[list[tuple], list[dict]]:
        """Group epoch +1, a new target assignment; returns its records and the members it changed."""
        records = []
        topics = tuple(t.name for t in self.topics) if self.members else ()
        if topics != self.metadata_topics:  # the subscribed topics' metadata changed
            self.metadata_topics = topics
            value = enc.consumer_group_partition_metadata_value(
                [{"topic_id": t.topic_id, "topic_name": t.name, "num_partitions": t.partitions}
                 for t in self.topics if t.name in topics])
            records.append(self._rec(4, None, value, now))
        self.epoch += 1
        records.append(self._rec(3, None, enc.consumer_group_metadata_value(self.epoch), now))
        changed = []
        for m, target in zip(self.members, self._uniform()):
            if target != m["target"]:
                m["target"] = target
                changed.append(m)
                records.append(self._rec(7, m, enc.consumer_group_target_assignment_member_value(
                    _as_assignment(target)), now))
        records.append(self._rec(6, None, enc.consumer_group_target_assignment_metadata_value(self.epoch), now))
        return records, changed

    def _uniform(self) -> list[set]:
        """The uniform assignor, sticky: even shares, each member keeping what it can of its target."""
        pairs = sorted((t.topic_id, p) for t in self.topics for p in range(t.partitions))
        share, extra = divmod(len(pairs), max(len(self.members), 1))
        targets = [set(sorted(m["target"])[:share + (i < extra)]) for i, m in enumerate(self.members)]
        free = [pair for pair in pairs if not any(pair in t for t in targets)]
        for i, target in enumerate(targets):
            while len(target) < share + (i < extra):
                target.add(free.pop(0))
        return targets

    def _reconcile(self, now: int, changed: list[dict]) -> list[tuple]:
        """Members give up what moved away (UNREVOKED_PARTITIONS), then all converge to the target."""
        revoking = []
        for m in changed:
            pending = m["assigned"] - m["target"]
            if pending and m["epoch"] < self.epoch:
                m["assigned"] -= pending
                revoking.append(self._current(m, _UNREVOKED, now + 1500, pending))
        stable = []
        for m in changed:
            if m["epoch"] < self.epoch:
                m["previous"], m["epoch"] = m["epoch"], self.epoch
            m["assigned"] = set(m["target"])
            stable.append(self._current(m, _STABLE, now + 3000))
        return [(now + 1500, revoking), (now + 3000, stable)]

    def _join_one(self, now: int) -> list[tuple]:
        k, rng = next(self.clients), self.rng
        m = {"id": base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode(),
             "epoch": 0, "previous": 0, "assigned": set(), "target": set()}
        self.members.append(m)
        value = enc.consumer_group_member_metadata_value(
            f"consumer-{self.name}-{k}", member_host(rng), [t.name for t in self.topics],
            rebalance_timeout_ms=300_000, server_assignor="uniform")
        records, changed = self._new_epoch(now)
        records.insert(0, self._rec(5, m, value, now))
        # the newcomer takes at once what no other member still owns; the rest once it is released
        others = set().union(*(o["assigned"] for o in self.members if o is not m))
        m["epoch"], m["assigned"] = self.epoch, m["target"] - others
        waiting = m["assigned"] != m["target"]
        records.append(self._current(m, _UNRELEASED if waiting else _STABLE, now))
        return [(now, records)] + self._reconcile(now, [o for o in changed if o is not m] + [m] * waiting)

    def _leave_oldest(self, now: int) -> list[tuple]:
        m = self.members.pop(0)
        records = [self._rec(8, m, None, now), self._rec(7, m, None, now), self._rec(5, m, None, now)]
        more, changed = self._new_epoch(now)
        return [(now, records + more)] + self._reconcile(now, changed)

    def on_rebalance(self, now: int, members: int) -> list[tuple]:
        bursts: list[tuple] = []
        if members and members == len(self.members):  # same size: the oldest restarts, with a new id
            bursts += self._leave_oldest(now)
            now = bursts[-1][0] + self.rng.randint(200, 5000)
        while len(self.members) != members:
            step = self._join_one if len(self.members) < members else self._leave_oldest
            bursts += step(now)
            now = bursts[-1][0] + self.rng.randint(200, 5000)
        return bursts

    join = on_rebalance

    def on_empty(self, now: int, _) -> list[tuple]:
        bursts = self.on_rebalance(now, 0)
        self._become_empty(bursts[-1][0] if bursts else now)
        return bursts

    def expire_base(self) -> int:
        return self.last_commit or self.empty_at  # KIP-848: by commit time, once nothing is subscribed

    def group_tombstones(self, now: int) -> list[tuple]:
        return [self._rec(t, None, None, now) for t in (6, 4, 3)]
