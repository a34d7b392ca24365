"""The simulated group coordinator: topics, cleanup ticks, team pacing, and a heap of group lives.

Every group is a Python generator yielding `(time, records)` bursts; a heap merges the bursts
in time order, so the stream needs constant memory however long it runs.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Iterator

from .groups import Topic
from .scenario_groups import start_scenarios
from .scenarios import DAY, HOUR, RETENTION_CHECK_INTERVAL_MS, SCENARIO_RECORDS_ESTIMATE, SCENARIO_TOPICS
from .teams import many_team_topics, team_life, team_topics

_TEAM_SPAN_MS = int(9.2 * DAY)  # team traffic is sized so a run ends a little before "now"


def _leader_elections(sim: Simulation) -> Iterator[tuple[int, tuple]]:
    """Bump a random partition's leader epoch now and then; commits carry the new epoch."""
    rng, topics, t = sim.rng, list(sim.topics.values()), sim.start
    while True:
        t += 1 + int(rng.expovariate(1 / (4 * HOUR)))
        topic = rng.choice(topics)
        topic.epochs[rng.randrange(topic.partitions)] += 1
        yield t, ()


class Simulation:
    """The coordinator: topics, a cleanup-tick phase, and a heap of group lives merged in time order."""

    def __init__(self, seed: int, records: int, start_ms: int, partitions: int, *, groups: int | None = None,
                 topic_partitions: int | None = None):
        rng = self.rng = random.Random(seed)
        self.start, self.partitions = start_ms, partitions
        self._heap: list = []
        self._seq = itertools.count()
        self._teams = itertools.count(1)
        self._phase = start_ms - rng.randrange(RETENTION_CHECK_INTERVAL_MS)  # when the broker started
        self.topics = {name: Topic(rng, name, n) for name, n in SCENARIO_TOPICS.items()}
        self.team_topics = team_topics(rng) if topic_partitions is None else many_team_topics(rng, topic_partitions)
        self.topics.update((t.name, t) for t in self.team_topics)
        # Each team slot writes about one record per `team_ms_per_record`, so the run spans ~9.2 days;
        # `pace` corrects the drift that idle and restarting groups cause.
        slots = min(max(records // 20_000, 12), 5_000) if groups is None else groups
        team_records = max(records - SCENARIO_RECORDS_ESTIMATE, records // 5, 1)
        self.team_ms_per_record = slots * _TEAM_SPAN_MS / team_records
        self.team_records, self._team_rate = 0, slots / self.team_ms_per_record
        start_scenarios(self)
        for _ in range(slots):
            self.spawn_team(start_ms + rng.randrange(6 * HOUR))
        self.spawn(_leader_elections(self))

    def tick(self, t: int) -> int:
        """The first coordinator cleanup run at or after `t`."""
        return self._phase - (self._phase - int(t)) // RETENTION_CHECK_INTERVAL_MS * RETENTION_CHECK_INTERVAL_MS

    def pace(self, now: int) -> float:
        """How much to stretch team commit gaps: >1 when team traffic runs ahead of schedule."""
        expected = (now - self.start) * self._team_rate
        return min(max((self.team_records / expected) ** 3, 0.25), 4.0) if expected > 500 else 1.0

    def spawn(self, life: Iterator[tuple]) -> None:
        first = next(life, None)
        if first is not None:
            heapq.heappush(self._heap, (first[0], next(self._seq), first[1], life))

    def spawn_team(self, at: int) -> None:
        self.spawn(team_life(self, next(self._teams), at))

    def run(self) -> Iterator[tuple]:
        """Yield (partition, key, value, timestamp_ms) tuples in time order, without end (callers slice)."""
        heap, seq = self._heap, self._seq
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            _, _, records, life = pop(heap)
            yield from records
            nxt = next(life, None)
            if nxt is not None:
                push(heap, (nxt[0], next(seq), nxt[1], life))
