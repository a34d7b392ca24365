"""What the live workload creates: its topics (with configs), its groups, and its timeline.

Names follow `offsets_platform.workload.scenarios` (the generated coordinator history), so a
live cluster and a generated `__consumer_offsets` tell the same stories.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 86_400_000

TICK_S = 0.5
"""The driver produces, consumes and commits once per tick."""
TICKS = 24
"""Production lasts TICKS * TICK_S seconds whatever the scale (scale changes counts only)."""
SLOW_STALL_TICK = 4
"""billing-slow consumes a little until this tick, then its downstream is down: it pauses."""
RESUBSCRIBE_TICK = 10
"""search-changed-subscription re-subscribes to search-queries only at this tick."""
REPORTS_STOP_TICK = 12
"""reports-stopped closes its members (LeaveGroup) at this tick; producers keep writing."""

SHORT_RETENTION_MS = 3_000
"""retention.ms of the short-retention topics; segment.ms below rolls segments so it can act."""
SHORT_SEGMENT_MS = 1_000
RETENTION_WAIT_S = 12.0
"""After production, how long to wait for retention to pass billing-slow's commits before the
driver moves the log start itself with DeleteRecords (the fallback for slow retention)."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    retention_ms: int
    per_tick: int
    """Messages produced per tick at scale 1.0."""
    segment_ms: int | None = None

    @property
    def short_retention(self) -> bool:
        return self.retention_ms < 60_000

    @property
    def configs(self) -> dict[str, str]:
        configs = {"cleanup.policy": "delete", "retention.ms": str(self.retention_ms)}
        if self.segment_ms is not None:
            configs["segment.ms"] = str(self.segment_ms)
        return configs


TOPICS: dict[str, TopicSpec] = {t.name: t for t in (
    TopicSpec("orders", 6, 7 * DAY_MS, 40),
    TopicSpec("invoices", 4, SHORT_RETENTION_MS, 24, SHORT_SEGMENT_MS),
    TopicSpec("search-queries", 3, 7 * DAY_MS, 30),
    TopicSpec("search-clicks", 3, SHORT_RETENTION_MS, 30, SHORT_SEGMENT_MS),
    TopicSpec("report-requests", 2, DAY_MS, 10),
    TopicSpec("ledger-entries", 3, 30 * DAY_MS, 15),
    TopicSpec("s3-sink-input", 2, 7 * DAY_MS, 12),
)}


@dataclass(frozen=True)
class GroupSpec:
    group: str
    scenario: str
    kind: str
    """"consumer" (subscribe), "standalone" (assign, no membership) or "connect"."""
    topics: tuple[str, ...]
    """Topics it reads during the run (before any subscription change)."""
    members: int
    keep_alive: bool
    """Stays Stable with live members after the run when keep_alive=True."""
    story: str


GROUPS: dict[str, GroupSpec] = {g.group: g for g in (
    GroupSpec("orders-active", "active", "consumer", ("orders",), 2, True,
              "2 members keep up with orders and commit every tick; ends at the log end (lag 0)"),
    GroupSpec("billing-slow", "slow", "consumer", ("invoices",), 1, True,
              f"consumes a few invoices per tick, stalls (pauses) at tick {SLOW_STALL_TICK}; "
              "short retention then deletes messages it never consumed"),
    GroupSpec("search-changed-subscription", "changed-subscription", "consumer",
              ("search-queries", "search-clicks"), 1, True,
              f"reads and commits both topics, re-subscribes to search-queries only at tick "
              f"{RESUBSCRIBE_TICK} (a new generation); its search-clicks offsets stay behind"),
    GroupSpec("reports-stopped", "stopped", "consumer", ("report-requests",), 2, False,
              f"2 members commit, then close cleanly (LeaveGroup) at tick {REPORTS_STOP_TICK}: Empty"),
    GroupSpec("ledger-standalone", "standalone", "standalone", ("ledger-entries",), 0, False,
              "assign() + commit with a group.id but no membership (a simple group)"),
    GroupSpec("connect-sink", "non-consumer-protocol", "connect", ("s3-sink-input",), 2, True,
              "2 Kafka Connect workers join with protocol_type 'connect' (eager 'default' protocol, "
              "Connect's own metadata bytes) and commit s3-sink-input offsets one tick behind"),
)}

CHANGED_GROUP = "search-changed-subscription"
CHANGED_KEPT_TOPIC = "search-queries"
CHANGED_LEFT_TOPIC = "search-clicks"
