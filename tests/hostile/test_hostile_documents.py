"""Documents a command reads, checked against their schema before any of it is used: an audit document
(`report --audit`), a pass-rate table (`curriculum`, `report --pass-rates`, `prepare --pass-rates`), a
grading policy (`--policy`). A value of the wrong type, a NaN or an Infinity anywhere is one line naming the
file and the field, never an internal error (`report --audit` on an audit document with NaN in `summary`, or
a string where `contamination` belongs, was `internal error: ValueError/TypeError`).

The audit document is swept: every value of a full document (contamination, duplicates, wrong keys, bias)
replaced in turn by each hostile value, and each result either refused by the reader, naming the field, or
drawn without an exception.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcqa_prep.errors import InputError

from . import build
from .kit import FAILURE, OK, USAGE, check, run

BENCH = build.REPO / "data" / "benchmark" / "sample.jsonl"
HOSTILE = [math.nan, math.inf, "x", -1, None, [], {}]
ISSUE_TRIES = {
    "nan_in_summary": (("summary", "rows"), math.nan, "$.summary.rows"),
    "string_as_contamination": (("contamination",), "contamination", "$.contamination"),
    "infinity_in_findings": (
        ("contamination", "findings", 0, "matches", 0, "containment"),
        math.inf,
        "$.contamination",
    ),
    "string_as_histogram": (("wrong_keys", "self_confidence_histogram"), "ten", "$.wrong_keys"),
    "bad_option_count_key": (("position_bias", "gold_by_options"), {"four": {}}, "$.position_bias"),
}
TABLE_TRIES = ["curriculum", "report", "prepare"]
POLICY_TRIES = ["contract", "prepare", "rescore", "audit"]
EMPTIES = {
    "no_drift_rows": (("option_orders", "drift", "drift", "by_position"), []),
    "no_position_rates": (("option_orders", "models", "base", "by_position"), {}),
    "no_findings": (("contamination", "findings"), []),
    "no_matches_by_method": (("contamination", "by_benchmark_and_method"), []),
    "no_histogram": (("contamination", "containment_histogram"), []),
    "no_kinds": (("duplicates", "by_kind"), {}),
    "no_gold_by_options": (("position_bias", "gold_by_options"), {}),
    "no_answer_bias": (("position_bias", "answer_bias"), []),
    "no_benchmarks": (("benchmarks",), []),
}
COVERS = {
    "report": len(ISSUE_TRIES) + len(EMPTIES) + 2,
    "curriculum": 1,
    "prepare": 2,
    "contract": 1,
    "rescore": 1,
    "audit": 2,
}


def _tables_across_orders(tmp: Path) -> tuple[Path, Path]:
    """Pass-rate tables of two simulated checkpoints on the sample prepared in 4 option orders (README)."""
    permuted = tmp / "permuted"
    check(run(["prepare", build.TRAIN, build.VALIDATION, "-o", permuted, "--permute", "4", "-q"]), OK)
    script = str(build.REPO / "scripts" / "simulate_rollouts.py")
    tables = []
    for model, prior, seed in (("base", "0.8", "0"), ("tuned", "0.3", "1")):
        rollouts = tmp / f"{model}.rollouts.jsonl"
        argv = [
            sys.executable,
            script,
            str(permuted),
            "-o",
            str(rollouts),
            "--model",
            model,
            "--samples",
            "4",
        ]
        subprocess.run([*argv, "--prior", prior, "--seed", seed], check=True, capture_output=True)
        tables.append(tmp / f"{model}.passrates.jsonl")
        check(run(["passrates", rollouts, "--rescore", "-o", tables[-1], "-q"]), OK)
    return tables[0], tables[1]


@pytest.fixture(scope="module")
def audit_doc(tmp_path_factory) -> dict[str, Any]:
    """A full audit document: contamination, duplicates, wrong keys (every rollout counts), answer bias, and
    the option orders (a table of rows in 4 orders, and the letter-prior drift between two)."""
    tmp = tmp_path_factory.mktemp("audit")
    rescored = build.rescored(tmp)
    base, tuned = _tables_across_orders(tmp)
    out = tmp / "audit.json"
    keys = ["--rollouts", rescored, "--min-rollouts", "1"]
    orders = ["--pass-rates", base, "--drift", base, tuned]
    argv = ["audit", build.TRAIN, build.VALIDATION, "--against", BENCH, *keys, *orders, "-o", out, "-q"]
    check(run(argv), OK)
    doc = json.loads(out.read_text())
    assert doc["contamination"]["findings"] and doc["wrong_keys"]["wrong_keys"], "the sweep needs every part"
    assert doc["option_orders"]["models"]["base"]["questions_with_variants"] and doc["option_orders"]["drift"]
    return doc


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a document (lists: their first two items)."""
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2]):
            out.extend(_paths(v, (*path, i)))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return doc


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


