"""The Dagster UI over the project's workspace, as a browser shows it.

A real `dagster-webserver` (free loopback port) serves workspace.yaml over a copy of the small
demo's Dagster home, as `make ui OFFSETS_PLATFORM_HOME=<the demo's home>` does after `make demo`,
and headless Chromium loads its pages. The assertions are on the text Chromium rendered; GraphQL is
only used to double-check that the server sees what the definitions hold. Screenshots and DOMs are
kept under test-artifacts/ui/.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from urllib.parse import quote

import pytest
from dagster import AssetKey

from offsets_platform_dagster.definitions import defs
from offsets_platform_dagster.key_numbers import key_numbers
from tests.report.fixtures import demo_lake, demo_run  # noqa: F401  (fixtures)
from tests.ui.browser import ARTIFACTS, LOCATION, Browser, Page, Webserver, chromium_processes

LAYERS = ("bronze", "silver", "gold", "cleanup", "reports")
GRAPH = defs.resolve_asset_graph()
GROUP_OF = {key.to_user_string(): GRAPH.get(key).group_name for key in GRAPH.get_all_asset_keys()}
ASSETS_BY_GROUP: dict[str, set[str]] = defaultdict(set)
for _name, _group in GROUP_OF.items():
    ASSETS_BY_GROUP[_group].add(_name)
CHECKS_OF: dict[str, set[str]] = defaultdict(set)
for _check in GRAPH.asset_check_keys:
    CHECKS_OF[_check.asset_key.to_user_string()].add(_check.name)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed: run .ci/install-debian-packages (`make test` runs it before pytest)")
    return path


@pytest.fixture(scope="module")
def webserver(tmp_path_factory, demo_run):  # noqa: F811 (the fixture imported above)
    server = Webserver(tmp_path_factory.mktemp("webserver"), dagster_home_from=demo_run.home / "demo" / "dagster").start()
    yield server
    assert server.stop() == set(), "the webserver or its code server is still running"


@pytest.fixture(scope="module")
def browser(chromium, tmp_path_factory) -> Browser:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # only this run's screenshots
    return Browser(chromium, tmp_path_factory.mktemp("chromium"))


def render(browser: Browser, webserver: Webserver, path: str, name: str, ready, height: int = 1000,
           attempts: int = 3) -> Page:
    """The page once `ready(page)` holds (a slow machine may need another load); the last try otherwise."""
    for _ in range(attempts):
        page = browser.render(webserver.url + path, name, height=height)
        if ready(page):
            break
    assert page.screenshot.stat().st_size > 10_000, f"no screenshot of {path}"
    return page


def test_the_server_answers_and_serves_the_projects_definitions(webserver):
    assert webserver.info["dagster_webserver_version"]
    nodes = webserver.graphql("{ assetNodes { assetKey { path } groupName "
                              "assetChecksOrError { ... on AssetChecks { checks { name } } } } }")["assetNodes"]
    served = {"/".join(n["assetKey"]["path"]): n["groupName"] for n in nodes}
    assert served == GROUP_OF
    served_checks = {"/".join(n["assetKey"]["path"]): {c["name"] for c in n["assetChecksOrError"]["checks"]}
                     for n in nodes if n["assetChecksOrError"].get("checks")}
    assert served_checks == dict(CHECKS_OF)


def test_the_asset_graph_shows_the_layer_groups(browser, webserver):
    page = render(browser, webserver, "/asset-groups", "asset-graph", lambda p: all(p.has(g) for g in LAYERS))
    assert page.has("Global asset lineage")
    for group in LAYERS:
        assert page.has(group), f"group {group} is not in the asset graph"


@pytest.mark.parametrize("group", LAYERS)
def test_each_layer_group_lists_its_assets_and_only_those(browser, webserver, group):
    expected = ASSETS_BY_GROUP[group]
    assert expected, f"no asset in group {group}"
    page = render(browser, webserver, f"/locations/{LOCATION}/asset-groups/{group}/list", f"group-{group}",
                  lambda p: expected <= set(p.text), height=1800)
    listed = set(page.text) & set(GROUP_OF)
    assert listed == expected, f"{group}: missing {sorted(expected - listed)}, not expected {sorted(listed - expected)}"
    # Each row also shows the asset's one-line description.
    for name in expected:
        description = GRAPH.get(AssetKey(name)).description
        assert page.has(description), f"{name}: description not shown"


@pytest.mark.parametrize("asset", ["rejected_records", "group_state", "offset_commit_records"])
def test_an_assets_checks_tab_lists_its_checks(browser, webserver, asset):
    expected = CHECKS_OF[asset]
    assert expected
    page = render(browser, webserver, f"/assets/{quote(asset)}?view=checks", f"checks-{asset}",
                  lambda p: expected <= set(p.text), height=1200)
    assert page.has(asset)
    assert page.has(f"Checks ({len(expected)})")
    for check in expected:
        assert page.has(check), f"check {check} of {asset} is not listed"


def test_the_bronze_assets_carry_freshness_checks_and_the_models_carry_expectations():
    # what ingest and the snapshots write; the prune's counts table is observed, not materialized
    written = {asset for asset in ASSETS_BY_GROUP["bronze"] if GRAPH.get(AssetKey(asset)).is_materializable}
    assert written and written < ASSETS_BY_GROUP["bronze"]
    assert {asset for asset, checks in CHECKS_OF.items() if "freshness_check" in checks} == written
    models = ASSETS_BY_GROUP["silver"] | ASSETS_BY_GROUP["gold"]
    assert {asset for asset, checks in CHECKS_OF.items() if "expectations" in checks} >= models


def test_a_model_page_shows_its_description_and_column_schema(browser, webserver):
    node = GRAPH.get(AssetKey("group_state"))
    schema = node.metadata["dagster/column_schema"]
    columns = [column.name for column in getattr(schema, "schema", schema).columns]  # a TableSchema, or its value
    page = render(browser, webserver, "/assets/group_state", "asset-group_state",
                  lambda p: p.has("Columns") and set(columns) <= set(p.text), height=2000)
    assert page.has(node.description)
    assert page.has("Columns")
    missing = [c for c in columns if not page.has(c)]
    assert not missing, f"columns not shown: {missing}"
    assert page.has("silver")


@pytest.mark.parametrize("asset", ["offset_commit_records", "consumer_lag", "expirable_offsets"])
def test_after_the_demo_an_asset_shows_its_materialization_row_count_and_passed_checks(browser, webserver, demo_lake,
                                                                                       asset):  # noqa: F811
    page = render(browser, webserver, f"/assets/{asset}", f"demo-{asset}", lambda p: p.has("Row count"), height=1400)
    assert page.has("Latest materialization") and not page.has("Never materialized")
    assert page.text[page.text.index("Row count") + 1] == f"{demo_lake.count(asset):,}"
    checks = render(browser, webserver, f"/assets/{asset}?view=checks", f"demo-checks-{asset}",
                    lambda p: p.has("Latest execution"), height=1400)
    assert checks.has("Passed") and not checks.has("Failed")


@pytest.mark.parametrize("asset, numbers", [("consumer_lag", ("lag_messages", "groups_lagging")),
                                             ("consumer_status", ("groups_err", "groups_warn", "groups_ok"))])
def test_an_operators_numbers_are_on_the_assets_overview(browser, webserver, demo_lake, asset, numbers):  # noqa: F811
    """The numbers an operator came for, beside the row count, as the command line gives them."""
    expected = key_numbers(demo_lake, asset)
    page = render(browser, webserver, f"/assets/{asset}", f"numbers-{asset}",
                  lambda p: all(p.has(name) for name in numbers), height=2000)
    for name in numbers:
        assert page.has(name), f"{name} is not shown"
        # the Metadata table's row (a column may bear the same name further up): key, time, value
        row = max(index for index, text in enumerate(page.text) if text == name)
        assert page.text[row + 2] == f"{expected[name]:,}", name


def test_the_automation_page_lists_the_schedules_and_the_freshness_sensor(browser, webserver):
    names = ["refresh_schedule", "cleanup_plan_schedule", "freshness_checks_sensor"]
    page = render(browser, webserver, "/automation", "automation", lambda p: all(p.has(n) for n in names))
    for name in names:
        assert page.has(name), f"{name} is not listed"
    assert page.has("Every 15 minutes")


def test_the_webserver_stops_and_leaves_no_process(webserver, browser):
    # Last in the module: stop it here so that the assertion is a test of its own.
    pids = set(webserver.pids)
    assert pids, "the webserver's processes were not recorded"
    assert webserver.stop() == set(), "processes left after stopping the webserver"
    assert chromium_processes(browser.workdir) == [], "chromium processes left"
