"""report on a generated held-back set with a known gold-letter bias, a broken template and two contracts:
the page must show the bias, the broken template's findings and two separate contract sections."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from report_helpers import (
    BIASED_LETTER,
    BROKEN_PATTERN,
    BROKEN_TEMPLATE,
    N_BROKEN,
    N_ROWS,
    heldback_report,
    run_cli,
)

from mcqa_prep.report import extract_document


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return heldback_report(tmp_path_factory)


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section class="report-section" id="{sid}"')
    end = html.find('<section class="report-section"', start + 1)
    return unescape(html[start : end if end > 0 else len(html)])


def _table_rows(section_html: str, table_suffix: str) -> list[list[str]]:
    m = re.search(rf'data-table="[^"]*{re.escape(table_suffix)}">.*?<tbody>(.*?)</tbody>', section_html, re.S)
    assert m, table_suffix
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)
    ]


def test_the_bias_is_flagged_and_drawn(made):
    doc = extract_document(made["html"])
    (ds,) = [s for s in doc["sections"] if s["kind"] == "dataset"]
    assert ds["summary"]["position_bias"]["flagged"] == [BIASED_LETTER]
    html = _section(made["html"], ds["id"])
    assert f"Position bias: gold letter {BIASED_LETTER} far over its uniform share" in html
    assert f"Gold letter vs. uniform expectation (flagged: {BIASED_LETTER})" in html
    gold = next(b for b in ds["blocks"] if b.get("id") == ds["id"] + "-gold")
    series = {s["name"]: s["values"] for s in gold["panels"][0]["series"]}
    a = gold["panels"][0]["categories"].index(BIASED_LETTER)
    assert series["observed"][a] > series["bias threshold (2x)"][a] == 2 * series["uniform expectation"][a]
    assert sum(series["uniform expectation"]) == pytest.approx(N_ROWS)


def test_the_broken_template_and_its_pattern_show_their_findings(made):
    doc = extract_document(made["html"])
    (ds,) = [s for s in doc["sections"] if s["kind"] == "dataset"]
    assert ds["summary"]["findings_by_rule"]["regex_positive_control"] == N_BROKEN
    html = _section(made["html"], ds["id"])
    templates = {r[0]: r for r in _table_rows(html, "-templates-table")}
    row = templates[BROKEN_TEMPLATE]
    assert row[1] == str(N_BROKEN) and row[4] == str(N_BROKEN)  # rows, rows with errors
    assert f"regex_positive_control ×{N_BROKEN}" in row[6]
    patterns = {r[0]: r for r in _table_rows(html, "-regex")}
    p = patterns[BROKEN_PATTERN]
    assert (
        p[2] == BROKEN_TEMPLATE and p[3] == "pass" and p[6] == f"fail ({N_BROKEN})"
    )  # compiles; positive fails
    findings = {r[0]: r for r in _table_rows(html, "-findings-table")}
    assert findings["regex_positive_control"][2] == str(N_BROKEN)
    assert "heldback.jsonl:1: $.template_metadata.output_regex" in findings["regex_positive_control"][3]
    # the rescoring shows the same template failing: no answer is ever read
    (rs,) = [s for s in doc["sections"] if s["kind"] == "rescored" and s["summary"]["compare_modes"]]
    rows = {r[0]: r for r in _table_rows(_section(made["html"], rs["id"]), "-templates-table")}
    assert rows[BROKEN_TEMPLATE][3] == "0" and f"no_answer={N_BROKEN}" in rows[BROKEN_TEMPLATE][4]


def test_two_contracts_get_two_sections_never_pooled(made):
    doc = extract_document(made["html"])
    rescored = [s for s in doc["sections"] if s["kind"] == "rescored"]
    assert len(rescored) == 2
    contracts = {s["contract"] for s in rescored}
    expected = set()
    for key in ("rescored_a", "rescored_b"):
        first = json.loads(made[key].read_text().splitlines()[0])
        expected.add(first["metadata"]["grading"]["contract"])
    assert contracts == expected and len(contracts) == 2
    assert all(s["summary"]["rows"] == N_ROWS for s in rescored)  # each its own file's rows, not 2 * N_ROWS
    assert doc["distinct_contracts"] == 2
    html = unescape(made["html"])
    assert "These inputs were graded or prepared under 2 different grading contracts" in html
    for c in contracts:
        assert f"Rescored rows graded under contract {c}" in html


def test_prepared_directories_under_two_contracts_are_two_dataset_sections(made, tmp_path):
    a, b = tmp_path / "prep-default", tmp_path / "prep-final"
    run_cli("prepare", made["data"], "-o", a, "--on-invalid", "reject")
    run_cli("prepare", made["data"], "-o", b, "--on-invalid", "reject", "--final-answer-only")
    doc = json.loads(run_cli("report", a, b, "--format", "json"))
    sections = [s for s in doc["sections"] if s["kind"] == "dataset"]
    assert len(sections) == 2 and len({s["contract"] for s in sections}) == 2
    for s in sections:
        assert s["summary"]["rows"] == N_ROWS - N_BROKEN  # the broken rows were rejected by prepare
        prov = next(x for x in s["blocks"] if x.get("id", "").endswith("-provenance"))
        assert prov["rows"][0][2] == s["contract"] and "heldback.jsonl sha256:" in prov["rows"][0][5]
