"""Every module that reads the session's demo runs in the one process that makes it."""

import re
from pathlib import Path

import pytest

from tests.xdist_scheduling import DEMO_SCOPE, scope_of, shares_the_demo

ROOT = Path(__file__).resolve().parents[1]
DEMO_FIXTURES = re.compile(r"\bdemo_(run|lake)\b")

pytestmark = pytest.mark.fast  # make test-fast


def test_the_modules_that_use_the_demo_fixtures_are_exactly_the_ones_scheduled_together():
    modules = [path for path in (ROOT / "tests").rglob("test_*.py") if path.name != Path(__file__).name]
    using = {path for path in modules if DEMO_FIXTURES.search(path.read_text())}
    assert using, "the demo fixtures are used somewhere"
    assert {path for path in modules if shares_the_demo(path, ROOT)} == using


def test_other_modules_are_each_their_own_unit():
    assert scope_of("tests/report/test_html.py::test_x") == scope_of("tests/ui/test_browser.py::test_y") == DEMO_SCOPE
    assert scope_of("tests/report/test_report_at_scale.py::test_w") == "tests/report/test_report_at_scale.py"
    assert scope_of("tests/ui/test_key_numbers.py::test_z[a]") == "tests/ui/test_key_numbers.py"
