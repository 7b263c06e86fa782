"""report: the plots, drawn as SVG by the package itself. Each test reads the geometry back from the markup
(xml.etree), so a bar drawn at the wrong height, a label left unescaped or a category out of order fails."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_helpers import sample_report

from mcqa_prep.report import extract_document, plot_blocks, spec
from mcqa_prep.report.plots import DEFAULT_COLORS, draw_svg
from mcqa_prep.report.svgdraw import nice_ticks, text_width, tick_label

NS = "{http://www.w3.org/2000/svg}"
TICKS = Path(__file__).parent / "fixtures" / "report_plots" / "ticks.json"
HOSTILE = ["<b>&", "</text><script>alert(1)</script>", "\"quoted\" & 'single'", "$x^$", "a]]>b"]


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on markup that is not well-formed


def _groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(NS + "g") if g.get("class") == cls]


def _rects(group: ET.Element) -> list[dict[str, float]]:
    return [{k: float(r.get(k, 0)) for k in ("x", "y", "width", "height")} for r in group.iter(NS + "rect")]


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(NS + "text")]


def _bar_plot(values: list[float], **kw) -> dict:
    cats = kw.pop("cats", [f"c{i}" for i in range(len(values))])
    return spec.bars("t-bars", "Counts", "caption", x_label="cat", y_label="rows",
                     panels=[spec.panel("", cats, [spec.series("rows", values)])], **kw)  # fmt: skip


@pytest.fixture(scope="module")
def sample_blocks(tmp_path_factory):
    made = sample_report(tmp_path_factory)
    return plot_blocks(extract_document(made["html"]))


def test_every_plot_of_the_sample_is_well_formed_plain_svg(sample_blocks):
    """Parseable SVG 1.1, labelled for screen readers, scalable (viewBox), and nothing the page's policy
    forbids: no script, image, style element, foreign object, link, id or data: URL."""
    assert len(sample_blocks) >= 12
    for b in sample_blocks:
        svg = draw_svg(b)
        root = _parse(svg)
        assert root.tag == NS + "svg" and root.get("role") == "img" and root.get("aria-label") == b["title"]
        w, h = float(root.get("width")), float(root.get("height"))
        assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}" and w > 250 and h > 120
        tags = {e.tag.removeprefix(NS) for e in root.iter()}
        assert tags <= {"svg", "g", "rect", "line", "polyline", "circle", "text"}, (b["id"], tags)
        attrs = {k for e in root.iter() for k in e.attrib}
        assert not attrs & {"id", "href", "{http://www.w3.org/1999/xlink}href", "style"}, b["id"]
        assert "data:" not in svg and "url(" not in svg and not re.search(r"\bon\w+=", svg)


def test_drawing_is_deterministic(sample_blocks):
    for b in sample_blocks:
        assert draw_svg(b) == draw_svg(json.loads(json.dumps(b))), b["id"]


@pytest.mark.parametrize("horizontal", [False, True])
def test_a_bars_length_is_proportional_to_its_value(horizontal):
    values = [3, 7, 0, 12, 1]
    root = _parse(draw_svg(_bar_plot(values, horizontal=horizontal)))
    (bars,) = _groups(root, "bars")
    rects = _rects(bars)
    assert len(rects) == len(values)
    lengths = [r["width"] if horizontal else r["height"] for r in rects]
    scale = lengths[3] / 12
    assert scale > 0
    for v, length in zip(values, lengths, strict=True):
        assert math.isclose(length, v * scale, abs_tol=0.02), (v, length)
    # bars stand on the same baseline (vertical: same bottom; horizontal: same left)
    ends = (
        {round(r["y"] + r["height"], 1) for r in rects}
        if not horizontal
        else {round(r["x"], 1) for r in rects}
    )
    assert len(ends) == 1
    # each bar carries its number
    assert [t for t in _texts(root) if t in {"3", "7", "0", "12", "1"}] != []


@pytest.mark.parametrize("values", [[3, 7, 12], [1], [99, 100, 101], [12345, 3], [0.2, 0.7]])
def test_the_ticks_cover_the_largest_value(values):
    root = _parse(draw_svg(_bar_plot(values)))
    numbers = []
    for t in root.iter(NS + "text"):
        if t.get("text-anchor") == "end":  # the value axis' tick labels (left of the axis)
            numbers.append(float((t.text or "").replace(",", "")))
    assert numbers == sorted(numbers) and numbers[0] == 0
    assert numbers[-1] >= max(values)
    (bars,) = _groups(root, "bars")
    grid_top = min(float(x.get("y1")) for x in root.iter(NS + "line") if x.get("stroke") == "#e5e5e5")
    assert all(r["y"] >= grid_top - 0.01 for r in _rects(bars))  # no bar above the top tick


def test_ticks_are_one_two_five_steps_golden():
    for case in json.loads(TICKS.read_text(encoding="utf-8"))["cases"]:
        ticks = nice_ticks(case["top"], case["integer"], case["target"])
        assert [tick_label(t, ticks) for t in ticks] == case["labels"], case
        assert ticks[-1] >= case["top"] and ticks[0] == 0
        step = ticks[1] - ticks[0]
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert any(math.isclose(mantissa, m) for m in (1, 2, 5)), case
        if case["integer"]:
            assert float(step).is_integer()


def test_labels_are_escaped_text():
    """Labels are data: markup in a title, category, series or panel title stays text, exactly."""
    plot = spec.bars(
        "t-esc", HOSTILE[0], "caption", x_label=HOSTILE[1], y_label=HOSTILE[2],
        panels=[spec.panel(HOSTILE[3], HOSTILE, [spec.series(HOSTILE[4], [1, 2, 3, 4, 5]),
                                                  spec.series(HOSTILE[0], [1, 1, 1, 1, 1], draw="marker")])],
    )  # fmt: skip
    svg = draw_svg(plot)
    assert "<b>" not in svg and "<script" not in svg
    texts = _texts(_parse(svg))
    for label in HOSTILE:
        assert label in texts, label
    assert _parse(svg).get("aria-label") == HOSTILE[0]
    matrix = spec.matrix("t-m", "<m>", "c", x_label="x", y_label="y", rows=HOSTILE, columns=["<c>"],
                         values=[[i] for i in range(len(HOSTILE))])  # fmt: skip
    texts = _texts(_parse(draw_svg(matrix)))
    assert all(label in texts for label in [*HOSTILE, "<c>", "<m>"])


def test_long_labels_are_cut_with_an_ellipsis():
    long = "x" * 100
    texts = _texts(_parse(draw_svg(_bar_plot([1, 2], cats=[long, "short"]))))
    assert "x" * 41 + "…" in texts and long not in texts


@pytest.mark.parametrize("horizontal", [False, True])
def test_categories_and_grouped_series_keep_their_order(horizontal):
    cats = ["zeta", "alpha", "mid"]
    plot = spec.bars(
        "t-group", "Grouped", "c", x_label="x", y_label="y", horizontal=horizontal,
        panels=[spec.panel("", cats, [spec.series("first", [1, 2, 3]), spec.series("second", [4, 5, 6]),
                                      spec.series("dash", [2, 2, 2], draw="marker")])],
    )  # fmt: skip
    root = _parse(draw_svg(plot))
    first, second = (_rects(g) for g in _groups(root, "bars"))
    along = "y" if horizontal else "x"
    assert [r[along] for r in first] == sorted(r[along] for r in first)  # categories in the document's order
    assert all(
        a[along] < b[along] for a, b in zip(first, second, strict=True)
    )  # series in order within a group
    texts = [t for t in _texts(root) if t in cats]
    assert texts == cats
    (legend,) = _groups(root, "legend")
    assert [t.text for t in legend.iter(NS + "text")] == ["first", "second", "dash"]
    fills = [r.get("fill") for r in legend.iter(NS + "rect")]
    assert fills == list(DEFAULT_COLORS[:2])


def test_stacked_bars_reach_their_totals():
    a, b = [1, 4, 0, 2], [3, 0, 5, 2]
    plot = spec.bars(
        "t-stack", "Stacked", "c", x_label="x", y_label="y", stacked=True,
        panels=[spec.panel("", ["p", "q", "r", "s"], [spec.series("a", a), spec.series("b", b)])],
    )  # fmt: skip
    root = _parse(draw_svg(plot))
    ra, rb = (_rects(g) for g in _groups(root, "bars"))
    scale = (ra[1]["height"]) / 4
    for k in range(4):
        assert math.isclose(ra[k]["height"] + rb[k]["height"], (a[k] + b[k]) * scale, abs_tol=0.03)
        assert math.isclose(rb[k]["y"] + rb[k]["height"], ra[k]["y"], abs_tol=0.02)  # b sits on a
        assert ra[k]["x"] == rb[k]["x"]


def test_a_rate_overlay_sits_on_the_second_axis():
    plot = spec.bars(
        "t-twin", "Twin", "c", x_label="x", y_label="rows", y2_label="mean reward",
        panels=[spec.panel("", ["a", "b"], [spec.series("rows", [10, 20]),
                                            spec.series("mean", [0.5, None], draw="line", axis="right")])],
    )  # fmt: skip
    root = _parse(draw_svg(plot))
    (bars,) = _groups(root, "bars")
    (overlay,) = _groups(root, "overlay")
    (dot,) = list(overlay.iter(NS + "circle"))  # None is not drawn
    rects = _rects(bars)
    bottom = rects[0]["y"] + rects[0]["height"]
    top_tick = min(float(x.get("y1")) for x in root.iter(NS + "line") if x.get("stroke") == "#e5e5e5")
    axis_h = bottom - top_tick
    assert math.isclose(bottom - float(dot.get("cy")), 0.5 / 1.05 * axis_h, abs_tol=0.05)
    assert "mean reward" in _texts(root) and "1.0" in _texts(root)


def test_matrix_cells_darken_with_their_count():
    values = [[0, 5, 10], [20, 40, 80]]
    plot = spec.matrix("t-mx", "M", "c", x_label="x", y_label="y", rows=["r0", "r1"], columns=["a", "b", "c"],
                       values=values)  # fmt: skip
    root = _parse(draw_svg(plot))
    (cells,) = _groups(root, "cells")
    fills = [r.get("fill") for r in cells.iter(NS + "rect")]
    flat = [v for row in values for v in row]
    assert len(fills) == len(flat)

    def luminance(c: str) -> float:
        r, g, b = (int(c[i : i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    ordered = [luminance(f) for _, f in sorted(zip(flat, fills, strict=True))]
    assert all(x > y for x, y in zip(ordered, ordered[1:], strict=False))  # strictly darker as counts grow
    numbers = {t.text: t.get("fill") for t in cells.iter(NS + "text")}
    assert numbers["80"] == "#ffffff" and numbers["0"] is None  # light text on dark cells only
    cell = _rects(cells)
    assert cell[0]["y"] < cell[3]["y"] and cell[0]["x"] < cell[1]["x"]  # first row on top, columns in order


def test_an_empty_panel_or_matrix_says_no_data():
    plot = spec.bars(
        "t-empty", "Empty", "c", x_label="x", y_label="y",
        panels=[spec.panel("full", ["a"], [spec.series("rows", [2])]), spec.panel("empty", [], [spec.series("rows", [])])],
    )  # fmt: skip
    root = _parse(draw_svg(plot))
    assert _texts(root).count("no data") == 1
    assert [len(_rects(g)) for g in _groups(root, "bars")] == [1, 0]
    matrix = spec.matrix("t-em", "E", "c", x_label="x", y_label="y", rows=[], columns=[], values=[])
    root = _parse(draw_svg(matrix))
    assert "no data" in _texts(root) and _rects(_groups(root, "cells")[0]) == []


def test_panels_lay_out_in_a_grid_of_two_columns():
    panels = [spec.panel(f"p{i}", ["a", "b"], [spec.series("rows", [i + 1, 1])]) for i in range(3)]
    root = _parse(draw_svg(spec.bars("t-grid", "G", "c", x_label="x", y_label="y", panels=panels)))
    firsts = [_rects(g)[0] for g in _groups(root, "bars")]
    assert math.isclose(firsts[0]["y"] + firsts[0]["height"], firsts[1]["y"] + firsts[1]["height"])  # one row
    assert firsts[0]["x"] < firsts[1]["x"] and firsts[2]["x"] == firsts[0]["x"]
    assert firsts[2]["y"] > firsts[0]["y"] + firsts[0]["height"]  # the third panel below


@pytest.mark.parametrize("names", [["a", "b"], ["observed", "uniform expectation", "bias threshold (2x)"],
                                   [f"a rather long series name {i}" for i in range(5)]])  # fmt: skip
def test_the_legend_fits_the_figure_in_series_order(names):
    """A single panel with few categories is a narrow figure: its legend wraps rather than runs off it."""
    series = [spec.series(names[0], [3, 1])] + [spec.series(n, [1, 2], draw="marker") for n in names[1:]]
    plot = spec.bars("t-leg", "L", "c", x_label="x", y_label="y", panels=[spec.panel("", ["a", "b"], series)])
    root = _parse(draw_svg(plot))
    width = float(root.get("width"))
    (legend,) = _groups(root, "legend")
    texts = list(legend.iter(NS + "text"))
    assert [t.text for t in texts] == names
    for t in texts:
        x = float(t.get("x"))
        assert x > 0 and x + text_width(t.text or "", float(t.get("font-size"))) <= width, t.text


@pytest.mark.parametrize("horizontal", [False, True])
def test_a_bars_number_is_not_covered_by_a_dash_at_its_end(horizontal):
    """A dash (posterior mean, expectation) at or just past a bar's end would cover its number: the number
    moves past the dash; a dash far from the end leaves it where it is."""
    plot = spec.bars(
        "t-mark", "M", "c", x_label="x", y_label="y", horizontal=horizontal, y_max=1.0,
        panels=[spec.panel("", ["near", "far"], [spec.series("mean", [0.36, 0.2]),
                                                 spec.series("posterior", [0.37, 0.9], draw="marker")])],
    )  # fmt: skip
    root = _parse(draw_svg(plot))
    (bars,) = _groups(root, "bars")
    (overlay,) = _groups(root, "overlay")
    dashes = list(overlay.iter(NS + "line"))
    labels = {t.text: t for t in root.iter(NS + "text") if t.text in {"0.36", "0.20"}}
    ends = [r["x"] + r["width"] if horizontal else r["y"] for r in _rects(bars)]
    if horizontal:
        dash_x = float(dashes[0].get("x1"))
        assert float(labels["0.36"].get("x")) > dash_x  # past the dash
        assert math.isclose(float(labels["0.20"].get("x")), ends[1] + 2 * 96 / 72, abs_tol=0.02)  # unmoved
    else:
        dash_y = float(dashes[0].get("y1"))
        small = 7 * 96 / 72  # the numbers' font size; a text's descent is about a quarter of it
        assert float(labels["0.36"].get("y")) + 0.25 * small <= dash_y - 1.4  # above the dash's stroke
        assert float(labels["0.20"].get("y")) < ends[1] and float(labels["0.20"].get("y")) > ends[1] - 20


def test_a_label_of_controls_and_surrogates_stays_well_formed_and_seen():
    """What XML 1.0 cannot hold (NUL, ESC, a lone surrogate as an undecodable file name holds) or what draws
    nothing (DEL, a C1 control) is drawn as U+FFFD: the plot parses as XML on its own, and the label's other
    characters, RLO included, are kept."""
    labels = ["a\x00b", "esc\x1b[31m", "name\udcff.jsonl", "del\x7f", "c1\x85", "\u202eevil"]
    svg = draw_svg(spec.bars("t-ctl", "t\x00", "caption", x_label="cat", y_label="rows",
                             panels=[spec.panel("", labels, [spec.series("rows", [1, 2, 3, 4, 5, 6])])]))  # fmt: skip
    root = _parse(svg)
    texts = _texts(root)
    for want in ["a\ufffdb", "esc\ufffd[31m", "name\ufffd.jsonl", "del\ufffd", "c1\ufffd", "\u202eevil"]:
        assert want in texts, want
    svg.encode("utf-8")  # (a lone surrogate would raise here)
    assert root.get("aria-label") == "t\ufffd"


@pytest.mark.parametrize("label", ["  two leading", "trailing ", "in  between", "tab\there", "line\nend"])
def test_a_labels_own_spaces_are_kept(label):
    """SVG's default whitespace rule drops leading and trailing spaces and joins runs of them, so "  x" and
    "x" would be drawn alike: such a label is written with xml:space="preserve" (each space drawn; a tab or
    newline as one space), and a label of single inner spaces without it."""
    svg = draw_svg(_bar_plot([1, 2], cats=[label, "plain label"]))
    by_text = {t.text: t for t in _parse(svg).iter(NS + "text")}
    assert by_text[label].get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    assert by_text["plain label"].get("{http://www.w3.org/XML/1998/namespace}space") is None