def test_every_value_of_an_audit_document_is_checked_before_use(audit_doc, tmp_path):
    from mcqa_prep.report import audit_view

    places = _paths(audit_doc)
    assert len(places) > 150
    refused = drawn = 0
    f = tmp_path / "a.json"
    for place in places:
        for value in HOSTILE:
            _write(f, _set(audit_doc, place, value))
            try:
                doc = audit_view.load(f)
            except InputError as exc:
                named = "$" in str(exc) or "audit_version" in str(exc)  # the field, or the version it lacks
                assert str(f) in str(exc) and named and "\n" not in str(exc), (place, value, exc)
                refused += 1
                continue
            audit_view.section("audit-1", doc, str(f), [])  # accepted: must draw without an exception
            drawn += 1
    assert refused and drawn  # (some replacements are valid: a null count, an empty list, a share of 0)


@pytest.mark.parametrize("name", sorted(ISSUE_TRIES))
def test_report_refuses_a_broken_audit_document_in_one_line(audit_doc, tmp_path, name):
    place, value, field = ISSUE_TRIES[name]
    bad = _write(tmp_path / "audit.json", _set(audit_doc, place, value))
    page = tmp_path / "page.html"
    res = run(["report", build.TRAIN, "--audit", bad, "-o", page, "--format", "json"])
    doc = check(res, FAILURE)
    assert doc["error"]["reason"] == "audit_document"
    assert str(bad) in doc["error"]["message"] and field in doc["error"]["message"]
    assert len(res.stderr.strip().splitlines()) == 1 and not page.exists()


@pytest.mark.parametrize("name", sorted(EMPTIES))
def test_an_audit_document_with_empty_parts_is_drawn(audit_doc, tmp_path, name):
    """What the schema accepts is drawn, through the page's plots too (a drift of no option count divided by
    zero while drawing: found here)."""
    place, value = EMPTIES[name]
    doc = _write(tmp_path / "audit.json", _set(audit_doc, place, value))
    check(run(["report", build.TRAIN, "--audit", doc, "-o", tmp_path / "p.html", "-q"]), OK)


def test_an_audit_document_written_by_audit_follows_its_schema(audit_doc):
    from mcqa_prep.io.readers import document_problem

    assert document_problem(audit_doc, "audit") is None
    assert document_problem({**audit_doc, "contamination": None, "wrong_keys": None}, "audit") is None


def test_report_reads_a_valid_audit_document(audit_doc, tmp_path):
    good = _write(tmp_path / "audit.json", audit_doc)
    check(run(["report", build.TRAIN, "--audit", good, "-o", tmp_path / "p.html", "-q"]), OK)


# ---------------------------------------------------------------------------------------------- tables


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("table")
    out = tmp / "t.jsonl"
    check(run(["passrates", build.rescored(tmp), "-o", out, "-q"]), OK)
    return out


@pytest.mark.parametrize("command", TABLE_TRIES)
@pytest.mark.parametrize("where", ["header", "entry"])
def test_a_table_with_a_non_finite_or_mistyped_value_is_one_line(table, tmp_path, command, where):
    lines = table.read_text().splitlines()
    if where == "header":
        lines[0] = lines[0].replace('"credible_level":0.9', '"credible_level":NaN', 1)
    else:
        d = json.loads(lines[1])
        d["posterior_mean"] = "high"
        lines[1] = json.dumps(d)
    bad = build.write(tmp_path / "bad.jsonl", ("\n".join(lines) + "\n").encode())
    assert bad.read_bytes() != table.read_bytes()
    out = tmp_path / "out"
    argv = {
        "curriculum": ["curriculum", bad, "--rows", build.TRAIN, "-o", out / "s.jsonl"],
        "report": ["report", build.TRAIN, "--pass-rates", bad, "-o", out / "r.html"],
        "prepare": ["prepare", build.TRAIN, "-o", out, "--pass-rates", bad, "--drop-solved"],
    }[command]
    res = run([*argv, "--format", "json"])
    doc = check(res, FAILURE)
    assert str(bad) in doc["error"]["message"] and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()


# ---------------------------------------------------------------------------------------------- policies


@pytest.mark.parametrize("command", POLICY_TRIES)
def test_a_policy_with_a_non_finite_value_is_one_line_naming_the_field(tmp_path, command):
    policy = build.write(tmp_path / "p.json", b'{"final_answer_only": NaN, "component": {"scope": Infinity}}')
    argv = {
        "contract": ["contract"],
        "prepare": ["prepare", build.TRAIN, "-o", tmp_path / "out"],
        "rescore": ["rescore", build.ROLLOUTS, "--rows", build.TRAIN, "-o", tmp_path / "r.jsonl"],
        "audit": ["audit", build.TRAIN],
    }[command]
    res = run([*argv, "--policy", policy, "--format", "json"])
    doc = check(res, USAGE)  # a policy is an option's value: a usage error, as every invalid policy
    assert str(policy) in doc["error"]["message"] and "$.final_answer_only" in doc["error"]["message"]
    assert len(res.stderr.strip().splitlines()) == 1
