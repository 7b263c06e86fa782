"""report: the document, the page drawn from it alone, the command's contract, bounded tallies."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from conftest import SAMPLE, write_jsonl
from report_helpers import sample_report

from mcqa_prep.report import build_report, extract_document, plot_blocks, render_html
from mcqa_prep.report.plots import LABEL_CHARS, _num


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The sample report, made once by the command: the page, the JSON document and their inputs."""
    return sample_report(tmp_path_factory)


def _figures(html: str) -> dict[str, str]:
    """data-plot id -> the figure's markup."""
    found = re.findall(r'<figure class="plot" id="[^"]+" data-plot="([^"]+)">(.*?)</figure>', html, re.S)
    return dict(found)


def _svg_texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]


# ---- the page and the JSON never disagree ---------------------------------------------------------------


def test_json_output_is_one_document_equal_to_the_one_embedded_in_the_page(sample):
    doc = json.loads(sample["json"])  # exactly one JSON document on stdout
    assert doc.pop("ok") is True
    assert extract_document(sample["html"]) == doc


def test_page_is_a_pure_function_of_its_embedded_document(sample):
    """Rendering the embedded document again gives the same bytes: nothing but the JSON reaches the page."""
    assert render_html(extract_document(sample["html"])) == sample["html"]


def test_every_plot_of_the_document_is_drawn_once_from_its_own_numbers(sample):
    doc = extract_document(sample["html"])
    figures = _figures(sample["html"])
    blocks = plot_blocks(doc)
    assert [b["id"] for b in blocks] == list(figures)
    assert len(blocks) >= 12
    for b in blocks:
        svg = figures[b["id"]]
        assert svg.count("<svg") == 1, b["id"]
        texts = _svg_texts(svg)
        assert any(b["title"][:40] in t for t in texts), b["id"]
        assert b["x_label"] in texts and b["y_label"] in texts, b["id"]
        if b["kind"] == "matrix":
            for row in b["values"]:
                for v in row:
                    assert _num(v) in texts, (b["id"], v)
            continue
        for panel in b["panels"]:
            for cat in panel["categories"]:
                short = cat if len(cat) <= LABEL_CHARS else cat[: LABEL_CHARS - 1] + "…"
                assert short in texts, (b["id"], cat)
            bar = [s for s in panel["series"] if s["draw"] == "bar"]
            if len(bar) == 1 and not b["stacked"] and len(panel["categories"]) <= 30:
                labels = [_num(v if v is not None else 0) for v in bar[0]["values"]]
                assert [t for t in texts if t in labels] != [] and all(x in texts for x in labels), b["id"]


def test_a_changed_number_changes_its_figure_and_nothing_else(sample):
    doc = extract_document(sample["html"])
    target = next(b for b in plot_blocks(doc) if b["id"].endswith("-options"))
    target["panels"][0]["series"][0]["values"][0] += 7
    other = _figures(render_html(doc))
    before = _figures(sample["html"])
    changed = [k for k in before if before[k] != other[k]]
    assert changed == [target["id"]]


def test_every_plot_has_title_axis_labels_and_a_caption(sample):
    for b in plot_blocks(extract_document(sample["html"])):
        assert b["title"] and b["x_label"] and b["y_label"], b["id"]
        assert len(b["caption"]) > 40, b["id"]


