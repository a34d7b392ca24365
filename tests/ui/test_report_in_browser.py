"""The HTML report in headless Chromium: it opens from disk (offline) and every figure renders.

Plotly marks a figure's div with `js-plotly-plot` and draws `main-svg` layers into it only when
plotly.js actually ran, so these are checked in the DOM Chromium rendered. The data in the
figures is checked in tests/report/.
"""

from __future__ import annotations

import re
import shutil

import pytest

from offsets_platform.views.report import FIGURES, write_report
from tests.report.fixtures import demo_lake, demo_run  # noqa: F401  (fixtures)
from tests.ui.browser import Browser


@pytest.fixture(scope="module")
def page(demo_lake, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run .ci/install-debian-packages (`make test` runs it before pytest)")
    report = write_report(demo_lake, tmp_path_factory.mktemp("report") / "cluster_report.html")
    return Browser(chromium, tmp_path_factory.mktemp("chromium")).render(report.as_uri(), "cluster-report",
                                                                          height=4000)


def test_every_figure_of_the_report_renders(page):
    for div_id in FIGURES:
        tag = re.search(rf'<div[^>]*\bid="{div_id}"[^>]*>', page.dom)
        assert tag, f"{div_id} is not in the report"
        assert "js-plotly-plot" in tag.group(0), f"plotly.js did not draw {div_id}"
    assert page.dom.count('class="main-svg"') >= 2 * len(FIGURES)
    assert page.screenshot.stat().st_size > 50_000


def test_the_report_shows_what_needs_attention(page):
    text = " ".join(page.text)
    assert "billing-slow" in text and "search-changed-subscription" in text
