"""How `make test` shares the test modules among its pytest-xdist processes.

As `--dist loadfile` does (a module runs whole in one process, so its module-scoped broker starts
once), except that the modules reading the session's small demo (tests/report/fixtures.py) run in
one process together: a session fixture is made once per process, and the demo costs minutes.
The longest units are handed out first (with `--no-loadscope-reorder`, in collection order), so
that no process is left running one of them alone at the end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# The modules whose tests read the demo's lake or output (tests/test_xdist_scheduling.py checks
# that no other module does).
SHARE_THE_DEMO = frozenset({
    "tests/assets/test_demo.py", "tests/notebooks/test_notebook_setup.py", "tests/notebooks/test_notebooks.py", "tests/report/test_asset.py",
    "tests/report/test_figures.py", "tests/report/test_html.py", "tests/report/test_one_answer.py",
    "tests/ui/test_browser.py", "tests/ui/test_report_in_browser.py"})
DEMO_SCOPE = "the modules that read the session's demo"


# The units that took longest in a run of make test (2026-12-07: from 10 minutes down to 1.6, in this
# order), the rest less.
LONGEST_FIRST = (
    "tests/models/test_runner.py", "tests/test_wheel.py", DEMO_SCOPE, "tests/lake/test_spark_cluster.py",
    "tests/models/test_pruning.py", "tests/lake/test_spark_connect.py", "tests/lake/test_delta_spark_io.py",
    "tests/report/test_report_at_scale.py", "tests/models/test_snapshot_pruning.py", "tests/lake/test_delta_jars.py")


def scope_of(nodeid: str) -> str:
    """The unit one process runs whole: the test's module, or all the demo's readers."""
    module = nodeid.split("::", 1)[0]
    return DEMO_SCOPE if module in SHARE_THE_DEMO else module


def shares_the_demo(module: Path, root: Path) -> bool:
    return scope_of(module.relative_to(root).as_posix()) == DEMO_SCOPE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest units first; a stable sort keeps every module's tests together and in order."""
    rank = {scope: position for position, scope in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(scope_of(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent from a plain pytest run
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndTheDemoTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ModulesAndTheDemoTogether(config, log)
