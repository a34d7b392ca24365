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
from dagster import AssetKey, AssetMaterialization, DagsterInstance
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
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
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


class DgDev:
    """`dg dev` on a free loopback port, in a process group of its own."""

    def __init__(self, env: dict, home: Path):
        self.env = {**env, AUTOMATION_ENV: "stopped",  # no schedule or sensor of the daemon's starts a run
                    # the freshness daemon evaluates every 5 s instead of every 30 s
                    "FRESHNESS_DAEMON_INTERVAL_SECONDS": "5"}
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "dg-dev.log"
        with self.log_path.open("w") as out:
            self.process = subprocess.Popen(
                [str(DG), "dev", "--host", "127.0.0.1", "--port", str(self.port)], cwd=ROOT, env=self.env,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_as_from_a_terminal)
        self.location: dict | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def wait_until_served(self) -> dict:
        """The code location, once the UI has loaded it."""
        deadline = time.monotonic() + STARTUP_S
        while self.location is None:
            assert self.process.poll() is None, f"dg dev exited with {self.process.returncode}:\n{self.log()}"
            assert time.monotonic() < deadline, f"dg dev did not serve {LOCATION} within {STARTUP_S} s:\n{self.log()}"
            try:
                json.loads(self.get("/server_info"))
                entries = self.graphql(_WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
                continue
            names = [entry["name"] for entry in entries]
            assert names == [LOCATION], f"dg dev serves {names}, not workspace.yaml's location {LOCATION}"
            if entries[0]["loadStatus"] == "LOADED":
                self.location = entries[0]["locationOrLoadError"]
            else:
                time.sleep(0.5)
        return self.location

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return response.read().decode()

    def graphql(self, query: str) -> dict:
        request = urllib.request.Request(self.url + "/graphql", data=json.dumps({"query": query}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert not answer.get("errors"), answer["errors"]
        return answer["data"]

    def group(self) -> list[psutil.Process]:
        members = []
        for process in psutil.process_iter():
            try:
                if os.getpgid(process.pid) == self.process.pid:
                    members.append(process)
            except (ProcessLookupError, PermissionError):
                pass
        return members

    def kill(self) -> None:
        """Whatever is left of its process group, at once."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def dg_dev(tmp_path_factory):
    home = tmp_path_factory.mktemp("dg-dev")
    dagster_home = home / "dagster"
    dagster_home.mkdir()
    shutil.copy(ROOT / "assets" / "dagster.yaml", dagster_home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "OFFSETS_PLATFORM_HOME": str(home / "platform"),
           "SPARK_LOCAL_IP": "127.0.0.1"}
    dev = DgDev(env, home)
    try:
        yield dev
    finally:  # stopped by the last test, or after a failure
        dev.kill()


def test_dg_dev_serves_the_deployment_on_loopback(dg_dev):
    location = dg_dev.wait_until_served()
    info = json.loads(dg_dev.get("/server_info"))
    assert info["dagster_version"] == info["dagster_webserver_version"]
    assert location["__typename"] == "RepositoryLocation", location
    (repository,) = location["repositories"]
    assert repository["name"] == REPOSITORY.name
    assert {job["name"] for job in repository["jobs"]} == {job.name for job in REPOSITORY.get_all_jobs()}
    assert "refresh" in {job["name"] for job in repository["jobs"]}
    assert {(s["name"], s["cronSchedule"]) for s in repository["schedules"]} == {
        (s.name, s.cron_schedule) for s in REPOSITORY.schedule_defs}
    assert {sensor["name"] for sensor in repository["sensors"]} == {s.name for s in REPOSITORY.sensor_defs}
    listening = {connection.laddr for process in dg_dev.group() for connection in _listening(process)
                 if connection.laddr.port == dg_dev.port}
    assert listening == {("127.0.0.1", dg_dev.port)}, f"the UI listens on {listening}, not on loopback only"


def _freshness(dg_dev: DgDev, *names: str) -> dict:
    keys = ", ".join(f'{{path: ["{name}"]}}' for name in names)
    nodes = dg_dev.graphql(f"""{{ assetNodes(assetKeys: [{keys}]) {{ assetKey {{ path }}
        internalFreshnessPolicy {{ __typename ... on TimeWindowFreshnessPolicy {{ failWindowSeconds warnWindowSeconds }} }}
        freshnessStatusInfo {{ freshnessStatus }} }} }}""")["assetNodes"]
    return {"/".join(node["assetKey"]["path"]): node for node in nodes}


def test_dg_dev_shows_the_freshness_policies_and_its_daemon_evaluates_them(dg_dev):
    dg_dev.wait_until_served()
    daemons = dg_dev.graphql("{ instance { daemonHealth { allDaemonStatuses { daemonType required } } } }")
    required = {d["daemonType"] for d in daemons["instance"]["daemonHealth"]["allDaemonStatuses"] if d["required"]}
    assert "FRESHNESS_DAEMON" in required, required

    graph = REPOSITORY.asset_graph
    fresh, never, model, unwatched = "group_snapshots", "offset_commit_records", "consumer_lag", "cleanup_plans"
    for name, node in _freshness(dg_dev, fresh, never, model).items():
        policy = graph.get(AssetKey(name)).freshness_policy
        assert node["internalFreshnessPolicy"] == {
            "__typename": "TimeWindowFreshnessPolicy",
            "failWindowSeconds": int(policy.fail_window.to_timedelta().total_seconds()),
            "warnWindowSeconds": int(policy.warn_window.to_timedelta().total_seconds())}, name
    assert _freshness(dg_dev, unwatched)[unwatched]["internalFreshnessPolicy"] is None

    # One asset materialized now: the daemon finds it fresh; one never materialized stays unknown
    # (its freshness check fails instead: tests/ui/test_definitions_and_automation.py).
    with DagsterInstance.from_config(dg_dev.env["DAGSTER_HOME"]) as instance:
        instance.report_runless_asset_event(AssetMaterialization(fresh))
    deadline = time.monotonic() + 60
    while (states := {name: node["freshnessStatusInfo"]["freshnessStatus"]
                      for name, node in _freshness(dg_dev, fresh, never).items()})[fresh] != "HEALTHY":
        assert time.monotonic() < deadline, f"the freshness daemon did not evaluate {fresh} within 60 s: {states}\n" \
                                            f"{dg_dev.log()}"
        time.sleep(1)
    assert states[never] == "UNKNOWN", states


def test_dg_dev_stops_on_ctrl_c_and_leaves_nothing_running(dg_dev):
    dg_dev.wait_until_served()
    group = dg_dev.group()
    assert len(group) >= 4, "dg, the webserver, the daemon and the code server"
    os.killpg(dg_dev.process.pid, signal.SIGINT)  # Ctrl-C in its terminal
    stopping = time.monotonic()
    try:
        dg_dev.process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"dg dev still running {STOP_S} s after Ctrl-C:\n{dg_dev.log()}")
    _, alive = psutil.wait_procs(group, timeout=max(1.0, STOP_S - (time.monotonic() - stopping)))
    assert not alive, f"still running after dg dev stopped: {[p.pid for p in alive]}"
    assert "Dagster services shut down" in dg_dev.log(), dg_dev.log()
    assert "Traceback" not in dg_dev.log_path.read_text(), dg_dev.log()


def _listening(process: psutil.Process) -> list:
    try:
        return [c for c in process.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
