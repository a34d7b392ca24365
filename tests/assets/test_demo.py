"""The `make demo` path at a small scale: both sources fill bronze, snapshots follow the live
cluster over several cycles, ingest reads incrementally, and nothing is left running."""

import threading

import psutil

from assets.demo import run_demo
from offsets_platform.workload.coordinator_history import generate, summarize


def test_demo_fills_bronze_from_the_log_and_from_snapshots_and_stops_everything(tmp_path, capsys):
    records = 20_000
    lake = run_demo(tmp_path, records=records, seed=3, live_scale=0.2)
    output = capsys.readouterr().out

    expected = summarize(generate(seed=3, records=records))["by_record_type"]
    commits = lake.count("offset_commit_records")
    groups = lake.count("group_metadata_records")
    assert commits == expected["offset_commit"]
    assert groups == expected["group_metadata"]
    assert commits + groups + lake.count("consumer_group_records") + lake.count("rejected_records") == records
    assert lake.count("rejected_records") == 0
    # Ingest ran in every cycle but only the two rounds of history added rows: it resumed each time.
    runs = lake.query("select count(distinct ingest_run_id) as n from offset_commit_records",
                      "offset_commit_records").to_pylist()
    assert runs == [{"n": 2}]

    snapshots = lake.query("select count(distinct snapshot_id) as n from broker_configs", "broker_configs")
    assert snapshots.to_pylist()[0]["n"] >= 3, "a snapshot before, during and after the live workload"
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
    assert "messages deleted by retention before it consumed them" in output
    assert "the live members and the embedded broker are stopped" in output
    # the models' summary: retention loss, expirations and what a cleanup would remove
    assert "lost to retention (KIP-490): billing-slow never consumed" in output
    assert "offset expiration by rule" in output and "unsubscribed_topic" in output
    assert "OffsetDelete search-changed-subscription search-clicks-" in output
    expirable = lake.query("select count(*) as n from expirable_offsets", "expirable_offsets").to_pylist()
    assert expirable == [{"n": lake.count("committed_offsets")}]

    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(tmp_path) in " ".join(p.info["cmdline"] or []) and "noida-db" in " ".join(p.info["cmdline"] or [])]
    assert not [t for t in threading.enumerate() if t.is_alive() and t is not threading.main_thread()
                and not t.daemon], "no client thread may outlive the demo"
