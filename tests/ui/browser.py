"""A real Dagster webserver over the project's workspace, and headless Chromium to look at it.

`Webserver` starts `dagster-webserver` on a free loopback port with an isolated DAGSTER_HOME, waits
until `/server_info` answers and the code location has loaded, and stops its whole process group.
`Browser.render` loads one page in headless Chromium (`chromium --headless --dump-dom
--screenshot`), saves the screenshot and the DOM under test-artifacts/ui/, and returns the text the
page rendered (scripts and styles left out).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import psutil

from offsets_platform_dagster.automation import AUTOMATION_ENV, CLEANUP_CRON_ENV, INGEST_MAX_LAG_ENV, REFRESH_CRON_ENV
from offsets_platform.broker.embedded import free_loopback_port

AUTOMATION_SETTINGS = (REFRESH_CRON_ENV, CLEANUP_CRON_ENV, INGEST_MAX_LAG_ENV, AUTOMATION_ENV)
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
LOCATION = "offsets_platform_dagster.definitions"

# Dagster's instance settings for the test: no telemetry, no "join the community" dialog over the page.
DAGSTER_YAML = "telemetry:\n  enabled: false\nnux:\n  enabled: false\n"

_WORKSPACE_QUERY = ("{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus "
                    "locationOrLoadError { __typename ... on PythonError { message } } } } } }")


class Webserver:
    """`dagster-webserver` over the workspace. `dagster_home_from`: a Dagster home whose runs,
    materializations and check results the UI shows (copied, so the test changes nothing there)."""

    def __init__(self, home: Path, startup_timeout: float = 240, instance_yaml: str = DAGSTER_YAML,
                 dagster_home_from: Path | None = None):
        self.home = home
        self.instance_yaml = instance_yaml
        self.dagster_home_from = dagster_home_from
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "webserver.log"
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen | None = None
        self.pids: set[int] = set()

    def start(self) -> "Webserver":
        dagster_home = self.home / "dagster"
        if self.dagster_home_from is not None:
            shutil.copytree(self.dagster_home_from, dagster_home)
        dagster_home.mkdir(parents=True, exist_ok=True)
        (dagster_home / "dagster.yaml").write_text(self.instance_yaml)
        # The automation settings at their defaults, whatever the calling shell sets.
        env = {name: value for name, value in os.environ.items() if name not in AUTOMATION_SETTINGS}
        env.update(DAGSTER_HOME=str(dagster_home), OFFSETS_PLATFORM_HOME=str(self.home / "platform"),
                   SPARK_LOCAL_IP="127.0.0.1")
        webserver = Path(sys.executable).with_name("dagster-webserver")
        with open(self.log_path, "wb") as log:
            # Its own session, so that stopping it stops its code server too.
            self.process = subprocess.Popen(
                [str(webserver), "-h", "127.0.0.1", "-p", str(self.port), "-w", "workspace.yaml"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"dagster-webserver exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"dagster-webserver did not load {LOCATION} within {self.startup_timeout:.0f} s:\n"
                                   f"{self.log()}")
            try:
                info = json.loads(self.get("/server_info"))
                entries = self.graphql(_WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
                continue
            self._remember_pids()
            entry = next((e for e in entries if e["name"] == LOCATION), None)
            if entry and entry["loadStatus"] == "LOADED":
                if entry["locationOrLoadError"]["__typename"] != "RepositoryLocation":
                    raise RuntimeError(f"{LOCATION} failed to load: {entry['locationOrLoadError']}")
                self.info = info
                return
            time.sleep(0.5)

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return response.read().decode()

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = {"query": query, **({"variables": variables} if variables else {})}
        request = urllib.request.Request(self.url + "/graphql", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise ValueError(answer["errors"])
        return answer["data"]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def _remember_pids(self) -> None:
        try:
            process = psutil.Process(self.process.pid)
            self.pids |= {process.pid, *(child.pid for child in process.children(recursive=True))}
        except psutil.NoSuchProcess:
            pass

    def stop(self, timeout: float = 30) -> set[int]:
        """Stop the webserver and its children; returns the ids of those still running (none)."""
        if self.process is None:
            return set()
        self._remember_pids()
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + timeout
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self.running():  # still there after SIGTERM: only ours, by id
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process.poll() is None:
            self.process.wait(timeout=10)
        time.sleep(0.5)
        return self.running()

    def running(self) -> set[int]:
        alive = set()
        for pid in self.pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.add(pid)
            except psutil.NoSuchProcess:
                pass
        return alive


@dataclass
class Page:
    url: str
    text: list[str]  # the rendered text, one entry per text node
    dom: str
    screenshot: Path

    def has(self, text: str) -> bool:
        """`text` is the whole text of some element (an asset name in a row, a check name in a list)."""
        return text in self.text


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "noscript"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "noscript") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.parts.append(data.strip())


def rendered_text(dom: str) -> list[str]:
    parser = _Text()
    parser.feed(dom)
    return parser.parts


class Browser:
    def __init__(self, executable: str, workdir: Path, artifacts: Path = ARTIFACTS):
        self.executable = executable
        self.workdir = workdir
        self.artifacts = artifacts
        artifacts.mkdir(parents=True, exist_ok=True)

    def render(self, url: str, name: str, height: int = 1000, budget_ms: int = 15000, timeout: float = 180) -> Page:
        """Load `url` in a fresh headless Chromium; returns what it rendered (and saves it as `name`)."""
        screenshot = self.artifacts / f"{name}.png"
        profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=self.workdir))
        command = [self.executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                   "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
                   f"--virtual-time-budget={budget_ms}", f"--window-size=1600,{height}",
                   f"--screenshot={screenshot}", "--dump-dom", url]
        # Its own session, so that a Chromium that hangs is stopped with all its helper processes.
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            dom, errors = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise TimeoutError(f"chromium did not render {url} within {timeout:.0f} s") from None
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        if process.returncode != 0 or "<html" not in dom:
            raise RuntimeError(f"chromium failed on {url} ({process.returncode}):\n{errors[-3000:]}")
        (self.artifacts / f"{name}.html").write_text(dom)
        return Page(url, rendered_text(dom), dom, screenshot)


def chromium_processes(workdir: Path) -> list[int]:
    """Chromium processes started with a profile under `workdir` (there should be none left)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(str(workdir) in part for part in process.info["cmdline"] or []):
            found.append(process.info["pid"])
    return found
