"""report: the page in a real browser (Debian's headless Chromium, no browser download).

Fails on any console error, uncaught exception, log error (e.g. a content-security-policy violation),
failed request, or request to anything but the page's own file; checks that every plot drew (a non-empty
SVG of a sensible size), that a screenshot is not blank, that the page fits laptop widths and that tables
sort. Skips only when no Chromium is installed, and never in CI (.ci/run installs it).
"""

from __future__ import annotations

import io

import pytest
from chromium import browser, find_chromium, in_ci, open_page
from report_helpers import heldback_report, sample_report

from mcqa_prep.report import extract_document, plot_blocks

# every figure's SVG: its id, drawn size and how many shapes and texts it holds
FIGURES_JS = """
Array.from(document.querySelectorAll("figure[data-plot]")).map(function (f) {
  var svg = f.querySelector("svg");
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {id: f.getAttribute("data-plot"), width: box.width, height: box.height,
          shapes: svg ? svg.querySelectorAll("path, use, rect, polyline, line, circle").length : 0,
          texts: svg ? svg.querySelectorAll("text").length : 0};
})
"""
OVERFLOW_JS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
SORT_JS = """
(function () {
  var table = document.querySelector("table[data-table$='templates-table']");
  var th = Array.from(table.querySelectorAll("thead th")).find(function (h) { return h.textContent === "rows"; });
  var col = Array.from(th.parentNode.children).indexOf(th);
  var read = function () {
    return Array.from(table.tBodies[0].rows).map(function (r) { return parseFloat(r.cells[col].getAttribute("data-sort")); });
  };
  th.click();
  var up = read();
  th.click();
  return {up: up, down: read(), sort: th.getAttribute("aria-sort")};
})()
"""


@pytest.fixture(scope="module")
def chrome(tmp_path_factory):
    binary = find_chromium()
    if binary is None:
        reason = "Chromium is not installed (apt-get install -y chromium; .ci/run installs it)"
        if in_ci():
            pytest.fail(reason + ": CI must run the browser test")
        pytest.skip(reason)
    with browser(binary, tmp_path_factory.mktemp("chromium")) as session:
        yield session


def _not_blank(png: bytes) -> tuple[float, int]:
    """(share of pixels that are not near-white, number of distinct grey levels) of a screenshot."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("L")
    hist = img.histogram()
    total = sum(hist)
    return sum(hist[:240]) / total, sum(1 for n in hist if n)


def _check_page(chrome, made) -> None:
    visit = open_page(chrome, made["page"])
    assert visit.errors == []
    assert visit.failed == []
    assert visit.requests == [visit.url]  # the file itself, nothing else
    figures = chrome.evaluate(FIGURES_JS)
    blocks = plot_blocks(extract_document(made["html"]))
    assert [f["id"] for f in figures] == [b["id"] for b in blocks]
    for f, b in zip(figures, blocks, strict=True):
        assert f["width"] > 250 and f["height"] > 120, f
        # a matrix draws one cell per count (a 1 x 3 matrix is 3 shapes); bars draw bars, spines and ticks
        least = len(b["rows"]) * len(b["columns"]) if b["kind"] == "matrix" else 5
        assert f["shapes"] >= least and f["texts"] >= 4, f


def test_sample_report_in_chromium(chrome, tmp_path_factory):
    made = sample_report(tmp_path_factory)
    _check_page(chrome, made)
    chrome.set_width(1280)
    dark, greys = _not_blank(chrome.screenshot())
    assert dark > 0.02 and greys > 20, (dark, greys)


@pytest.mark.parametrize("width", [1440, 1280, 1024])
def test_sample_report_fits_laptop_widths(chrome, tmp_path_factory, width):
    made = sample_report(tmp_path_factory)
    open_page(chrome, made["page"])
    chrome.set_width(width)
    assert chrome.evaluate(OVERFLOW_JS) <= 0  # no horizontal scrolling of the page
    for f in chrome.evaluate(FIGURES_JS):
        assert f["width"] <= width, f


def test_tables_sort_on_a_header_click(chrome, tmp_path_factory):
    made = sample_report(tmp_path_factory)
    open_page(chrome, made["page"])
    res = chrome.evaluate(SORT_JS)
    assert res["up"] == sorted(res["up"]) and res["down"] == sorted(res["down"], reverse=True)
    assert res["sort"] == "descending"


def test_heldback_report_in_chromium(chrome, tmp_path_factory):
    _check_page(chrome, heldback_report(tmp_path_factory))


def test_pass_rate_sections_in_chromium(chrome, tmp_path_factory):
    """Pass-rate sections (two models, breakdowns, examples with long prompts) draw and fit a laptop."""
    from report_helpers import run_cli
    from synthetic_rollouts import dataset_rows, generate, write

    tmp = tmp_path_factory.mktemp("report-passrates")
    design = generate(seed=4, questions=200, models={"model-a": (2, 3), "model-b": (4, 1)}, samples=8)
    rescored = write(tmp / "rescored.jsonl", design.rows)
    run_cli("passrates", rescored, "-o", tmp / "t.jsonl")
    rows = dataset_rows(
        200, ["arc", "sciq", "a-source-with-a-rather-long-name/and-a-config"], ["bio", "chem"]
    )
    for r in rows:
        r["responses_create_params"]["input"][0]["content"] += " " + "long prompt text " * 40
    data = write(tmp / "rows.jsonl", rows)
    page = tmp / "report.html"
    run_cli(
        "report",
        data,
        rescored,
        "--pass-rates",
        tmp / "t.jsonl",
        "--by",
        "subject",
        "-o",
        page,
        "--format",
        "json",
    )
    made = {"page": page, "html": page.read_text(encoding="utf-8")}
    _check_page(chrome, made)
    chrome.set_width(1024)
    assert chrome.evaluate(OVERFLOW_JS) <= 0
