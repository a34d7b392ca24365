"""The approve job launched on a real Dagster webserver, as the launchpad launches it: the plan is
chosen among the job's partitions (the open plans, which the browser shows), the approver
is the run's tag, a run without one is refused naming the tag, and the run page shows the plan's
actions with their facts."""

from __future__ import annotations

import shutil
import time
from datetime import datetime, timedelta, timezone

import pytest
from dagster import DagsterInstance

from offsets_platform_dagster.cleanup import open_cleanup_plans_sensor
from offsets_platform_dagster.resources import LakeResource
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, CleanupPlan, PlannedAction, save_plan
from offsets_platform.lake import Lake
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV
from tests.assets.sensor_ticks import tick
from tests.ui.browser import DAGSTER_YAML, LOCATION, Browser, Webserver, chromium_processes

# Runs start at once, as `dagster dev` with its daemon would start them from the queue.
INSTANCE_YAML = DAGSTER_YAML + ("run_coordinator:\n  module: dagster._core.run_coordinator\n"
                                "  class: DefaultRunCoordinator\n")
LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
STATUS = 'query($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value } } } }'
LOGS = """query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events { __typename
  ... on MessageEvent { message }
  ... on ExecutionStepOutputEvent { metadataEntries { label ... on MarkdownMetadataEntry { mdStr }
                                                     ... on TextMetadataEntry { text } } }
  ... on ExecutionStepFailureEvent { error { message } } } } } }"""
PLAN = CleanupPlan("ui-plan-by-bob", datetime.now(timezone.utc).replace(microsecond=0),
                   datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=6), "bob", (
    PlannedAction(DELETE_GROUPS, "reports-stopped", None, None, "the group has been Empty for more than 168 h",
                  {"group_state": "Empty", "member_count": 0, "classification": "consumer"}),
    PlannedAction(OFFSET_DELETE, "search-changed", "orders", 1, "the group no longer subscribes to the topic",
                  {"group_state": "Stable", "committed_offset": 6, "lag_messages": 3})))


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    with pytest.MonkeyPatch.context() as env:
        env.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)  # four-eyes in the server, whatever this shell sets
        server = Webserver(tmp_path_factory.mktemp("webserver"), instance_yaml=INSTANCE_YAML).start()
    lake = Lake(server.home / "platform" / "lake")
    save_plan(lake, PLAN)  # as the command line stores a plan: the sensor offers it to the launchpad
    with DagsterInstance.from_config(str(server.home / "dagster")) as instance:
        tick(open_cleanup_plans_sensor, instance, {"lake": LakeResource(root=str(lake.root))})
    yield server
    assert server.stop() == set(), "the webserver, its code server or a run is still running"


def _launch(webserver: Webserver, tags: dict[str, str]) -> str:
    params = {"selector": {"repositoryLocationName": LOCATION, "repositoryName": "__repository__",
                           "jobName": "approve_cleanup"},
              "runConfigData": {},
              # the plan chosen in the launchpad's list of partitions
              "executionMetadata": {"tags": [{"key": key, "value": value}
                                             for key, value in {**tags, "dagster/partition": PLAN.plan_id}.items()]}}
    answer = webserver.graphql(LAUNCH, {"params": params})["launchRun"]
    assert answer["__typename"] == "LaunchRunSuccess", answer
    return answer["run"]["runId"]


def _finished(webserver: Webserver, run_id: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = webserver.graphql(STATUS, {"id": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(1)
    raise TimeoutError(f"run {run_id} did not finish within {timeout:.0f} s:\n{webserver.log()}")


def _events(webserver: Webserver, run_id: str) -> list[dict]:
    return webserver.graphql(LOGS, {"id": run_id})["logsForRun"]["events"]


def _approvers(webserver: Webserver) -> set[str]:
    lake = Lake(webserver.home / "platform" / "lake")
    if not lake.exists("cleanup_approvals"):
        return set()
    return {row["approved_by"] for row in lake.read_arrow("cleanup_approvals").to_pylist()}


def test_a_launched_run_without_identity_tag_is_refused_naming_the_tag(webserver):
    run_id = _launch(webserver, {})
    assert _finished(webserver, run_id) == "FAILURE"
    errors = " ".join((event.get("error") or {}).get("message", "") for event in _events(webserver, run_id))
    assert "offsets_platform/user=YOUR_NAME" in errors
    assert _approvers(webserver) == set()


def test_the_author_s_tag_is_refused_and_another_person_s_tag_approves(webserver):
    refused = _launch(webserver, {"offsets_platform/user": "bob"})
    assert _finished(webserver, refused) == "FAILURE"
    assert any("four-eyes: bob wrote plan" in (event.get("error") or {}).get("message", "")
               for event in _events(webserver, refused))
    assert _approvers(webserver) == set()

    run_id = _launch(webserver, {"offsets_platform/user": "alice"})
    assert _finished(webserver, run_id) == "SUCCESS"
    assert _approvers(webserver) == {"alice"}
    events = _events(webserver, run_id)
    (output,) = [event for event in events if event["__typename"] == "ExecutionStepOutputEvent"]
    entries = {entry["label"]: entry.get("mdStr") or entry.get("text") for entry in output["metadataEntries"]}
    assert entries["approved_by"] == "alice" and entries["plan_created_by"] == "bob"
    assert "| search-changed | orders | 1 |" in entries["actions"]
    assert "committed_offset=6, group_state=Stable, lag_messages=3" in entries["actions"]
    messages = [event.get("message") or "" for event in events]
    shown = next(i for i, message in enumerate(messages) if "classification=consumer" in message)
    recorded = next(i for i, message in enumerate(messages) if "alice approved 2 actions" in message)
    assert shown < recorded, "the facts are shown before the approval is recorded"
    webserver.approved_run = run_id


def test_the_approve_job_lists_the_open_plans_as_its_partitions(webserver, tmp_path_factory):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run .ci/install-chromium (`make test` runs it before pytest)")
    workdir = tmp_path_factory.mktemp("chromium-list")
    browser = Browser(chromium, workdir)
    for _ in range(3):  # a slow machine may need another load
        page = browser.render(f"{webserver.url}/locations/{LOCATION}/jobs/approve_cleanup/partitions",
                              "approve-partitions", height=1400, budget_ms=25000)
        if PLAN.plan_id in page.text:
            break
    assert PLAN.plan_id in page.text, page.text[:200]
    assert chromium_processes(workdir) == []


def test_the_run_page_shows_the_plan_s_facts(webserver, tmp_path_factory):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run .ci/install-chromium (`make test` runs it before pytest)")
    run_id = getattr(webserver, "approved_run", None) or _launch(webserver, {"offsets_platform/user": "carol"})
    assert _finished(webserver, run_id) == "SUCCESS"
    workdir = tmp_path_factory.mktemp("chromium")
    browser = Browser(chromium, workdir)
    for _ in range(3):  # a slow machine may need another load
        page = browser.render(f"{webserver.url}/runs/{run_id}", "approve-run", height=2000, budget_ms=25000)
        text = " ".join(page.text)
        if "committed_offset=6" in text:
            break
    assert "committed_offset=6" in text and "classification=consumer" in text, text[:3000]
    assert chromium_processes(workdir) == []
