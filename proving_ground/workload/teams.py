"""The generated "team-NNN-..." groups: their topics, their kind, their pace and a random life plan.

Team groups carry most of the traffic: the simulation keeps a number of team slots alive (a
retired team spawns its successor) and sizes their commit intervals so the run spans ~9 days.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .classic_group import ClassicGroup
from .groups import Group, LegacyGroup, Topic, member_host
from .kip848_group import Kip848Group
from .scenarios import DAY, HOUR, SECOND

if TYPE_CHECKING:
    from .simulation import Simulation

_TEAM_TOPICS = ("clickstream", "user-events", "notifications", "audit-log", "shipments", "inventory-updates",
                "metrics", "emails", "sessions", "fraud-signals", "recommendations", "price-changes",
                "cdc.customers", "cdc.accounts", "logs.app", "logs.gateway")
_PURPOSES = ("analytics", "etl", "alerts", "indexer", "sync", "audit", "ml-features", "reporting",
             "search", "archiver", "enricher", "notifier")
_TEAM_KINDS = ("consumer", "standalone", "kip848", "connect", "legacy")
_TEAM_WEIGHTS = (70, 15, 8, 5, 2)


def team_topics(rng: random.Random) -> list[Topic]:
    """The topics team groups read, with random partition counts."""
    return [Topic(rng, name, rng.choice((1, 3, 6, 6, 12, 12, 24))) for name in _TEAM_TOPICS]


def many_team_topics(rng: random.Random, partitions: int) -> list[Topic]:
    """Topics named after the usual team topics ("clickstream.00017"), with the same random
    partition counts, until they hold at least `partitions` partitions (a large cluster)."""
    topics: list[Topic] = []
    total = 0
    while total < partitions:
        count = rng.choice((1, 3, 6, 6, 12, 12, 24))
        topics.append(Topic(rng, f"{_TEAM_TOPICS[len(topics) % len(_TEAM_TOPICS)]}.{len(topics):05d}", count))
        total += count
    return topics


def team_plan(rng: random.Random, kind: str, start: int) -> list[tuple]:
    """A random life: rebalances, maybe a subscription change; then Empty, restarted, deleted or left to expire."""
    plan: list[tuple] = []
    end = start + int(rng.uniform(0.5, 8) * DAY) if rng.random() < 0.45 else start + 60 * DAY
    t, changed = start, False
    while True:
        t += 1 + int(rng.expovariate(1 / (1.5 * DAY)))
        if t >= end:
            break
        if kind == "consumer" and not changed and rng.random() < 0.25:
            changed = True
            plan.append((t, "subscribe", None))
            if rng.random() < 0.3:
                plan.append((t + rng.randrange(HOUR, 5 * DAY), "offset_delete", None))
        elif kind in ("standalone", "legacy"):
            if rng.random() < 0.2:
                plan.append((t, "stop_partitions", None))
        else:
            plan.append((t, "rebalance", rng.randint(1, 4)))
    if end - start < 60 * DAY:
        if kind in ("standalone", "legacy"):
            plan += [(end, "stop", None), (end, "retire", None)]
        else:
            plan.append((end, "empty", None))
            fate = rng.random()
            if fate < 0.3:
                plan.append((end + rng.randrange(HOUR, 3 * DAY), "restart", rng.randint(1, 3)))
            else:
                plan.append((end, "retire", None))
            if 0.3 <= fate < 0.6:
                plan.append((end + rng.randrange(HOUR, 3 * DAY), "delete", None))
    plan.sort(key=lambda step: step[0])  # stable: same-time steps keep their order
    return plan


def team_life(sim: Simulation, number: int, at: int) -> Iterator[tuple]:
    """A new team group, numbered `number`, whose life starts at `at`."""
    rng = sim.rng
    kind = rng.choices(_TEAM_KINDS, _TEAM_WEIGHTS)[0]
    name = f"team-{number:03d}-{rng.choice(_PURPOSES)}"
    topics = rng.sample(sim.team_topics, rng.choice((1, 1, 2, 2, 3)))
    parts = sum(t.partitions for t in topics)
    slow = 4 if kind == "legacy" else 1  # legacy clients stay a small share of the traffic
    interval = max(5 * SECOND, int(parts * sim.team_ms_per_record * slow * rng.uniform(0.7, 1.3)))
    metadata = f"{name}@{member_host(rng)[1:]}" if rng.random() < 0.1 else ""
    if kind == "consumer":
        group = ClassicGroup(sim, name, topics, interval, members=rng.randint(1, 4), metadata=metadata,
                             protocol=rng.choice(("range", "range", "cooperative-sticky")),
                             sub_version=rng.randint(1, 3), static=rng.random() < 0.2)
    elif kind == "connect":
        group = ClassicGroup(sim, name, topics, interval, members=rng.randint(1, 3),
                             protocol_type="connect", protocol="sessioned")
    elif kind == "kip848":
        group = Kip848Group(sim, name, topics, interval, members=rng.randint(1, 4), metadata=metadata)
    else:
        group = (LegacyGroup if kind == "legacy" else Group)(sim, name, topics, interval, metadata)
    group.ms_per_record = interval / parts
    return group.life(at, team_plan(rng, kind, at))
