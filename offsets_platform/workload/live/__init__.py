"""A live workload: real producers, consumer groups and Connect workers driving a real cluster.

`offsets_platform.workload` writes coordinator *records* straight into `__consumer_offsets`;
this package is its live counterpart. `run_live_workload(bootstrap_servers, seed=7, scale=1.0)`
creates seven topics, runs six group scenarios for TICKS * TICK_S = 12 s with confluent-kafka
producers and consumers and kafka-python Connect workers, and returns a `LiveWorkload` saying
what it left (about 13 s in all on noida-db at scales 0.05 to 5, 16 s at scale 50):

- orders-active: 2 members keep up with `orders`; committed = log end (lag 0).
  Stable (Empty with keep_alive=False).
- billing-slow: stalls (pauses) at tick 4; `invoices` (retention.ms 3000) then deletes what it
  never read, so its committed offsets end below the log start. Stable with a paused member
  (Empty with keep_alive=False).
- search-changed-subscription: reads and commits `search-queries` and `search-clicks`, then
  re-subscribes to `search-queries` only (rejoin, new generation); its `search-clicks` offsets
  stay behind. Stable (Empty with keep_alive=False).
- reports-stopped: 2 members commit, then close (LeaveGroup). Empty.
- ledger-standalone: assign() + commit, no membership. Empty, protocol type "".
- connect-sink: 2 Connect workers, protocol_type "connect", protocol "default", committing
  `s3-sink-input`. Stable (Empty with keep_alive=False).

Stable groups need live members, so with `keep_alive=True` (the default) one background thread
polls them until `LiveWorkload.stop()` (idempotent; also registered at exit), which closes them
with LeaveGroup so the groups go Empty. Nothing else keeps running: every other client is closed
before `run_live_workload` returns, and with keep_alive=False no thread is left at all.

Retention is real on noida-db: `invoices` and `search-clicks` have retention.ms=3000 and
segment.ms=1000, and the log start first moves about 4.5 s after the first produce (it deletes
whole segments, checking about once a second; without a small segment.ms a topic written
continuously keeps its single active segment and nothing is deleted). On a broker whose
retention is slower (Kafka checks every log.retention.check.interval.ms, 5 minutes by default)
the run waits RETENTION_WAIT_S and then moves the `invoices` log start to the log end with
DeleteRecords; `LiveWorkload.retention_mode` ("retention.ms" or "delete_records") and
`retention_note` say which happened.

The "connect" protocol group is exercised: kafka-python's BaseCoordinator joins with any
protocol type, and noida-db accepts it and OffsetCommits from its members
(`LiveWorkload.not_exercised` is empty).

noida-db 0.2.3 behaviour met on the way (compared with Apache Kafka):
- ListGroups lists a standalone (assign + commit) group with protocol type "" and state Empty,
  and DescribeGroups reports it Empty with no members: as Kafka does.
- A member whose process ends without LeaveGroup (SIGKILL, but also a normal exit or a crash
  that closes its socket) is never expired: the group stays Stable, or stuck in
  PreparingRebalance / CompletingRebalance when another member joins, long after
  session.timeout.ms. Kafka removes it after session.timeout.ms. Hence stop() and the exit hook.
- An OffsetCommit from a member of the current generation while the group is
  PreparingRebalance (e.g. just after another member left) gets ILLEGAL_GENERATION; Kafka
  accepts it (GroupCoordinator: "During PreparingRebalance phase, we still allow a commit").
- Retention checks run about every second (Kafka: 5 minutes by default).
- DescribeConfigs of the broker returns only auto.create.topics.enable, num.partitions and
  default.replication.factor (no offsets.retention.minutes, no log.retention.* settings).
- kafka-python 3.0.12 against it: `describe_cluster` fails (KeyError 'endpoint_type'), and
  `describe_groups` raises ValueError on a Connect group because it decodes every member's
  metadata as a consumer subscription (`clients.describe_groups_raw` returns the bytes).
"""

from .clients import describe_groups_raw
from .result import LiveGroup, LiveTopic, LiveWorkload
from .run import run_live_workload
from .snapshot import LiveWorkloadError

__all__ = ["LiveGroup", "LiveTopic", "LiveWorkload", "LiveWorkloadError", "describe_groups_raw",
           "run_live_workload"]
