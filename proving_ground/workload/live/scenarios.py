"""What the live workload creates: its topics (with configs), its groups, and its timeline.

Names follow `proving_ground.workload.scenarios` (the generated coordinator history), so a
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
"""retention.ms of the short-retention topics. Kafka deletes whole segments whose newest message
is older than this; segment.ms below rolls segments so that a topic written every tick has
closed segments to delete."""
SHORT_SEGMENT_MS = 1_000
RETENTION_WAIT_S = 12.0
"""After production, how long to wait for retention to pass billing-slow's commits before the
driver moves the log start itself with DeleteRecords (for a broker whose retention task has not
run: Kafka starts it log.initial.task.delay.ms = 30 s after startup and repeats it every
log.retention.check.interval.ms, 5 minutes by default)."""

# Group kinds: how the group's members talk to Kafka's group coordinator.
CLASSIC = "classic consumer"
"""subscribe() with the classic protocol (JoinGroup / SyncGroup / Heartbeat)."""
KIP848 = "consumer (KIP-848)"
"""subscribe() to topic names with group.protocol=consumer (ConsumerGroupHeartbeat)."""
KIP848_REGEX = "KIP-848 regex"
"""subscribe() to a regular expression with group.protocol=consumer; the broker resolves it."""
TRANSACTIONAL = "transactional"
"""A classic member whose offsets a transactional producer commits (TxnOffsetCommit)."""
STANDALONE = "standalone"
"""assign() + commit with a group.id and no membership."""
CONNECT = "connect"
"""Classic protocol with protocol type "connect" (Kafka Connect workers)."""
SHARE = "share"
"""A share group (KIP-932): Kafka's ConsoleShareConsumer."""
STREAMS = "streams"
"""A streams group (KIP-1071): Kafka Streams' WordCountDemo with group.protocol=streams."""
KINDS = (CLASSIC, KIP848, KIP848_REGEX, TRANSACTIONAL, STANDALONE, CONNECT, SHARE, STREAMS)

GROUP_TYPE = {CLASSIC: "classic", KIP848: "consumer", KIP848_REGEX: "consumer", TRANSACTIONAL: "classic",
              STANDALONE: "classic", CONNECT: "classic", SHARE: "share", STREAMS: "streams"}
"""The group type ListGroups (v5, KIP-848) reports for each kind."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    retention_ms: int
    per_tick: int
    """Messages the workload's producer writes per tick at scale 1.0 (0: an application's output)."""
    segment_ms: int | None = None

    @property
    def short_retention(self) -> bool:
        return self.retention_ms < 60_000

    @property
    def output(self) -> bool:
        """Written by a scenario's application (the transactional or the streams app), not the producer."""
        return self.per_tick == 0

    @property
    def configs(self) -> dict[str, str]:
        configs = {"cleanup.policy": "delete", "retention.ms": str(self.retention_ms)}
        if self.segment_ms is not None:
            configs["segment.ms"] = str(self.segment_ms)
        return configs


STREAMS_INPUT = "streams-plaintext-input"
STREAMS_OUTPUT = "streams-wordcount-output"
"""WordCountDemo's fixed topic names."""
TRANSACTIONAL_OUTPUT = "fx-rates-enriched"
REGEX = "^clickstream-.*"

TOPICS: dict[str, TopicSpec] = {t.name: t for t in (
    TopicSpec("orders", 6, 7 * DAY_MS, 40),
    TopicSpec("invoices", 4, SHORT_RETENTION_MS, 24, SHORT_SEGMENT_MS),
    TopicSpec("search-queries", 3, 7 * DAY_MS, 30),
    TopicSpec("search-clicks", 3, SHORT_RETENTION_MS, 30, SHORT_SEGMENT_MS),
    TopicSpec("report-requests", 2, DAY_MS, 10),
    TopicSpec("ledger-entries", 3, 30 * DAY_MS, 15),
    TopicSpec("s3-sink-input", 2, 7 * DAY_MS, 12),
    TopicSpec("payments", 4, 7 * DAY_MS, 20),
    TopicSpec("clickstream-web", 2, DAY_MS, 16),
    TopicSpec("clickstream-app", 2, DAY_MS, 12),
    TopicSpec("fx-rates", 2, 7 * DAY_MS, 8),
    TopicSpec(TRANSACTIONAL_OUTPUT, 2, 7 * DAY_MS, 0),
    TopicSpec("alerts", 2, 7 * DAY_MS, 6),
    TopicSpec(STREAMS_INPUT, 2, 7 * DAY_MS, 6),
    TopicSpec(STREAMS_OUTPUT, 2, 7 * DAY_MS, 0),
)}


