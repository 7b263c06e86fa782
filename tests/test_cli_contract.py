"""One CLI contract for every command: exit 0 ok, 1 data/contract/cache/IO failure, 2 usage; with --format
json exactly one JSON document on stdout, failures included; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcqa_prep.cli import COMMANDS, main

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _run(args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True, **kw)


def _one_json_document(out: str) -> dict:
    doc = json.loads(out)  # raises if there are two documents or none
    assert isinstance(doc, dict) and "ok" in doc
    return doc


def _assert_contract(res, code: int) -> dict:
    assert res.exit_code == code, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    doc = _one_json_document(res.stdout)
    assert doc["ok"] is (code == 0)
    if code:
        assert "error" in doc or "summary" in doc or "status" in doc
    return doc


def _missing(tmp_path: Path) -> Path:
    return tmp_path / "does-not-exist.jsonl"


# command -> arguments that name a missing input (a usage error)
MISSING_INPUT = {
    "validate": lambda t: ["validate", _missing(t)],
    "prepare": lambda t: ["prepare", _missing(t), "-o", t / "out"],
    "verify": lambda t: ["verify", t / "nope"],
    "rescore": lambda t: ["rescore", _missing(t), "-o", t / "out.jsonl"],
    "summarize": lambda t: ["summarize", _missing(t)],
    "contract": lambda t: ["contract", "--policy", _missing(t)],
    "grade": lambda t: ["grade", "x", "--mode", "no-such-mode"],
    "pull": lambda t: ["pull", "not a repo id", "--to", t / "d", "--offline"],
    "passrates": lambda t: ["passrates", _missing(t), "-o", t / "table.jsonl"],
    "convert": lambda t: ["convert", _missing(t), "-o", t / "out.jsonl"],
    "report": lambda t: ["report", _missing(t), "-o", t / "r.html"],
}


def test_every_command_is_in_the_contract_table():
    """convert and passrates were written beside the contract work: they keep it too (a new command must be
    added here, and to tests/hostile, before this passes)."""
    assert set(MISSING_INPUT) >= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(MISSING_INPUT))
def test_usage_errors_exit_2_with_one_json_document(tmp_path, command):
    res = _run([*MISSING_INPUT[command](tmp_path), "--format", "json"])
    doc = _assert_contract(res, 2)
    assert doc["error"]["exit_code"] == 2


def test_data_failures_exit_1_with_one_json_document(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a row"}\n')
    for args in (
        ["validate", bad],
        ["prepare", bad, "-o", tmp_path / "p"],
        ["summarize", bad],
        ["rescore", bad, "-o", tmp_path / "r.jsonl"],
        ["verify", tmp_path],
    ):
        _assert_contract(_run([*args, "--format", "json"]), 1)


def test_empty_inputs_are_not_a_success(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    for args in (
        ["prepare", empty, "-o", tmp_path / "p"],
        ["rescore", empty, "-o", tmp_path / "r.jsonl"],
        ["summarize", empty],
    ):
        res = _run([*args, "--format", "json"])
        doc = _assert_contract(res, 1)
        assert doc["error"]["reason"] == "no_rows", args
    assert not (tmp_path / "p").exists() and not (tmp_path / "r.jsonl").exists()


def test_output_equal_to_input_is_a_usage_error(tmp_path):
    src = tmp_path / "r.jsonl"
    src.write_text((SAMPLE / "rollouts.jsonl").read_text())
    before = src.read_bytes()
    res = _run(["rescore", src, "-o", src, "--format", "json"])
    assert _assert_contract(res, 2)["error"]["reason"] == "output_is_input"
    assert src.read_bytes() == before


def test_output_inside_an_input_directory_is_a_usage_error(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "train.jsonl").write_text((SAMPLE / "train.jsonl").read_text())
    res = _run(["prepare", d, "-o", d / "prepared", "--format", "json"])
    assert _assert_contract(res, 2)["error"]["reason"] == "output_inside_input"


def test_read_only_output_directory_is_one_line_exit_1(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions; the fault suite uses a read-only mount instead")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res = _run(
            ["rescore", SAMPLE / "rollouts.jsonl", "-o", ro / "out.jsonl", "--rows", SAMPLE / "train.jsonl"]
        )
        assert res.exit_code == 1 and "Traceback" not in res.output
        assert str(ro / "out.jsonl") in res.output and len(res.stderr.strip().splitlines()) == 1
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("value", ["0", "-1"])
def test_bad_bounds_are_refused_alike(tmp_path, value):
    for args in (
        ["validate", SAMPLE / "train.jsonl", "--regex-timeout", value],
        ["prepare", SAMPLE / "train.jsonl", "-o", tmp_path / "p", "--regex-timeout", value],
        ["rescore", SAMPLE / "rollouts.jsonl", "-o", tmp_path / "r.jsonl", "--examples", "-1"],
        ["rescore", SAMPLE / "rollouts.jsonl", "-o", tmp_path / "r.jsonl", "--workers", value],
    ):
        res = _run(args)
        assert res.exit_code == 2, (args, res.output)


def test_the_json_document_is_strict_json_and_valid_utf8():
    """A NaN that reached a report is null; a file name that is not UTF-8 is escaped (tests/hostile)."""
    from mcqa_prep.cli.common import dumps_document

    text = dumps_document({"path": "bad\udcffname.jsonl", "mean": float("nan"), "rows": [float("inf"), 1]})
    text.encode("utf-8")  # no lone surrogate left
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(c))
    assert doc == {"path": "bad\udcffname.jsonl", "mean": None, "rows": [None, 1]}


def test_grade_refuses_text_that_is_not_utf8():
    """stdin bytes that are not UTF-8: exit 1 with the offset; an argument that is not: exit 2 (tests/hostile)."""
    res = _run(["grade", "-o", "A=x", "--expected", "A", "--format", "json"], input=b"\\boxed{A} \xff")
    assert _assert_contract(res, 1)["error"]["reason"] == "input_not_utf8"
    assert "byte 0xff at offset 10" in res.stderr
    res = _run(["grade", "\\boxed{A} \udcff", "-o", "A=x", "--expected", "A", "--format", "json"])
    _assert_contract(res, 2)
    ok = _run(
        ["grade", "-o", "A=x", "--expected", "A", "--format", "json"], input="\ufeff\\boxed{A}".encode()
    )
    assert _assert_contract(ok, 0)["reward"] == 1.0


@pytest.mark.parametrize(
    "args",
    [
        ["rescore", "{rollouts}", "--rows", "{train}", "-o", "{train}"],
        ["rescore", "{rollouts}", "--rows", "{dir}", "-o", "{dir}/r.jsonl"],
        ["passrates", "{rollouts}", "--rescore", "--rows", "{train}", "-o", "{train}"],
        ["convert", "{dir}", "-o", "{dir}/out.jsonl"],
    ],
)
def test_an_output_may_name_no_input_of_any_kind(tmp_path, args):
    """--rows files are inputs too: writing over one destroyed the dataset (found by tests/hostile)."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "train.jsonl").write_bytes((SAMPLE / "train.jsonl").read_bytes())
    places = {"rollouts": SAMPLE / "rollouts.jsonl", "train": d / "train.jsonl", "dir": d}
    before = (d / "train.jsonl").read_bytes()
    res = _run([a.format(**places) for a in args] + ["--format", "json"])
    assert _assert_contract(res, 2)["error"]["reason"] in ("output_is_input", "output_inside_input")
    assert (d / "train.jsonl").read_bytes() == before and sorted(p.name for p in d.iterdir()) == [
        "train.jsonl"
    ]
