"""The named scenarios (`SCENARIOS`) as simulated groups: each one's kind, pace and plan of events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .classic_group import ClassicGroup
from .groups import Group, LegacyGroup
from .kip848_group import Kip848Group
from .scenarios import DAY, HOUR, MINUTE, SCENARIOS, SECOND

if TYPE_CHECKING:
    from .simulation import Simulation


def start_scenarios(sim: Simulation) -> None:
    """Spawn every scenario group in `sim`, each starting in the first 10 minutes."""
    s, topics = sim.start, sim.topics
    starts = {name: s + sim.rng.randrange(10 * MINUTE) for name in SCENARIOS}

    def group(cls, name, interval, **kwargs):
        return cls(sim, name, [topics[t] for t in SCENARIOS[name].topics], interval, **kwargs)

    restarts = [step for d in range(2, 60, 2) for step in
                ((s + d * DAY + 5 * HOUR, "rebalance", 2), (s + d * DAY + 5 * HOUR + 40 * SECOND, "rebalance", 3))]
    lives = [
        (group(ClassicGroup, "orders-active", HOUR, members=3), restarts),
        (group(ClassicGroup, "billing-slow", 6 * HOUR, members=1, sub_version=1, metadata="batch=nightly"), []),
        (group(ClassicGroup, "search-changed-subscription", HOUR, members=2, protocol="cooperative-sticky",
               sub_version=2), [(s + 36 * HOUR, "subscribe", ("search-queries",))]),
        (group(ClassicGroup, "reports-stopped", HOUR, members=2), [(s + DAY, "empty", None)]),
        (group(Group, "ledger-standalone", HOUR, metadata="writer=ledger-7"),
         [(s + 12 * HOUR, "stop_partitions", (2,))]),
        (group(ClassicGroup, "connect-sink", HOUR, members=2, protocol_type="connect", protocol="sessioned"),
         [(s + 3 * DAY, "rebalance", 3)]),
        (group(Kip848Group, "payments-kip848", HOUR, members=2),
         [(s + 2 * DAY, "rebalance", 3), (s + 4 * DAY, "rebalance", 2)]),
        (group(LegacyGroup, "inventory-legacy", HOUR), [(s + 30 * HOUR, "stop", None)]),
    ]
    for g, plan in lives:
        sim.spawn(g.life(starts[g.name], plan))
