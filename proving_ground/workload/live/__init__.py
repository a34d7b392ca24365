"""A live workload: real producers and groups of every kind driving a real Kafka cluster.

`proving_ground.workload` generates coordinator *records* for scale; this package is its live
counterpart, whose records Kafka's own group coordinator writes into `__consumer_offsets`.
`run_live_workload(bootstrap_servers, seed=7, scale=1.0)` creates fifteen topics, runs eleven
group scenarios for TICKS * TICK_S = 12 s and returns a `LiveWorkload` saying what it left
(about 19 s in all on the embedded Apache Kafka broker at scale 0.2):

- orders-active: 2 classic members keep up with `orders`; committed = log end (lag 0).
- billing-slow: stalls (pauses) at tick 4; `invoices` (retention.ms 3000) then deletes what it
  never read, so its committed offsets end below the log start. Stable with a paused member.
- search-changed-subscription: reads and commits `search-queries` and `search-clicks`, then
  re-subscribes to `search-queries` only (rejoin, new generation); its `search-clicks` offsets
  stay behind.
- reports-stopped: 2 members commit, then leave (LeaveGroup). Empty.
- ledger-standalone: assign() + commit, no membership. Empty, protocol type "".
- connect-sink: 2 Connect workers (kafka-python's BaseCoordinator), protocol type "connect",
  committing `s3-sink-input`.
- payments-kip848: 2 members of a KIP-848 group (`group.protocol=consumer`) keep up with
  `payments`.
- clickstream-regex: a KIP-848 member subscribed to `^clickstream-.*`; the broker resolves the
  expression to both clickstream topics (it writes the resolution as its own record).
- fx-transactional: consume-transform-produce whose offsets a producer commits inside its
  transactions (TxnOffsetCommit).
- alerts-share: a share group (KIP-932) read by Kafka's own console share consumer.
- wordcount-streams: a streams group (KIP-1071) of Kafka Streams' own WordCountDemo.

The groups other than reports-stopped and ledger-standalone end Stable when `keep_alive=True`
(the default): one background thread polls the Python members, and the two Java programs keep
running, until `LiveWorkload.stop()` (idempotent; also registered at exit), which closes them all
so the groups go Empty at once. With keep_alive=False every client is closed before
`run_live_workload` returns.

Retention is real: `invoices` and `search-clicks` have retention.ms=3000 and segment.ms=1000, and
the embedded broker checks retention every second (Kafka deletes whole segments, so without a
small segment.ms a topic written continuously keeps its one active segment). The log start first
moves about 4-5 s after the first produce. On a broker whose retention is slower (Kafka checks
every log.retention.check.interval.ms, 5 minutes by default) the run waits RETENTION_WAIT_S and
then moves the `invoices` log start to the log end with DeleteRecords, and does the same on
`search-clicks` for the offsets search-changed-subscription left there;
`LiveWorkload.retention_mode` ("retention.ms" or "delete_records", for `invoices`) and
`retention_note` (both topics) say which happened. `produce_after_the_group_left(workload)`
writes one more tick to `search-clicks` after the run and waits until retention deleted some of
it: a loss of a group that had left the topic, for a caller that snapshots before and after.

Client facts met on the way (kafka-python 3.0.12, confluent-kafka 2.16.1, Kafka 4.3):
- kafka-python's `describe_groups` raises ValueError on a Connect group because it decodes every
  member's metadata as a consumer subscription (`clients.describe_groups_raw` returns the bytes).
- confluent-kafka lists and describes classic and KIP-848 groups only; kafka-python's
  `list_groups` lists share and streams groups with their type. Neither client has
  ShareGroupDescribe or StreamsGroupDescribe.
- Kafka resolves a regular expression asynchronously, at most every 10 s, and again when new
  topics appear; the regex member therefore subscribes once its topics exist (`form_groups`).
"""

from .clients import describe_groups_raw
from .result import LiveGroup, LiveTopic, LiveWorkload
from .run import produce_after_the_group_left, run_live_workload
from .snapshot import LiveWorkloadError

__all__ = ["LiveGroup", "LiveTopic", "LiveWorkload", "LiveWorkloadError", "describe_groups_raw",
           "produce_after_the_group_left", "run_live_workload"]
