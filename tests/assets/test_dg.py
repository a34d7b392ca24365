"""`dg`, Dagster's command line for projects, on the checkout as pyproject.toml's [tool.dg] describes
it: `dg check defs` loads the deployment, `dg list defs` lists what its Definitions holds, and `dg dev`
serves it in the UI on loopback and stops on Ctrl-C. What dg shows is compared with the Definitions
this process loads, so that dg loading anything else fails the tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from dagster._core.definitions.assets.job.asset_job import is_reserved_asset_job_name

from offsets_platform_dagster.automation import AUTOMATION_ENV, REFRESH_CRON_ENV
from offsets_platform_dagster.definitions import defs
from offsets_platform.processes import free_loopback_port

ROOT = Path(__file__).resolve().parents[2]
DG = Path(sys.executable).with_name("dg")
LOCATION = "offsets_platform_dagster.definitions"  # workspace.yaml's location, for `dagster dev`
REPOSITORY = defs.get_repository_def()
STARTUP_S = 240
STOP_S = 60


@pytest.fixture
def dg_env(tmp_path) -> dict:
    """The environment of a dg command: a Dagster home of its own with the instance settings
    `make ui` installs, and a platform home of its own."""
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copy(ROOT / "assets" / "dagster.yaml", dagster_home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(dagster_home), "OFFSETS_PLATFORM_HOME": str(tmp_path / "platform"),
            "SPARK_LOCAL_IP": "127.0.0.1"}


def dg(*arguments: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(DG), *arguments], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_dg_check_defs_loads_the_deployment(dg_env):
    result = dg("check", "defs", env=dg_env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "All definitions loaded successfully." in result.stdout


def test_dg_check_defs_fails_when_the_deployment_does_not_load(dg_env):
    # A cron that is none fails the definitions' load (assets/automation.py): dg loads ours.
    result = dg("check", "defs", env={**dg_env, REFRESH_CRON_ENV: "every 15 minutes"})
    assert result.returncode != 0, result.stdout[-3000:]
    assert REFRESH_CRON_ENV in result.stdout + result.stderr


def test_dg_list_defs_lists_the_definitions_this_process_loads(dg_env):
    result = dg("list", "defs", "--json", env=dg_env)
    assert result.returncode == 0, result.stderr[-3000:]
    listed = json.loads(result.stdout)
    graph = REPOSITORY.asset_graph

    assert {asset["asset_key"] for asset in listed["assets"]} == {key.to_user_string()
                                                                 for key in graph.get_all_asset_keys()}
    assert {"offset_commit_records", "group_snapshots", "committed_offsets", "consumer_status",
            "cleanup_plans"} <= {asset["asset_key"] for asset in listed["assets"]}
    assert {check["key"] for check in listed["asset_checks"]} == {key.to_user_string()
                                                                  for key in graph.asset_check_keys}
    jobs = {job.name for job in REPOSITORY.get_all_jobs() if not is_reserved_asset_job_name(job.name)}
    assert {job["name"] for job in listed["jobs"]} == jobs
    assert "refresh" in jobs
    assert {(s["name"], s["cron_schedule"]) for s in listed["schedules"]} == {
        (s.name, s.cron_schedule) for s in REPOSITORY.schedule_defs}
    assert {"refresh_schedule", "cleanup_plan_schedule", "prune_schedule"} <= {s["name"] for s in listed["schedules"]}
    assert {sensor["name"] for sensor in listed["sensors"]} == {sensor.name for sensor in REPOSITORY.sensor_defs}
    assert {resource["name"] for resource in listed["resources"]} == {"kafka", "lake", "spark", "models"}


_WORKSPACE_QUERY = """{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message }
    ... on RepositoryLocation { repositories { name jobs { name } schedules { name cronSchedule }
                                               sensors { name } } } } } } } }"""


def _as_from_a_terminal():
    # Ctrl-C's SIGINT, as a terminal's foreground job takes it: a process started from a script or a
    # test runner may have inherited it ignored, and Dagster then ignores SIGTERM too.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(url + "/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]


def _group(pgid: int) -> list[psutil.Process]:
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid:
                members.append(process)
        except (ProcessLookupError, PermissionError):
            pass
    return members


def test_dg_dev_serves_the_deployment_on_loopback_and_stops_on_ctrl_c(dg_env, tmp_path):
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "dg-dev.log"
    env = {**dg_env, AUTOMATION_ENV: "stopped"}  # no schedule or sensor of the daemon's starts a run
    with log.open("w") as out:
        dev = subprocess.Popen([str(DG), "dev", "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT, env=env,
                               stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + STARTUP_S
        location = None
        while location is None:
            assert dev.poll() is None, f"dg dev exited with {dev.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"dg dev did not serve {LOCATION} within {STARTUP_S} s:\n" \
                                                f"{log.read_text()[-3000:]}"
            try:
                info = json.loads(_get(url + "/server_info"))
                entries = _graphql(url, _WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
                continue
            names = [entry["name"] for entry in entries]
            assert names == [LOCATION], f"dg dev serves {names}, not workspace.yaml's location {LOCATION}"
            if entries[0]["loadStatus"] == "LOADED":
                location = entries[0]["locationOrLoadError"]
            else:
                time.sleep(0.5)
        assert info["dagster_version"] == info["dagster_webserver_version"]
        assert location["__typename"] == "RepositoryLocation", location
        (repository,) = location["repositories"]
        assert repository["name"] == REPOSITORY.name
        assert {job["name"] for job in repository["jobs"]} == {job.name for job in REPOSITORY.get_all_jobs()}
        assert {(s["name"], s["cronSchedule"]) for s in repository["schedules"]} == {
            (s.name, s.cron_schedule) for s in REPOSITORY.schedule_defs}
        assert {sensor["name"] for sensor in repository["sensors"]} == {s.name for s in REPOSITORY.sensor_defs}

        group = _group(dev.pid)
        listening = {connection.laddr for process in group for connection in _listening(process)}
        assert ("127.0.0.1", port) in listening and all(address.ip == "127.0.0.1" for address in listening
                                                        if address.port == port), listening

        os.killpg(dev.pid, signal.SIGINT)  # Ctrl-C in its terminal
        stopping = time.monotonic()
        try:
            dev.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"dg dev still running {STOP_S} s after Ctrl-C:\n{log.read_text()[-3000:]}")
        _, alive = psutil.wait_procs(group, timeout=max(1.0, STOP_S - (time.monotonic() - stopping)))
        assert not alive, f"still running after dg dev stopped: {[p.pid for p in alive]}"
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:  # after a failure: whatever is left of its process group
        try:
            os.killpg(dev.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        dev.wait(timeout=30)


def _listening(process: psutil.Process) -> list:
    try:
        return [c for c in process.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
