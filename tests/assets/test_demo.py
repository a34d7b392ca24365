"""The `make demo` path at a small scale: it fills bronze, reads incrementally, stops the broker."""

import psutil

from assets.demo import run_demo
from offsets_platform.workload.coordinator_history import generate, summarize


def test_demo_fills_bronze_with_every_generated_record_and_stops_the_broker(tmp_path, capsys):
    records = 20_000
    lake = run_demo(tmp_path, records=records, seed=3)
    output = capsys.readouterr().out

    expected = summarize(generate(seed=3, records=records))["by_record_type"]
    commits = lake.count("offset_commit_records")
    groups = lake.count("group_metadata_records")
    kip848 = lake.count("consumer_group_records")
    assert commits == expected["offset_commit"]
    assert groups == expected["group_metadata"]
    assert commits + groups + kip848 + lake.count("rejected_records") == records
    assert lake.count("rejected_records") == 0

    # Two rounds: the second run of the job resumed after the first instead of reading again.
    runs = lake.query("select ingest_run_id, count(*) as n from offset_commit_records group by 1",
                      "offset_commit_records").to_pylist()
    assert len(runs) == 2
    assert "classic groups by state" in output and "the embedded broker is stopped" in output
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(tmp_path) in " ".join(p.info["cmdline"] or []) and "noida-db" in " ".join(p.info["cmdline"] or [])]
