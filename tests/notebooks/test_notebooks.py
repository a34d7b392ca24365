"""Each notebook runs top to bottom with nbclient on the venv's python3 kernel, against the small
demo of tests/report/fixtures.py (OFFSETS_PLATFORM_HOME points the notebooks at it), without
an error; a key output of each is checked against the lake."""

import json
import shutil
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from offsets_platform.views.candidates import cleanup_candidates
from offsets_platform.cleanup.plans import build_plan
from offsets_platform.models.project import lake_for_models
from offsets_platform.views.report.figures import (EXPIRATION_TITLE, GROUP_STATES_TITLE, LAG_TITLE,
                                             RETENTION_TITLE)
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELL_TIMEOUT_S = 300  # a loaded 2-core machine; no cell runs a demo here (the fixture did)
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def run(name: str, home: Path, monkeypatch) -> nbformat.NotebookNode:
    """Execute a notebook; CellExecutionError (with the cell and traceback) on the first error."""
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(home))  # the kernel inherits the environment
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    # Only the native kernel, which jupyter_client starts with this interpreter (the venv's): a
    # python3 kernelspec installed elsewhere on the machine must not be picked up.
    specs = KernelSpecManager(kernel_dirs=[], ensure_native_kernel=True)
    kernel = KernelManager(kernel_name="python3", kernel_spec_manager=specs)
    NotebookClient(notebook, km=kernel, timeout=CELL_TIMEOUT_S,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return notebook


def stdout(notebook) -> str:
    return "".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                   for output in cell.outputs if output.output_type == "stream" and output.name == "stdout")


def figure_titles(notebook) -> list[str]:
    """The titles of the notebook's figures; each figure must carry its HTML as well (without
    it, an export to HTML drops the figure)."""
    titles = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            figure = output.get("data", {}).get(PLOTLY_MIME)
            if figure is not None:
                figure = json.loads(figure) if isinstance(figure, str) else figure
                titles.append(figure["layout"]["title"]["text"])
                assert "plotly-graph-div" in output["data"].get("text/html", ""), titles[-1]
    return titles


def html_figures(notebook) -> int:
    """How many figures jupyter nbconvert --to html draws of an executed notebook."""
    html, _ = HTMLExporter().from_notebook_node(notebook)
    return html.count('class="plotly-graph-div"')


def test_outputs_are_stripped_in_the_repository():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


def test_groups_and_states(demo_run, monkeypatch):
    notebook = run("01_groups_and_states.ipynb", demo_run.home / "demo", monkeypatch)
    printed = stdout(notebook)
    assert f"reading the lake in {demo_run.lake.root}" in printed, "the fixture's demo lake"
    for row in demo_run.lake.query("select state, count(*) as n from group_state group by state",
                                   "group_state").to_pylist():
        assert f"{row['state']}: {row['n']} groups" in printed
    titles = figure_titles(notebook)
    assert GROUP_STATES_TITLE in titles
    assert html_figures(notebook) == len(titles), "the export to HTML lost figures"
    (subscribed,) = [line for line in printed.splitlines() if line.startswith("search-changed-subscription subscribes")]
    assert "search-clicks'" not in subscribed


def test_lag_and_retention(demo_run, monkeypatch):
    notebook = run("02_lag_and_retention.ipynb", demo_run.home / "demo", monkeypatch)
    lost = demo_run.lake.query("""select topic, sum(count_lost) as n from unconsumed_messages
                                  where group_id = 'billing-slow' group by topic""", "unconsumed_messages").to_pylist()
    assert lost
    for row in lost:
        assert f"billing-slow never consumed {row['n']:,} messages of {row['topic']}" in stdout(notebook)
    assert {LAG_TITLE, RETENTION_TITLE} <= set(figure_titles(notebook))


def test_expiring_offsets(demo_run, monkeypatch):
    notebook = run("03_expiring_offsets.ipynb", demo_run.home / "demo", monkeypatch)
    printed = stdout(notebook)
    for row in demo_run.lake.query("""select rule, count(*) as n, count(distinct group_id) as g from expirable_offsets
                                      group by rule""", "expirable_offsets").to_pylist():
        assert f"{row['rule']}: {row['n']:,} offsets in {row['g']:,} groups" in printed
    assert EXPIRATION_TITLE in figure_titles(notebook)


def before_its_apply(demo_run, folder: Path) -> Path:
    """A copy of the demo's home (its lake and its broker's data) as it was before the demo applied
    its plan: the same tables, without the audit of that apply. The models have not run since, so
    a new plan proposes what the demo's plan did, and the notebook has a plan to review. (On the
    demo's lake itself, a new plan leaves that out: the next test.)"""
    shutil.copytree(demo_run.home / "demo", folder / "demo")
    shutil.rmtree(lake_for_models(folder / "demo" / "lake").path("cleanup_audit"))
    return folder / "demo"


def test_cleanup_plan_review_approves_as_who_runs_it_and_only_dry_runs(demo_run, monkeypatch, tmp_path):
    monkeypatch.setenv(USER_ENV, "Jane Operator (demo notebook)")  # the kernel inherits it: who runs the notebook
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)  # the notebook lifts four-eyes itself
    home = before_its_apply(demo_run, tmp_path)
    notebook = run("04_cleanup_plan_review.ipynb", home, monkeypatch)
    printed = stdout(notebook)
    (approved,) = [line for line in printed.splitlines() if line.startswith("Jane Operator (demo notebook) approved")]
    plan_id = approved.split(" of plan ")[1].split()[0]
    lake = lake_for_models(home / "lake")
    approvals = lake.query(f"select approved_by, action_id from cleanup_approvals where plan_id = '{plan_id}'",
                           "cleanup_approvals").to_pylist()
    plan = lake.query(f"select action_id, \"group\", topic, created_by from cleanup_plans where plan_id = '{plan_id}'",
                      "cleanup_plans").to_pylist()
    assert {r["approved_by"] for r in approvals} == {"Jane Operator (demo notebook)"}
    assert {r["created_by"] for r in plan} == {"Jane Operator (demo notebook)"}
    assert {r["action_id"] for r in approvals} == {r["action_id"] for r in plan}
    assert f"approved {len(plan)} actions" in approved
    assert ("search-changed-subscription", "search-clicks") in {(r["group"], r["topic"]) for r in plan}
    # the dry run went to the demo's embedded broker, audited, and deleted nothing
    assert "dry run: " in printed and "the embedded broker is stopped" in printed
    outcomes = {r["outcome"] for r in lake.query(f"select outcome from cleanup_audit where plan_id = '{plan_id}'",
                                                 "cleanup_audit").to_pylist()}
    assert outcomes and outcomes <= {"dry_run", "skipped"}


def test_a_new_plan_after_the_demos_apply_leaves_out_what_it_deleted(demo_run):
    lake = demo_run.lake
    deleted = {(row["group"], row["topic"], row["partition"]) for row in lake.read_arrow("cleanup_audit").to_pylist()
               if row["outcome"] == "deleted"}
    still_candidates = {(row["group_id"], row["topic"], row["partition_id"])
                        for row in cleanup_candidates(lake).offset_deletes} & deleted
    assert still_candidates, "the demo deleted offsets that its tables, not refreshed since, still show"
    said: list[str] = []
    plan = build_plan(lake, created_by="someone", emit=said.append)  # built, not stored
    assert not deleted & {(action.group, action.topic, action.partition) for action in plan.actions}
    assert said and said[0].startswith(f"left out {len(still_candidates)} removals the audit shows done")
