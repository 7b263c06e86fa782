"""One CLI contract for every command: exit 0 ok, 1 data/contract/cache/IO failure, 2 usage; with --format
json exactly one JSON document on stdout, failures included; never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_jsonl
from passrate_helpers import rollout
from prep_helpers import write_rows

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
    "serve": lambda t: ["serve", "--prepared", t / "nope"],
    "gym-component": lambda t: ["gym-component", t / "c", "--prepared", t / "nope"],
    "curriculum": lambda t: ["curriculum", _missing(t), "--rows", _missing(t), "-o", t / "s.jsonl"],
    "audit": lambda t: ["audit", _missing(t)],
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
    assert doc == {"path": "bad\\udcffname.jsonl", "mean": None, "rows": [None, 1]}  # records.display_name


def test_grade_refuses_text_that_is_not_utf8():
    """stdin bytes that are not UTF-8: exit 1 with the offset; an argument that is not: exit 2 (tests/hostile)."""
    res = _run(["grade", "--option", "A=x", "--expected", "A", "--format", "json"], input=b"\\boxed{A} \xff")
    assert _assert_contract(res, 1)["error"]["reason"] == "input_not_utf8"
    assert "byte 0xff at offset 10" in res.stderr
    res = _run(["grade", "\\boxed{A} \udcff", "--option", "A=x", "--expected", "A", "--format", "json"])
    _assert_contract(res, 2)
    ok = _run(
        ["grade", "--option", "A=x", "--expected", "A", "--format", "json"], input="\ufeff\\boxed{A}".encode()
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


# ---- file names that are not UTF-8 -------------------------------------------------------------------------
# Linux names are bytes; Python gives the bytes it cannot decode as lone surrogates ('\udcff'), which no UTF-8
# output can hold. Every output names such a file in one form, `\udcff` as text (records.display_name), and
# the file is still opened by its real name.

BAD_NAME = os.fsdecode(b"bad\xffname.jsonl")
SHOWN = "bad\\udcffname.jsonl"  # the display form, a backslash and "udcff"
MALFORMED = ["{oops", "[1, 2]"]  # lines 5 and 6


def _requests(tmp_path: Path, name: str, *, malformed: bool = True) -> Path:
    """Four valid verify requests (which also read as dataset rows and as a convert source through
    --map question=q --map choices=c --map answer=a), then two malformed lines."""
    rows: list = []
    for i in range(4):
        r = rollout(i, correct=i != 3, model="m1")
        r.update(q=f"Question {i}?", c=[f"choice {c}" for c in "ABCD"], a=r["expected_answer"])
        rows.append(r)
    return write_rows(tmp_path / name, rows + (MALFORMED if malformed else []))


def _shown(tmp_path: Path) -> str:
    return f"{tmp_path}/{SHOWN}"


def _utf8(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # strict: no lone surrogate was written


def test_validate_names_a_file_that_is_not_utf8_in_its_display_form(tmp_path):
    src = _requests(tmp_path, BAD_NAME)
    doc = _assert_contract(_run(["validate", src, "--format", "json"]), 1)
    bad = [f for f in doc["findings"] if f["rule"] == "malformed_row"]
    assert [(f["file"], f["line"]) for f in bad] == [(_shown(tmp_path), 5), (_shown(tmp_path), 6)]
    assert doc["summary"]["inputs"][0]["path"] == _shown(tmp_path)
    text = _run(["validate", src])
    assert text.exit_code == 1 and f"{_shown(tmp_path)}:5: $: error:" in text.stdout


def test_prepare_stamps_and_rejects_with_the_display_form(tmp_path):
    good = _requests(tmp_path, BAD_NAME, malformed=False)
    doc = _assert_contract(_run(["prepare", good, "-o", tmp_path / "p", "--format", "json", "-j1"]), 0)
    rows = read_jsonl(next((tmp_path / "p").glob("train-*.jsonl")))
    assert len(rows) == 4 and {r["metadata"]["mcqa_prep"]["source"]["file"] for r in rows} == {
        _shown(tmp_path)
    }
    manifest = json.loads(_utf8(tmp_path / "p" / "manifest.json"))
    assert [(i["path"], i["name"]) for i in manifest["inputs"]] == [(_shown(tmp_path), SHOWN)]
    _assert_contract(_run(["verify", tmp_path / "p", "--format", "json"]), 0)
    # the rows are written or rejected for what they are: the two malformed lines, not the name
    (tmp_path / "mixed").mkdir()
    mixed = _requests(tmp_path / "mixed", BAD_NAME)
    failed = _run(["prepare", mixed, "-o", tmp_path / "q", "--format", "json"])
    assert failed.exit_code == 1 and "Traceback" not in failed.output
    assert "internal error" not in failed.output and "prepare.unwritable" not in failed.output
    assert [(f["file"], f["rule"]) for f in _one_json_document(failed.stdout)["rejected"]] == [
        (_shown(tmp_path / "mixed"), "malformed_row")
    ] * 2
    doc = _assert_contract(
        _run(["prepare", mixed, "-o", tmp_path / "r", "--on-invalid", "reject", "--format", "json"]), 0
    )
    assert (doc["counts"]["written"], doc["counts"]["rejected"]) == (4, 2)
    rejects = [json.loads(line) for line in _utf8(tmp_path / "r" / "rejects.jsonl").splitlines()]
    assert [(r["source"]["file"], r["source"]["row"]) for r in rejects] == [
        (_shown(tmp_path / "mixed"), 5),
        (_shown(tmp_path / "mixed"), 6),
    ]
    assert {f["file"] for r in rejects for f in r["findings"]} == {_shown(tmp_path / "mixed")}


@pytest.mark.parametrize("workers", ["1", "2"])
def test_rescore_names_unreadable_lines_with_the_display_form(tmp_path, workers):
    src = _requests(tmp_path, BAD_NAME)
    out = tmp_path / "out.jsonl"
    doc = _assert_contract(_run(["rescore", src, "-o", out, "--format", "json", "-j", workers]), 1)
    assert doc["input"] == _shown(tmp_path) and doc["rows"] == 6
    assert doc["by_status"] == {"ok": 4, "invalid_row": 2}
    assert doc["invalid_rows"]["examples"] == [f"{SHOWN}:5", f"{SHOWN}:6"]
    rows = [json.loads(line) for line in _utf8(out).splitlines()]
    messages = [
        r["metadata"]["grading"]["message"] for r in rows if r["metadata"]["grading"]["status"] != "ok"
    ]
    assert [m.split(": ")[0] for m in messages] == [f"{_shown(tmp_path)}:5", f"{_shown(tmp_path)}:6"]


def test_convert_records_the_display_form(tmp_path):
    src = _requests(tmp_path, BAD_NAME)
    out = tmp_path / "c.jsonl"
    args = ["convert", src, "-o", out, "--map", "question=q", "--map", "choices=c", "--map", "answer=a"]
    doc = _assert_contract(_run([*args, "--format", "json"]), 0)
    assert (doc["counts"]["read"], doc["counts"]["written"], doc["counts"]["rejected"]) == (6, 4, 2)
    assert [s["path"] for s in doc["sources"]] == [_shown(tmp_path)]
    rows = [json.loads(line) for line in _utf8(out).splitlines()]
    assert len(rows) == 4
    assert {(r["metadata"]["source"]["dataset"], r["metadata"]["source"]["file"]) for r in rows} == {
        (SHOWN, SHOWN)
    }
    rejects = [json.loads(line) for line in _utf8(tmp_path / "c.rejects.jsonl").splitlines()]
    assert [(r["source"]["path"], r["source"]["line"]) for r in rejects] == [
        (_shown(tmp_path), 5),
        (_shown(tmp_path), 6),
    ]


def test_report_names_the_file_in_the_page_and_the_document(tmp_path):
    src = _requests(tmp_path, BAD_NAME)
    page = tmp_path / "r.html"
    doc = _assert_contract(_run(["report", src, "-o", page, "--format", "json"]), 0)
    assert [i["path"] for i in doc["inputs"]] == [_shown(tmp_path)]
    assert (doc["inputs"][0]["rows"], doc["inputs"][0]["malformed"]) == (6, 2)
    html = _utf8(page)
    assert f"{_shown(tmp_path)}:5: $: error:" in html  # a finding as the page shows it


def test_passrates_and_summarize_name_the_file_in_the_display_form(tmp_path):
    rescored = tmp_path / "rescored.jsonl"
    ok = _requests(tmp_path, "ok.jsonl", malformed=False)
    _assert_contract(_run(["rescore", ok, "-o", rescored, "--format", "json"]), 0)
    src = write_rows(tmp_path / BAD_NAME, [*rescored.read_text(encoding="utf-8").splitlines(), *MALFORMED])
    table = tmp_path / "t.jsonl"
    doc = _assert_contract(
        _run(["passrates", src, "-o", table, "--on-invalid", "reject", "--format", "json"]), 0
    )
    header = json.loads(_utf8(table).splitlines()[0])
    assert [i["name"] for i in header["inputs"]] == [SHOWN]
    assert (doc["counts"]["used"], doc["invalid"]["count"]) == (4, 2)
    assert [e.split(": ")[0] for e in doc["invalid"]["examples"]] == [
        f"{_shown(tmp_path)}:5",
        f"{_shown(tmp_path)}:6",
    ]
    refused = _run(["passrates", src, "-o", tmp_path / "t2.jsonl", "--format", "json"])
    error = _assert_contract(refused, 1)["error"]
    assert error["reason"] == "invalid_rollouts" and f"first: {_shown(tmp_path)}:5: " in error["message"]
    doc = _assert_contract(_run(["summarize", src, "--format", "json"]), 0)
    assert doc["files"] == [_shown(tmp_path)] and doc["scored"] == 4
    assert doc["malformed"]["count"] == 2
    assert [line.split(": ")[0] for line in doc["malformed"]["lines"]] == [
        f"{_shown(tmp_path)}:5",
        f"{_shown(tmp_path)}:6",
    ]


def _drawn(bar, out) -> str:
    bar.refresh()
    return out.getvalue().rsplit("\r", 1)[-1]


def test_the_one_progress_bar_shows_a_total_and_time_left_when_one_is_known():
    """Every command draws its progress with cli/common.bar_factory: a count and a rate without a total; with
    one (given at the start or learnt later) the share done, done/total and the time left; bytes in KiB/MiB."""
    import io

    from mcqa_prep.cli.common import bar_factory

    out = io.StringIO()
    bar = bar_factory(False, file=out)(total=10, desc="rows")
    bar.update(3)
    line = _drawn(bar, out)
    assert line.startswith("rows:  30%") and " 3/10 [" in line and "<" in line  # [elapsed<left, rate]
    out = io.StringIO()
    bar = bar_factory(False, file=out)(desc="rows")
    bar.update(3)
    line = _drawn(bar, out)
    assert line.startswith("rows: 3row [") and "/10" not in line and "<" not in line
    bar.total = 10
    assert " 3/10 [" in _drawn(bar, out)
    out = io.StringIO()
    bar = bar_factory(False, file=out)(total=3 << 20, desc="verify", unit="B")
    bar.update(1 << 20)
    assert "1.00M/3.00M" in _drawn(bar, out)
    assert bar_factory(True)(total=10).disable  # --quiet: nothing is drawn
