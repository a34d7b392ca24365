"""The named scenario groups every run tells the story of, and the simulation's time constants."""

from __future__ import annotations

from dataclasses import dataclass

SECOND, MINUTE, HOUR, DAY = 1_000, 60_000, 3_600_000, 86_400_000
RETENTION_MS = 7 * DAY
"""offsets.retention.minutes default (10080)."""
RETENTION_CHECK_INTERVAL_MS = 10 * MINUTE
"""offsets.retention.check.interval.ms default: expirations happen only at these ticks."""


@dataclass(frozen=True)
class Scenario:
    """A named group whose story every run tells (tests and the demo point at these)."""

    group: str
    kind: str  # "consumer", "standalone", "connect", "kip848" or "legacy"
    topics: tuple[str, ...]
    story: str


SCENARIOS: dict[str, Scenario] = {s.group: s for s in (
    Scenario("orders-active", "consumer", ("orders", "orders-retry"),
             "3 members, range, commits hourly; a member restarts every 2 days (two rebalances)"),
    Scenario("billing-slow", "consumer", ("invoices",),
             "1 member commits every 6 h with metadata text; Stable and subscribed, so nothing expires"),
    Scenario("search-changed-subscription", "consumer", ("search-queries", "search-clicks"),
             "cooperative-sticky; at +36 h rebalances without search-clicks, whose offsets stay "
             "behind and expire 7 days after their last commit"),
    Scenario("reports-stopped", "consumer", ("report-requests",),
             "goes Empty at +24 h; offsets then group record tombstoned at the first cleanup >= 7 days later"),
    Scenario("ledger-standalone", "standalone", ("ledger-entries",),
             "commits without a group record; partition 2 stops at +12 h and expires 7 days after"),
    Scenario("connect-sink", "connect", ("s3-sink-input",),
             "protocol_type connect, opaque member bytes; a 3rd worker joins at +3 days; nothing expires"),
    Scenario("payments-kip848", "kip848", ("payments",),
             "KIP-848 group (types 3-8): 2 members, a 3rd joins at +2 days, the 1st leaves at +4 days "
             "(tombstones for its types 8, 7, 5)"),
    Scenario("inventory-legacy", "legacy", ("inventory-snapshots",),
             "standalone old clients: key type 0 with values v0 then v2, then values v1 with an "
             "expire_timestamp 1 day ahead; stops at +30 h and is tombstoned at that expire_timestamp"),
)}
"""Named scenario groups, by group name."""

SCENARIO_TOPICS = {"orders": 4, "orders-retry": 1, "invoices": 3, "search-queries": 3, "search-clicks": 2,
                   "report-requests": 2, "ledger-entries": 3, "s3-sink-input": 2, "payments": 4,
                   "inventory-snapshots": 2}
"""Partitions of each topic the scenario groups read."""
SCENARIO_RECORDS_ESTIMATE = 4_300
"""About how many records the scenario groups write over a run (the team groups write the rest)."""
