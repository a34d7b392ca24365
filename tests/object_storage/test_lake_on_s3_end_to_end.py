"""The whole path on a lake on S3 (a real SeaweedFS on loopback) and a real Kafka broker: ingest of
`__consumer_offsets`, admin-API snapshots, a full then an incremental model refresh, and a
cleanup plan saved and read back; the models' tables equal a full refresh of the same records in
a local lake."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from offsets_platform.cleanup.plans import DELETE_GROUPS, build_plan, load_plan, save_plan
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.ingest.snapshots import snapshot_cluster
from offsets_platform.lake.tables import TABLES
from offsets_platform.models import ModelRunner, lake_for_models
from offsets_platform.models.project import model_table_specs
from offsets_platform.views.report import report_path, report_size, write_report
from proving_ground.lake_checks import comparable_rows
from tests.cleanup.direct_helpers import ORDERS, PAYMENTS, empty_group, make_topics, standalone_commit

QUIET = {"emit": lambda line: None}
# one moment for every refresh, so that the incremental and the full refresh judge alike
AS_OF = {"as_of": (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")}


def _copy_new_files(lake, local, copied: set[str]) -> None:
    """Append each bronze file of `lake` not copied yet to the same table of `local`, one commit
    per file: the local lake gets the same rows in the same files (a model counts per file)."""
    filesystem = lake.object_store()
    for name, spec in TABLES.items():
        if spec.layer != "bronze" or not lake.exists(name):
            continue
        for uri in lake.files(name):
            if uri not in copied:
                local.append(name, pq.read_table(uri.removeprefix("s3://"), filesystem=filesystem))
                copied.add(uri)


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    make_topics(broker.bootstrap_servers)
    return broker.bootstrap_servers


def test_ingest_snapshots_refreshes_and_a_cleanup_plan_on_s3(spark, bootstrap, connection, s3_lake, tmp_path):
    lake = s3_lake
    local, copied = lake_for_models(tmp_path / "local"), set()
    empty_group(bootstrap, "reports-stopped", [ORDERS], {(ORDERS, 0): 5})
    standalone_commit(bootstrap, "ledger-standalone", {(PAYMENTS, 1): 2})

    first = ingest_offsets_topic(connection, lake, **QUIET)
    assert first.records_read > 0 and lake.count("offset_commit_records") > 0
    snapshot_cluster(connection, lake, **QUIET)
    runner = ModelRunner(spark, lake, variables=AS_OF, **QUIET)
    assert {run.mode for run in runner.run_all()} == {"full"}
    _copy_new_files(lake, local, copied)

    # new records: an incremental refresh reads only them
    standalone_commit(bootstrap, "audit-standalone", {(ORDERS, 2): 3, (PAYMENTS, 0): 1})
    empty_group(bootstrap, "reports-stopped", [ORDERS], {(ORDERS, 0): 7})
    second = ingest_offsets_topic(connection, lake, **QUIET)
    assert second.records_read > 0
    snapshot_cluster(connection, lake, **QUIET)
    modes = {run.model: run.mode for run in runner.run_all()}
    assert modes["log_offset_state"] == modes["offset_commit_counts"] == "incremental"

    # the same records, copied to a local lake and refreshed in full there, give the same tables
    # (offset_commit_counts compared by its sums per minute: a minute both ingests wrote to is
    # two rows after two refreshes, one after a full one)
    _copy_new_files(lake, local, copied)
    ModelRunner(spark, local, variables=AS_OF, **QUIET).run_all()
    for name in model_table_specs():
        assert comparable_rows(name, lake.read_arrow(name)) == comparable_rows(name, local.read_arrow(name)), name
    committed = {(r["group_id"], r["topic"], r["partition_id"]): r["committed_offset"]
                 for r in lake.read_arrow("committed_offsets").to_pylist()}
    assert committed[("audit-standalone", ORDERS, 2)] == 3 and committed[("reports-stopped", ORDERS, 0)] == 7

    # a cleanup plan, recorded in the lake on S3 and read back
    plan = build_plan(lake, created_by="test", idle_hours=0)
    save_plan(lake, plan)
    deleted_groups = {a.group for a in plan.actions if a.action == DELETE_GROUPS}
    assert "reports-stopped" in deleted_groups and "ledger-standalone" not in deleted_groups
    assert load_plan(lake, plan.plan_id).actions == plan.actions
    assert lake.count("cleanup_plans") >= 1
    assert sorted(path.name for path in (lake.leases / "_leases").iterdir()) >= ["cleanup-plans.lock", "ingest.lock"]

    # the report, written beside the lake's prefix on the same storage
    path = write_report(lake, report_path(lake))
    assert path == f"s3://{lake.root.removeprefix('s3://').split('/')[0]}/reports/cluster_report.html"
    page = lake.object_store().open_input_stream(path.removeprefix("s3://")).read().decode()
    assert report_size(lake, path) == len(page.encode()) and "reports-stopped" in page and lake.root in page


def _command(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "offsets_platform.cli", *argv], env=env, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_the_commands_run_on_a_lake_on_s3_and_never_print_the_secret(s3_env, s3_server, connection, tmp_path):
    """`offsets-platform` with the lake on S3, configured by the environment alone: what it prints
    names the lake's URI, and no credential, also when the endpoint is down."""
    env = {**s3_env, "OFFSETS_PLATFORM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin",
           "OFFSETS_PLATFORM_BOOTSTRAP_SERVERS": connection.bootstrap_servers, "PYTHONPATH": ":".join(sys.path)}
    uri = s3_env["OFFSETS_PLATFORM_LAKE_URI"]
    secrets = (s3_server.secret_key, s3_server.access_key)

    code, output = _command(["ingest"], env)
    assert code == 0 and uri in output, output
    code, listed = _command(["groups"], env)
    assert code == 0, listed
    assert not any(secret in output + listed for secret in secrets)
    assert (tmp_path / "home" / "leases" / uri.removeprefix("s3://") / "_leases" / "ingest.lock").exists()
    # rebase renames folders, which S3 lacks: it refuses, and says what to do instead
    code, output = _command(["rebase"], env)
    assert code == 1 and "OFFSETS_PLATFORM_LAKE_URI at a new prefix" in output, output

    with socket.socket() as probe:  # an endpoint nothing listens on
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    code, output = _command(["groups"], {**env, "AWS_ENDPOINT_URL": down})
    assert code != 0 and down in output and "AWS_ENDPOINT_URL" in output, output
    assert not any(secret in output for secret in secrets)