def test_page_fetches_nothing_and_carries_its_script_and_styles_inline(sample):
    html = sample["html"]
    assert "default-src 'none'" in html
    assert not re.search(r"\b(src|href)\s*=\s*[\"'](?!#)", html)  # only in-page anchors
    assert "http://" not in html.split('<script type="application/json"')[0].replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    ).replace('xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    assert "<style>" in html and "<script>" in html


def test_sample_report_shows_the_manifest_contract_sources_and_the_rescored_numbers(sample):
    doc = extract_document(sample["html"])
    kinds = [s["kind"] for s in doc["sections"]]
    assert kinds == ["dataset", "rescored"]
    ds, rs = doc["sections"]
    assert ds["contract"] == rs["contract"] and ds["contract"].startswith("sha256:")
    prov = next(b for b in ds["blocks"] if b.get("id", "").endswith("provenance"))
    assert prov["rows"][0][2] == ds["contract"] and "train.jsonl sha256:" in prov["rows"][0][5]
    assert ds["summary"]["rows"] == 12 and ds["summary"]["splits"] == {"train": 8, "validation": 4}
    assert rs["summary"]["rows"] == 12 and rs["summary"]["mean_reward"] == 0.75
    assert (
        rs["summary"]["agreement"]["0->1"]["count"] == 1 and rs["summary"]["agreement"]["1->0"]["count"] == 1
    )
    assert rs["summary"]["format_misses"] == 1
    assert doc["distinct_contracts"] == 1


def test_markup_in_the_document_is_text_on_the_page(sample):
    """The templates are autoescaped: a title, a file name or a table cell holding markup shows as text, and
    the embedded JSON cannot end its script tag."""
    doc = extract_document(sample["html"])
    evil = '<img src=x onerror="alert(1)"></script><b>'
    doc["title"] = evil
    doc["inputs"][0]["path"] = evil
    ds = doc["sections"][0]
    table = next(b for b in ds["blocks"] if b.get("type") == "table")
    table["rows"][0][0] = evil
    page = render_html(doc)
    assert "<img" not in page and "<b>" not in page
    assert page.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&lt;/script&gt;&lt;b&gt;") >= 3
    assert extract_document(page)["title"] == evil
    assert page.count("</script>") == 2  # the data's and the sorting script's own


def test_control_characters_show_as_replacement_characters_and_stay_in_the_data(sample):
    """A NUL (which the HTML parser drops), an ESC or a C1 control (drawn as nothing) in a title, a file name or
    a table cell shows as U+FFFD on the page, as in the plots; the embedded document keeps the string exactly."""
    doc = extract_document(sample["html"])
    odd = "a\x00b\x1b[31mc\x85d"
    doc["title"] = odd
    doc["inputs"][0]["path"] = odd
    table = next(b for b in doc["sections"][0]["blocks"] if b.get("type") == "table")
    table["rows"][0][0] = odd
    page = render_html(doc)
    shown = re.sub(r'<script type="application/json" id="report-data">.*?</script>', "", page, flags=re.S)
    assert shown != page and not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", shown)
    assert page.count("a\ufffdb\ufffd[31mc\ufffdd") >= 3
    assert extract_document(page)["title"] == odd


# ---- the command ----------------------------------------------------------------------------------------


def test_text_output_says_what_was_written(cli, tmp_path):
    page = tmp_path / "r.html"
    res = cli("report", SAMPLE / "train.jsonl", SAMPLE / "validation.parquet", "-o", page)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(f"wrote {page} (")
    assert "dataset (no contract): 12 rows, 0 error(s), 0 warning(s), position bias: none" in res.stdout
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # atomic: no temporary left


def test_page_on_stdout(cli):
    res = cli("report", SAMPLE / "train.jsonl", "-o", "-", "-q")
    assert res.exit_code == 0
    assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.rstrip().endswith("</html>")


def test_usage_errors_exit_2(cli, tmp_path):
    assert cli("report", SAMPLE / "train.jsonl").exit_code == 2  # no -o and no --format json
    res = cli("report", tmp_path / "missing.jsonl", "-o", tmp_path / "r.html")
    assert res.exit_code == 2 and "no such file or directory" in res.output
    res = cli("report", SAMPLE / "train.jsonl", "-o", "-", "--format", "json")
    assert res.exit_code == 2
    copy = write_jsonl(
        tmp_path / "rows.jsonl", [json.loads(SAMPLE.joinpath("train.jsonl").read_text().split("\n")[0])]
    )
    res = cli("report", copy, "-o", copy)
    assert res.exit_code == 2 and "is an input" in res.output
    res = cli("report", tmp_path, "-o", tmp_path / "inside.html")
    assert res.exit_code == 2 and "inside the input directory" in res.output


@pytest.mark.parametrize("content", ["", 'garbage\n[1]\n{"x":\nnull\n'])
def test_nothing_readable_exits_1_with_one_json_document(cli, tmp_path, content):
    """An empty file, and one where no line is a row (it read as "4 rows, 4 errors", exit 0; found by an
    audit)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content)
    res = cli("report", empty, "-o", tmp_path / "r.html", "--format", "json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["error"]["reason"] == "no_rows"
    assert ("4 line(s), none of them a row" in doc["error"]["message"]) == bool(content)
    assert not (tmp_path / "r.html").exists()


def test_findings_do_not_fail_the_report(cli, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"not": "a row"}', "{broken"])
    res = cli("report", bad, "--format", "json")
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    s = doc["sections"][0]["summary"]
    assert s["findings_by_rule"]["malformed_row"] == 1 and s["findings_by_rule"]["schema"] >= 1
    assert doc["inputs"][0]["malformed"] == 1


def test_stdin_is_read_once(cli):
    rows = SAMPLE.joinpath("train.jsonl").read_text()
    res = cli("report", "-", "--format", "json", input=rows)
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["inputs"][0]["path"] == "-" and doc["sections"][0]["summary"]["rows"] == 8


# ---- detection and sections -----------------------------------------------------------------------------


def test_a_file_is_rescored_when_its_first_readable_row_carries_metadata_grading(tmp_path):
    graded = {
        "reward": 1.0,
        "metadata": {"grading": {"status": "ok", "mode": "lenient_boxed", "contract": "c1"}},
    }
    f = write_jsonl(tmp_path / "r.jsonl", ["{oops", graded, {"uuid": "no grading"}, graded])
    doc = build_report([f])
    assert doc["inputs"][0]["detected"] == "rescored"
    assert doc["inputs"][0]["malformed"] == 1 and doc["inputs"][0]["unscored"] == 1
    (s,) = doc["sections"]
    assert s["kind"] == "rescored" and s["contract"] == "c1" and s["summary"]["rows"] == 2


def test_rows_are_never_pooled_across_contracts(tmp_path):
    def graded(c, r):
        return {"reward": r, "metadata": {"grading": {"status": "ok", "mode": "m", "contract": c}}}

    f = write_jsonl(tmp_path / "mixed.jsonl", [graded("c1", 1.0), graded("c2", 0.0), graded("c1", 1.0)])
    doc = build_report([f])
    by = {s["contract"]: s["summary"] for s in doc["sections"]}
    assert by["c1"]["rows"] == 2 and by["c1"]["mean_reward"] == 1.0
    assert by["c2"]["rows"] == 1 and by["c2"]["mean_reward"] == 0.0
    assert doc["distinct_contracts"] == 2
    assert "2 different grading contracts" in render_html(doc)


def test_stamped_dataset_rows_go_to_their_contracts_section(tmp_path):
    rows = [json.loads(x) for x in SAMPLE.joinpath("train.jsonl").read_text().splitlines()]
    rows[0]["metadata"] = {"mcqa_prep": {"contract": "sha256:aaa"}}
    doc = build_report([write_jsonl(tmp_path / "rows.jsonl", rows)])
    by = {s["contract"]: s["summary"]["rows"] for s in doc["sections"]}
    assert by == {None: 7, "sha256:aaa": 1}


def test_unreadable_file_is_reported_and_the_rest_is_read(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    doc = build_report([broken, SAMPLE / "train.jsonl"])
    assert doc["inputs"][0]["error"]
    assert doc["sections"][0]["summary"]["findings_by_rule"]["unreadable_file"] == 1


# ---- bounded memory ---------------------------------------------------------------------------------------


def test_tallies_are_bounded_whatever_the_number_of_distinct_values(tmp_path):
    from mcqa_prep.records import Row
    from mcqa_prep.report import dataset, rescored

    t = dataset.DatasetTally(examples=2)
    r = rescored.RescoredTally(examples=2)
    for i in range(dataset.TEMPLATE_CAP + 50):
        row = {
            "responses_create_params": {"input": [{"role": "user", "content": f"q{i}\nA: a\nB: b"}]},
            "options": [{"A": "a"}, {"B": "b"}],
            "expected_answer": "Z",  # an error on every row: examples stay capped
            "template_metadata": {"template_id": f"t{i}", "output_regex": f"x{i}: ([A-B])"},
            "reward_profiles": [{"model_hf_path": f"m{i}", "pass_rate": 0.5}],
        }
        t.add(Row("f.jsonl", i + 1, i, row))
        g = {"status": f"s{i}", "mode": f"mode{i}", "contract": "c", "response_chars": i}
        r.add(Row("r.jsonl", i + 1, i, {**row, "reward": 1.0, "metadata": {"grading": g}}), g)
    assert len(t.templates) == dataset.TEMPLATE_CAP + 1
    assert len(t.patterns) <= dataset.PATTERN_CAP + 1
    assert len(t.profiles) <= dataset.MODEL_CAP + 1
    assert all(len(e.items) <= 2 for e in t.rules.values())
    assert len(r.templates) == rescored.TEMPLATE_CAP + 1 and len(r.modes) == rescored.MODE_CAP + 1
    assert all(len(e.items) <= 2 for e in r.agreement.values())
    assert len(r.response_chars.counts) == len(r.response_chars.sums) == 12


def test_labels_are_text_never_tex_math():
    """A template id like "$x^$" crashed the report (when matplotlib drew it: its mathtext) and "costs $5 and
    $6" lost its dollar signs; every label is drawn as plain text (svgdraw.Canvas.text, in one place)."""
    from mcqa_prep.report.plots import draw_svg

    names = ["$x^$", "costs $5 and $6", "$\\frac{a}{", "$$"]
    plot = {
        "type": "plot",
        "kind": "bars",
        "id": "t",
        "title": "$title$",
        "x_label": "$x$",
        "y_label": "y",
        "panels": [
            {
                "title": "$p$",
                "categories": names,
                "series": [{"name": "$s$", "values": [1, 2, 3, 4], "draw": "bar", "axis": "left"}],
            }
        ],
        "stacked": False,
        "horizontal": True,
    }
    svg = unescape(draw_svg(plot))
    for text in [*names, "$title$", "$x$", "$p$"]:
        assert text in svg, text
    matrix = {**plot, "kind": "matrix", "rows": names, "columns": ["$a$"], "values": [[1], [2], [3], [4]]}
    svg = unescape(draw_svg(matrix))
    assert all(n in svg for n in names)
