"""What a live workload run created and left behind: `LiveWorkload` and its parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from .keepalive import KeepAlive


@dataclass(frozen=True)
class LiveTopic:
    name: str
    partitions: int
    configs: dict[str, str]
    """cleanup.policy, retention.ms, segment.ms as DescribeConfigs reports them."""
    short_retention: bool
    produced: int
    produced_by_partition: dict[int, int]
    digests_by_partition: dict[int, str]
    """sha256 of each partition's (key, value) sequence as delivered (see messages.digest_update)."""
    log_start_offsets: dict[int, int]
    """ListOffsets earliest at the end of the run (retention or DeleteRecords moves it)."""
    log_end_offsets: dict[int, int]
    first_deletion_s: float | None
    """Short-retention topics: seconds from the first produce until the log start first moved
    (None: it had not moved by the end, or the topic is not watched)."""


@dataclass(frozen=True)
class LiveGroup:
    group: str
    scenario: str
    """"active", "slow", "changed-subscription", "stopped", "standalone", "non-consumer-protocol",
    "kip848", "kip848-regex", "transactional", "share", "streams"."""
    kind: str
    """How its members talk to the group coordinator: "classic consumer", "consumer (KIP-848)",
    "KIP-848 regex", "transactional", "standalone", "connect", "share" or "streams"
    (scenarios.KINDS)."""
    group_type: str
    """As ListGroups v5 reports it: "classic", "consumer", "share" or "streams"."""
    protocol_type: str
    """As ListGroups reports it: "consumer", "connect", "share", "streams", or "" for the standalone group."""
    expected_state: str
    """"Stable" (live members kept alive until LiveWorkload.stop()) or "Empty"."""
    state: str
    """The state ListGroups reported at the end of the run (verify checks it equals expected_state)."""
    members: int
    """Live members at the end (0 once Empty): DescribeGroups for classic groups,
    ConsumerGroupDescribe for KIP-848 groups; for share and streams groups, which neither Python
    client describes, the Java processes of the run that are still in the group."""
    subscribed_topics: tuple[str, ...]
    """Topics the members read at the end (for an Empty group: their last subscription; for the
    standalone consumer: the topic it assigned itself; for the Connect group: (), since Connect
    worker metadata names no topics; for the regex group: the topics the broker resolved)."""
    subscription_regex: str | None
    """The regular expression of a KIP-848 regex group, else None."""
    committed_topics: tuple[str, ...]
    """Topics with committed offsets at the end (OffsetFetch; none for a share group, which
    acknowledges records instead of committing offsets)."""
    left_behind_topics: tuple[str, ...]
    """Committed topics no member subscribes to any more (the changed-subscription group's B)."""
    kept_alive: bool
    committed: dict[tuple[str, int], int]
    """Committed offsets at the end of the run, (topic, partition) -> offset."""
    story: str


@dataclass
class LiveWorkload:
    """The cluster state a `run_live_workload` call left, and the handle to end its live members."""

    bootstrap_servers: str
    seed: int
    scale: float
    keep_alive: bool
    topics: dict[str, LiveTopic]
    groups: dict[str, LiveGroup]
    retention_mode: str
    """"retention.ms": the broker's retention moved billing-slow's log start past its committed
    offsets during the run; "delete_records": it was too slow, and DeleteRecords did it."""
    retention_note: str
    changed_subscription: dict[str, object]
    """{"group", "kept_topic", "left_behind_topic", "stays_stable"} for the changed-subscription group."""
    broker_observations: dict[str, object]
    """What the broker reported where Kafka's behaviour is not obvious (group types, the standalone
    group's listing, the Connect group, the transaction, what the Java members did, retention
    speed), and "client_errors": errors the clients met and recovered from (e.g. a commit refused
    during a rebalance, retried on the next tick)."""
    duration_s: float
    _keeper: KeepAlive | None = field(default=None, repr=False, compare=False)

    @property
    def running(self) -> bool:
        """True while the keep-alive thread holds members in their groups."""
        return self._keeper is not None and self._keeper.running

    @property
    def keep_alive_errors(self) -> list[str]:
        return list(self._keeper.errors) if self._keeper else []

    def stop(self) -> None:
        """End the keep-alive thread, close its members (LeaveGroup, or a leaving heartbeat) and
        stop the share consumer's and the streams app's JVMs; idempotent."""
        if self._keeper is not None:
            self._keeper.stop()