@dataclass(frozen=True)
class GroupSpec:
    group: str
    scenario: str
    kind: str
    """One of KINDS."""
    topics: tuple[str, ...]
    """Topics it reads during the run (before any subscription change; for the regex group, the
    topics its expression matches)."""
    members: int
    keep_alive: bool
    """Stays Stable with live members after the run when keep_alive=True."""
    story: str

    @property
    def group_type(self) -> str:
        return GROUP_TYPE[self.kind]


GROUPS: dict[str, GroupSpec] = {g.group: g for g in (
    GroupSpec("orders-active", "active", CLASSIC, ("orders",), 2, True,
              "2 members keep up with orders and commit every tick; ends at the log end (lag 0)"),
    GroupSpec("billing-slow", "slow", CLASSIC, ("invoices",), 1, True,
              f"consumes a few invoices per tick, stalls (pauses) at tick {SLOW_STALL_TICK}; "
              "short retention then deletes messages it never consumed"),
    GroupSpec("search-changed-subscription", "changed-subscription", CLASSIC,
              ("search-queries", "search-clicks"), 1, True,
              f"reads and commits both topics, re-subscribes to search-queries only at tick "
              f"{RESUBSCRIBE_TICK} (a new generation); its search-clicks offsets stay behind"),
    GroupSpec("reports-stopped", "stopped", CLASSIC, ("report-requests",), 2, False,
              f"2 members commit, then close cleanly (LeaveGroup) at tick {REPORTS_STOP_TICK}: Empty"),
    GroupSpec("ledger-standalone", "standalone", STANDALONE, ("ledger-entries",), 0, False,
              "assign() + commit with a group.id but no membership (a simple group)"),
    GroupSpec("connect-sink", "non-consumer-protocol", CONNECT, ("s3-sink-input",), 2, True,
              "2 Kafka Connect workers join with protocol_type 'connect' (eager 'default' protocol, "
              "Connect's own metadata bytes) and commit s3-sink-input offsets one tick behind"),
    GroupSpec("payments-kip848", "kip848", KIP848, ("payments",), 2, True,
              "2 members of a KIP-848 consumer group (group.protocol=consumer; the broker assigns "
              "partitions) keep up with payments and commit every tick"),
    GroupSpec("clickstream-regex", "kip848-regex", KIP848_REGEX, ("clickstream-app", "clickstream-web"), 1, True,
              f"a KIP-848 member subscribed to the regular expression {REGEX}; the broker resolves it "
              "to both clickstream topics and the member commits every tick"),
    GroupSpec("fx-transactional", "transactional", TRANSACTIONAL, ("fx-rates",), 1, True,
              f"consume-transform-produce: reads fx-rates (read_committed), writes {TRANSACTIONAL_OUTPUT} and "
              "commits its offsets inside the producer's transaction (send_offsets_to_transaction)"),
    GroupSpec("alerts-share", "share", SHARE, ("alerts",), 1, True,
              "Kafka's ConsoleShareConsumer reads alerts in a share group (KIP-932, queue semantics: "
              "records are acknowledged, no offsets are committed)"),
    GroupSpec("wordcount-streams", "streams", STREAMS, (STREAMS_INPUT,), 1, True,
              f"Kafka Streams' WordCountDemo with group.protocol=streams (KIP-1071) counts the words of "
              f"{STREAMS_INPUT} into {STREAMS_OUTPUT}, committing every 500 ms"),
)}

CHANGED_GROUP = "search-changed-subscription"
CHANGED_KEPT_TOPIC = "search-queries"
CHANGED_LEFT_TOPIC = "search-clicks"
