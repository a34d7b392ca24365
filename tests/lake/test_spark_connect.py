"""Spark Connect: a long-lived server from `offsets-platform spark-server`, and the models and their
checks run through it, with the same results as a local Spark."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from offsets_platform.cli import main
from offsets_platform.broker.embedded import free_loopback_port
from offsets_platform.lake import Lake
from offsets_platform.models import ModelRunner, default_project, lake_for_models
from offsets_platform.quality.specs import specs_for_model
from tests.lake.connect_server import ROOT, start_spark_connect_server
from tests.models.bronze_builder import BronzeBuilder, at

AS_OF = "2026-01-05 00:00:00"


@pytest.fixture(scope="module")
def connect_server():
    """The server as a user starts it; its endpoint. Stopped with SIGTERM, as a service manager would."""
    process, endpoint, output = start_spark_connect_server()
    assert f"OFFSETS_PLATFORM_SPARK_REMOTE={endpoint}" in output[-1]
    yield endpoint
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 0
    assert "Spark Connect server stopped" in process.stdout.read()


def _history() -> BronzeBuilder:
    """A classic group that changes subscription, tombstones, a standalone group, a KIP-848 group
    and a snapshot: every model has rows."""
    b = BronzeBuilder()
    for hour in range(3):
        b.group_record("g", at(hours=hour), members={"m": ["t", "old"] if hour < 2 else ["t"]},
                       current_state_at=at(hours=hour), generation=hour + 1)
        b.commit("g", "t", 0, hour * 10, at(hours=hour, minutes=5))
        b.commit("g", "old", hour % 2, hour, at(hours=hour, minutes=6))
    b.offset_tombstone("g", "old", 0, at(hours=2, minutes=30))
    b.commit("solo", "t", 1, 7, at(hours=1))
    b.kip848_group("new", at(hours=1))
    b.kip848_member("new", "m1", at(hours=1), topics=["t"])
    b.commit("new", "t", 2, 3, at(hours=1, minutes=1))
    b.snapshot(at(hours=3), groups=[{"group": "g", "state": "Stable", "protocol_type": "consumer",
                                     "protocol": "range", "member_count": 1}],
               offsets=[{"group": "g", "topic": "t", "partition": 0, "committed_offset": 20}],
               logs=[{"topic": "t", "partition": p, "log_start_offset": 5, "log_end_offset": 40} for p in range(3)],
               topics=[{"topic": "t", "retention_ms": 3_600_000, "retention_bytes": -1, "cleanup_policy": "delete"}])
    return b


def _rows(lake: Lake, table: str) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in lake.read_arrow(table).to_pylist())


def test_models_and_checks_over_spark_connect_equal_a_local_run(spark, connect_server, tmp_path):
    history = _history()
    local, remote = lake_for_models(tmp_path / "local"), lake_for_models(tmp_path / "remote")
    history.write(local)
    history.write(remote)
    ModelRunner(spark, local, variables={"as_of": AS_OF}, emit=lambda line: None).run_all()

    client = subprocess.run([sys.executable, "-m", "tests.lake.connect_client", connect_server, str(remote.root), AS_OF],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert client.returncode == 0, client.stderr[-3000:]
    outcome = json.loads(client.stdout.strip().splitlines()[-1])

    # the client's session: its own time zone, the server's shuffle partitions (one per core there)
    assert outcome["settings"] == {"spark.sql.shuffle.partitions": str(os.cpu_count()),
                                   "spark.sql.session.timeZone": "UTC"}
    models = [model.name for model in default_project().models]
    assert set(outcome["modes"]) == set(models) and set(outcome["modes"].values()) == {"full"}
    for name in models:
        assert _rows(remote, name) == _rows(local, name), name
    for name in ("committed_offsets", "group_state", "offset_removals", "expirable_offsets", "consumer_lag"):
        assert _rows(local, name), f"{name} is empty: the comparison would prove nothing"
    checked = {spec.test for name in outcome["checks"] for spec in specs_for_model(default_project().model(name))}
    assert checked == {spec.test for model in default_project().models for spec in specs_for_model(model)}
    assert all(outcome["checks"][name] and all(outcome["checks"][name]) for name in outcome["checks"]), outcome["checks"]
    assert set(outcome["broken_failed"]) == {"group_id is unique", "state is not null"}
    # the server carries Delta (offsets_platform.lake.spark): a client reads a lake table as Delta
    # and MERGEs into it (every row onto itself), and the lake reads the table that MERGE wrote
    group_states = len(_rows(local, "group_state"))
    assert outcome["delta"] == {"extensions": "io.delta.sql.DeltaSparkSessionExtension",
                                "read": group_states, "after_merge": group_states}
    assert _rows(remote, "group_state") == _rows(local, "group_state")
    assert remote.version("group_state") > local.version("group_state")  # the MERGE committed
    assert outcome["tags"] == {"within": ["model_a_b"], "after": []}


def test_a_second_server_on_a_busy_port_says_so(connect_server, capsys):
    port = int(connect_server.rsplit(":", 1)[1])
    assert main(["spark-server", "--port", str(port)]) == 1
    error = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in error and "already running" in error


def test_an_endpoint_without_a_server_names_it_and_what_to_do(tmp_path, capsys, monkeypatch):
    port = free_loopback_port()
    monkeypatch.setenv("OFFSETS_PLATFORM_SPARK_REMOTE", f"sc://127.0.0.1:{port}")
    (tmp_path / "lake").mkdir()
    assert main(["models", "--home", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert f"no Spark Connect server answers at 127.0.0.1:{port}" in error
    assert "offsets-platform spark-server" in error and "OFFSETS_PLATFORM_SPARK_REMOTE" in error
    assert not any((tmp_path / "lake").iterdir())


def _jvm_flags(is_it) -> list[str]:
    """The -XX flags of the running Java process for which `is_it(args, parent pid)` holds."""
    for process in Path("/proc").glob("[0-9]*"):
        try:
            args = (process / "cmdline").read_bytes().decode(errors="replace").split("\0")
            parent = int((process / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):  # the process ended meanwhile
            continue
        if args and args[0].endswith("java") and is_it(args, parent):
            return [arg for arg in args if arg.startswith("-XX:")]
    raise AssertionError("no such Java process")


def test_the_server_compiles_with_every_tier_and_a_run_s_own_jvm_with_the_first(spark, connect_server):
    """The server's JVM plans queries for many refreshes and keeps the optimising tier of the JIT;
    a JVM of one run (this process's local session) stops at its quick first tier."""
    binding = f"spark.connect.grpc.binding.port={connect_server.rsplit(':', 1)[1]}"
    assert "-XX:TieredStopAtLevel=1" not in _jvm_flags(lambda args, parent: binding in args)
    assert "-XX:TieredStopAtLevel=1" in _jvm_flags(lambda args, parent: parent == os.getpid())
