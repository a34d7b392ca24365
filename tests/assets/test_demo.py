"""The `make demo` path at a small scale: Kafka's own coordinator writes the records of real groups,
ingest reads them over several cycles without duplicates, snapshots follow the live cluster, the
models and the plan see the real groups, and nothing is left running.

The demo is the session's one small demo (tests/report/fixtures.py), which the report, notebook and
UI tests read too; this module is collected before theirs, so it checks the demo right after it ran.
"""

import threading

import psutil
from dagster import AssetKey, DagsterInstance

from proving_ground.workload.live.scenarios import GROUPS
from tests.report.fixtures import demo_run  # noqa: F401  (the fixture)

# Groups whose members commit offsets (a share group acknowledges records instead).
COMMITTING = {group for group, spec in GROUPS.items() if spec.group_type != "share"}


def test_demo_reads_the_real_groups_from_the_log_and_snapshots_and_stops_everything(demo_run):  # noqa: F811
    lake, output, started, home = demo_run.lake, demo_run.output, demo_run.started, demo_run.home

    # What Kafka's coordinator wrote for the live groups is in bronze, once.
    commits = lake.read_arrow("offset_commit_records").to_pylist()
    assert {row["group"] for row in commits} >= COMMITTING
    positions = [(row["source_partition"], row["source_offset"]) for row in commits]
    assert len(positions) == len(set(positions)), "ingest resumed in every cycle: no record twice"
    assert output.count("ingest job done") >= 1 and "final cycle" in output, \
        "ingest ran while the workload ran and again after it"
    (read,) = lake.query("select sum(record_count) as n from offsets_topic_checkpoints",
                         "offsets_topic_checkpoints").to_pylist()
    bronze_rows = sum(lake.count(name) for name in ("offset_commit_records", "group_metadata_records",
                                                      "consumer_group_records", "rejected_records"))
    assert read["n"] == bronze_rows, "every record read over all the cycles is in bronze exactly once"
    stopped = lake.read_arrow("group_metadata_records").to_pylist()
    latest = max((row for row in stopped if row["group"] == "reports-stopped"), key=lambda row: row["source_offset"])
    assert latest["member_count"] == 0, "Kafka wrote the Empty group record when its members left"
    kip848 = {row["group"] for row in lake.read_arrow("consumer_group_records").to_pylist()}
    assert {"payments-kip848", "clickstream-regex"} <= kip848
    # every record a healthy Kafka 4.3 writes decodes
    assert lake.count("rejected_records") == 0

    snapshots = lake.query("select count(distinct snapshot_id) as n from broker_configs", "broker_configs")
    assert snapshots.to_pylist()[0]["n"] >= 2, "a snapshot during and after the live workload"
    latest = lake.query(
        """select g.state, o.committed_offset, l.log_start_offset
           from committed_offset_snapshots o
           join log_offset_snapshots l on o.snapshot_id = l.snapshot_id and o.topic = l.topic and o."partition" = l."partition"
           join group_snapshots g on g.snapshot_id = o.snapshot_id and g."group" = o."group"
           where o."group" = 'billing-slow'
             and o.snapshot_id = (select max(snapshot_id) from broker_configs)""",
        "committed_offset_snapshots", "log_offset_snapshots", "group_snapshots", "broker_configs").to_pylist()
    assert latest and {row["state"] for row in latest} == {"Stable"}
    assert any(row["committed_offset"] < row["log_start_offset"] for row in latest), \
        "retention deleted messages the slow group never consumed"
    # the snapshot's summary states what it holds; the loss is the models' answer, below
    assert "committed offsets in it: " in output and "(lag and retention losses: the models)" in output
    assert "the live members and the embedded broker are stopped" in output
    # the models' summary: retention loss, expirations and what a cleanup would remove
    assert "lost to retention (KIP-490): billing-slow never consumed" in output
    assert "offset expiration by rule" in output and "unsubscribed_topic" in output
    assert "OffsetDelete search-changed-subscription search-clicks-" in output
    # ... and the demo applies its plan: the group that changed its subscription loses the offsets
    # it left behind, and the broker confirms it
    assert "approved and applied: " in output and "STILL HAS IT" not in output
    assert "OffsetDelete search-changed-subscription search-clicks-0: deleted; the broker no longer has it" in output
    # retention deleted messages of search-clicks between two snapshots that saw the group without
    # it: a loss the models mark abandoned, which the report and the views leave out
    assert "search-clicks: more messages written after search-changed-subscription left it" in output
    abandoned = [row for row in lake.read_arrow("unconsumed_messages").to_pylist()
                 if row["group_id"] == "search-changed-subscription" and row["is_abandoned"]]
    assert abandoned and all(row["topic"] == "search-clicks" for row in abandoned)
    expirable = lake.query("select count(*) as n from expirable_offsets", "expirable_offsets").to_pylist()
    assert expirable == [{"n": lake.count("committed_offsets")}]
    # the slow and the stopped group get a verdict of Burrow's rules, not INCOMPLETE for want of
    # observations (the demo observes a partition at most once a second: DEMO_STATUS_MIN_DISTANCE_S)
    verdicts = {(row["group_id"], row["group_status"]) for row in lake.read_arrow("consumer_status").to_pylist()
                if row["group_id"] in ("billing-slow", "reports-stopped")}
    assert {group for group, _ in verdicts} == {"billing-slow", "reports-stopped"}
    assert {status for _, status in verdicts} <= {"WARN", "ERR"}, verdicts

    # The demo's runs stay in its Dagster home, for `make ui OFFSETS_PLATFORM_HOME=<its home>`.
    with DagsterInstance.from_config(str(home / "demo" / "dagster")) as instance:
        for asset in ("offset_commit_records", "group_snapshots", "consumer_lag", "cleanup_plans"):
            assert instance.get_latest_materialization_event(AssetKey(asset)) is not None, asset
    assert "make ui OFFSETS_PLATFORM_HOME=" in output

    # The processes started since the demo began (a JVM the demo left would have been reparented,
    # so not among this process's children); older ones belong to others sharing the machine.
    java = [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline", "create_time"])
            if (p.info["create_time"] or 0) >= started - 1]
    assert not [line for line in java if str(home) in line and "kafka.Kafka" in line], "the broker is stopped"
    assert not [line for line in java if "WordCountDemo" in line or "ConsoleShareConsumer" in line], \
        "the live workload's Java programs are stopped"
    assert not [t for t in threading.enumerate() if t.is_alive() and t is not threading.main_thread()
                and not t.daemon], "no client thread may outlive the demo"
