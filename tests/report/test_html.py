"""The HTML report: one offline file with plotly.js inline once, every figure's div, the headline
and the tables of what needs attention."""

import html
import re

import pytest
from plotly.offline import get_plotlyjs

from offsets_platform.views.report import FIGURES, report_path, write_report
from offsets_platform.views.summary import headline


@pytest.fixture(scope="module")
def page(demo_lake, tmp_path_factory) -> str:
    path = write_report(demo_lake, tmp_path_factory.mktemp("report") / "sub" / "cluster_report.html")
    return path.read_text(encoding="utf-8")


def test_the_demo_wrote_its_report_and_said_where(demo_run):
    path = demo_run.home / "demo" / "reports" / "cluster_report.html"
    assert report_path(demo_run.lake) == path
    assert f"report: {path}" in demo_run.output
    assert path.stat().st_size > 1_000_000


def test_plotly_js_is_inline_exactly_once_and_nothing_is_loaded_from_elsewhere(page):
    library = get_plotlyjs()
    assert page.count(library) == 1
    assert page.index(library) < page.index("<body>"), "in <head>, before any figure"
    rest = page.replace(library, "")
    # (the bundle names cdn.plot.ly once as the default topojson URL of maps; the report draws none)
    assert "cdn.plot.ly" not in rest
    assert not re.search(r"""<(script|link|img)[^>]*(src|href)\s*=""", rest), "no external file"
    assert rest.count("Plotly.newPlot(") == len(FIGURES)


def test_every_figure_has_its_div_id(page):
    for element_id in FIGURES:
        assert f'<div id="{element_id}" class="plotly-graph-div"' in page
        assert f'id="section-{element_id}"' in page


def test_the_headline_is_in_sentences_and_the_tables_headers_in_words(demo_lake, page):
    sentences = headline(demo_lake)
    assert len(sentences) >= 5 and "<pre>" not in page
    for sentence in sentences:
        assert f"<p>{html.escape(sentence)}</p>" in page
    assert "billing-slow" in " ".join(sentences), "the demo's slow group is named: it lags and loses messages"
    headers = re.findall(r"<th>(.*?)</th>", page)
    assert headers and not [header for header in headers if "_" in header], headers


def test_attention_tables_name_the_groups_that_need_it(page):
    def table(element_id):
        match = re.search(rf'<(table|p) id="{element_id}">(.*?)</\1>', page, re.S)
        assert match, element_id
        return match.group(2)

    assert "billing-slow" in table("table-retention-losses")
    assert "search-changed-subscription" in table("table-cleanup-offsets")
    assert "search-clicks" in table("table-cleanup-offsets")
    table("table-expiring-soon")  # present, with rows or "none"
    table("table-cleanup-groups")


def test_write_report_replaces_the_file_whole(demo_lake, tmp_path):
    path = tmp_path / "report.html"
    path.write_text("old")
    assert write_report(demo_lake, path) == path
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"], "no temporary file left"
