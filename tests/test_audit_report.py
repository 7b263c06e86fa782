"""`report DATA --audit FILE`: the audit document as a section beside the dataset, every plot drawn from numbers
the page's embedded document carries (the same numbers as the audit's own document)."""

from __future__ import annotations

import json
import random
import re

import pytest
from audit_helpers import A, _rollout
from conftest import write_jsonl

from mcqa_prep.report import extract_document, plot_blocks, render_html

VOCAB = A.Vocabulary()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    from click.testing import CliRunner

    from mcqa_prep.cli import main

    tmp = tmp_path_factory.mktemp("audit-report")
    rnd = random.Random(6)
    qs = list(A.questions(50, 200, range(0, 6), VOCAB, n_options=(4, 10)))
    bench = A.write_mmlu(tmp / "mmlu.jsonl", qs[:40])
    rows = [A.row(q, rnd) for q in qs[30:150]]
    train = write_jsonl(tmp / "train.jsonl", rows)
    val = write_jsonl(tmp / "validation.jsonl", [A.row(A.shuffled(q, rnd), rnd) for q in qs[140:160]])
    wrong = next(L for L in "ABCD" if L != rows[-1]["expected_answer"])
    roll = write_jsonl(
        tmp / "rollouts.jsonl", [_rollout(rows[-1], m, wrong) for m in ("m1", "m2") for _ in range(3)]
    )

    def run(*args):
        res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
        return res

    audit = tmp / "audit.json"
    res = run("audit", train, val, "--against", bench, "--rollouts", roll, "-o", audit, "-q")
    assert res.exit_code == 0, res.output
    res = run("report", train, val, "--audit", audit, "-o", tmp / "r.html", "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    return {
        "audit": json.loads(audit.read_text()),
        "json": json.loads(res.stdout),
        "html": (tmp / "r.html").read_text(encoding="utf-8"),
        "run": run,
        "tmp": tmp,
        "train": train,
    }


def _section(doc):
    return next(s for s in doc["sections"] if s["kind"] == "audit")


def test_the_audit_is_a_section_beside_the_dataset(made):
    doc = made["json"]
    assert [s["kind"] for s in doc["sections"]] == ["dataset", "audit"]
    s = _section(doc)
    assert s["summary"] == made["audit"]["summary"]
    assert s["summary"]["contaminated_rows"] == 10 and s["summary"]["cross_split_duplicates"] == 10
    assert s["summary"]["wrong_keys"] == 1
    levels = [a["level"] for a in s["alerts"]]
    assert levels.count("warn") >= 3


def test_the_page_embeds_the_document_and_every_audit_plot_is_drawn(made):
    doc = made["json"]
    doc.pop("ok")
    assert extract_document(made["html"]) == doc
    assert render_html(doc) == made["html"]
    ids = [b["id"] for b in plot_blocks(doc) if b["id"].startswith("audit-1-")]
    assert {
        "audit-1-contamination",
        "audit-1-containment",
        "audit-1-duplicates",
        "audit-1-confidence",
    } <= set(ids)
    for pid in ids:
        assert re.search(f'<figure class="plot" id="{pid}" data-plot="{pid}"><svg', made["html"]), pid


def test_the_plots_numbers_are_the_audits(made):
    a, s = made["audit"], _section(made["json"])
    blocks = {b["id"]: b for b in s["blocks"]}
    hist = blocks["audit-1-containment"]["panels"][0]["series"][0]["values"]
    assert hist == a["contamination"]["containment_histogram"]
    dup = blocks["audit-1-duplicates"]["panels"][0]
    across = next(x for x in dup["series"] if x["name"] == "across splits")["values"]
    assert sum(across) == a["duplicates"]["cross_split"]
    conf = blocks["audit-1-confidence"]["panels"][0]["series"][0]["values"]
    assert conf == a["wrong_keys"]["self_confidence_histogram"]
    table = blocks["audit-1-contaminated"]
    assert len(table["rows"]) == a["contamination"]["rows"]


def test_a_file_that_is_not_an_audit_document_is_refused(made):
    bad = made["tmp"] / "not-audit.json"
    bad.write_text('{"report_version": "report.v1"}')
    res = made["run"]("report", made["train"], "--audit", bad, "--format", "json", "-q")
    assert res.exit_code == 1 and json.loads(res.stdout)["error"]["reason"] == "audit_document"
