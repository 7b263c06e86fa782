"""Output and CLI edges: labels drawn as text, Parquet's empty objects, one line for every failure, file
names that hold control characters, UTF-8 arguments under an ASCII locale, an unusable --regex, and devices
as outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from . import build
from .kit import FAILURE, OK, USAGE, assert_clean, check, run

NAMES = ["a\nb.jsonl", "tab\there.jsonl", "esc\x1b[31m.jsonl", "line\u2028sep.jsonl"]
COMMANDS_ON_A_NAME = ["validate", "prepare", "rescore", "report", "summarize", "passrates", "convert"]
POLICY_COMMANDS = ["contract", "prepare", "rescore", "passrates"]
LOCALE_TRIES = ["grade", "passrates", "convert"]


def _golden_accent_cases() -> list[dict]:
    golden = build.REPO / "data" / "golden" / "grader_cases.jsonl"
    cases = [json.loads(x) for x in golden.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [c for c in cases if "combining_accent" in c["id"]]


ACCENT_CASES = _golden_accent_cases()


COVERS = {
    "report": 2 + 1,
    "prepare": 1 + 1 + 1,
    "grade": 2 + 1 + len(ACCENT_CASES),
    "convert": 1 + 1 + 1,
    "contract": 1,
    "rescore": 1 + 1,
    "validate": 1,
    "summarize": 1,
    "passrates": 1 + 1 + 1,
}


# ------------------------------------------------------------------------------------------------ report


@pytest.mark.parametrize("label", ["$x^$", "costs $5 and $6", "$\\frac{a}{", "_leading"])
def test_report_labels_hold_dollar_signs_and_never_crash(tmp_path, label):
    rows = [json.loads(x) for x in build.rescored(tmp_path).read_text().splitlines()]
    for r in rows:
        r["template_metadata"] = {"template_id": label}
    src = build.write(tmp_path / "in" / "r.jsonl", build.jsonl(rows))
    page = tmp_path / "page.html"
    check(run(["report", src, "-o", page, "-q"]), OK)
    assert label.replace("\\", "\\\\") in page.read_text() or label in unescape(page.read_text())


def test_report_of_a_dataset_with_dollar_template_ids(tmp_path):
    rows = [build.mcqa_row(i) for i in range(6)]
    for i, r in enumerate(rows):
        r["template_metadata"] = {"template_id": "$t$" if i % 2 else "$$"}
    src = build.write(tmp_path / "in" / "train.jsonl", build.jsonl(rows))
    check(run(["report", src, "-o", tmp_path / "page.html", "-q"]), OK)


# ----------------------------------------------------------------------------------------------- parquet


def test_parquet_output_of_empty_objects_is_one_line_and_nothing_written(tmp_path):
    rows = [build.mcqa_row(i) for i in range(5)]
    rows[1]["extra"] = {}
    rows[3]["deep"] = {"list": [{}]}
    src = build.write(tmp_path / "in" / "train.jsonl", build.jsonl(rows))
    out = tmp_path / "out"
    res = run(["prepare", src, "-o", out, "--output-format", "parquet", "--format", "json"])
    doc = check(res, FAILURE)
    assert doc["error"]["reason"] == "parquet_types" and "$.extra" in doc["error"]["message"]
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()
    assert_clean(tmp_path)


# ---------------------------------------------------------------------------------------------- one line


@pytest.mark.parametrize("command", POLICY_COMMANDS)
def test_a_policy_error_is_one_line(tmp_path, command):
    policy = build.write(
        tmp_path / "bad.json", b'{"final_answer_only": "yes", "x": 1, "grading_mode_default": 7}'
    )
    out = tmp_path / "out"
    args = {
        "contract": ["contract"],
        "prepare": ["prepare", build.TRAIN, "-o", out],
        "rescore": ["rescore", build.ROLLOUTS, "-o", out],
        "passrates": ["passrates", build.ROLLOUTS, "--rescore", "-o", out],
    }[command]
    res = run([*args, "--policy", policy])
    check(res, USAGE)
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "invalid grading policy: " in res.stderr and "; " in res.stderr


# ------------------------------------------------------------------------------------------- file names


@pytest.mark.parametrize("command", COMMANDS_ON_A_NAME)
def test_control_characters_in_a_file_name_never_split_a_line(tmp_path, command):
    d = tmp_path / "in"
    bad = build.mcqa_row(0)
    del bad["options"]
    data = {
        "validate": build.jsonl([bad, build.mcqa_row(1)]),
        "prepare": build.jsonl([bad, build.mcqa_row(1)]),
        "rescore": build.ROLLOUTS.read_bytes() + b"{cut\n",
        "report": build.jsonl([bad, build.mcqa_row(1)]),
        "summarize": build.rescored(tmp_path).read_bytes() + b"not json\n",
        "passrates": build.rescored(tmp_path).read_bytes(),
        "convert": build.jsonl(build.arc_rows(3)) + b"{cut\n",
    }[command]
    for i, name in enumerate(NAMES):
        src = build.write(d / name, data)
        out = tmp_path / f"out{i}"
        args = {
            "validate": ["validate", src],
            "prepare": ["prepare", src, "-o", out / "p", "--on-invalid", "reject", "--split", "train"],
            "rescore": ["rescore", src, "-o", out / "r.jsonl"],
            "report": ["report", src, "-o", out / "r.html"],
            "summarize": ["summarize", src],
            "passrates": ["passrates", src, "-o", out / "t.jsonl"],
            "convert": ["convert", src, "-o", out / "c.jsonl"],
        }[command]
        res = run([*args, "--format", "json"])
        check(res, (OK, FAILURE))
        res = run(args)
        check(res, (OK, FAILURE))
        for stream in (res.stdout, res.stderr):
            for ch in "\x1b\u2028":
                assert ch not in stream, (name, stream[-500:])
            for line in stream.splitlines():  # every line that names the file names it whole
                assert not line.startswith(("b.jsonl", "sep.jsonl", "here.jsonl")), (name, stream[-800:])


# ------------------------------------------------------------------------------------------ ASCII locale


def _ascii_locale(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", PYTHONUTF8="0")  # Python's legacy mode: argv decoded as ASCII + surrogates
    return subprocess.run(
        [sys.executable, "-m", "mcqa_prep", *args], capture_output=True, cwd=cwd, env=env, timeout=120
    )


@pytest.mark.parametrize("command", LOCALE_TRIES)
def test_valid_utf8_arguments_under_an_ascii_locale(tmp_path, command):
    if command == "grade":
        p = _ascii_locale(
            "grade",
            "Réponse \\boxed{B}",
            "--option",
            "A=été",
            "--option",
            "B=hiver",
            "-e",
            "B",
            "--format",
            "json",
            cwd=tmp_path,
        )
        assert p.returncode == OK, p.stderr
        doc = json.loads(p.stdout.decode("utf-8"))
        assert doc["reward"] == 1.0
    elif command == "passrates":
        rows = [json.loads(x) for x in build.rescored(tmp_path).read_text().splitlines()]
        for r in rows:  # rollouts that name no model: --model names it
            r["responses_create_params"].pop("model", None)
            r["response"].pop("model", None)
        build.write(tmp_path / "r.jsonl", build.jsonl(rows))
        p = _ascii_locale("passrates", "r.jsonl", "-o", "t.jsonl", "--model", "modèle", cwd=tmp_path)
        assert p.returncode == OK, p.stderr
        entries = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
        assert {e["model"] for e in entries} == {"modèle"}
    else:
        arc = build.write(tmp_path / "données.jsonl", build.jsonl(build.arc_rows(3)))
        p = _ascii_locale("convert", arc.name, "-o", "sortie.jsonl", "--dataset", "jeu-é", cwd=tmp_path)
        assert p.returncode == OK, p.stderr
        row = json.loads((tmp_path / "sortie.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert "jeu-é" in json.dumps(row, ensure_ascii=False)
    assert b"Traceback" not in p.stderr and b"internal error" not in p.stderr


# ------------------------------------------------------------------------------------------------ grade


def test_an_unusable_regex_is_a_usage_error_in_one_line_and_keeps_its_status_in_json():
    res = run(["grade", "Answer: B", "--option", "A=x", "--option", "B=y", "--regex", "("])
    check(res, USAGE)
    assert len(res.stderr.strip().splitlines()) == 1 and "--regex" in res.stderr
    doc = check(
        run(["grade", "Answer: B", "--option", "A=x", "--option", "B=y", "--regex", "(", "--format", "json"]),
        USAGE,
    )
    assert doc["status"] == "invalid_regex" and doc["error"]["reason"] == "invalid_regex"
    doc = check(
        run(
            [
                "grade",
                "Answer: B",
                "--option",
                "A=x",
                "--option",
                "B=y",
                "--regex",
                "(a)(b)",
                "--format",
                "json",
            ]
        ),
        USAGE,
    )
    assert doc["status"] == "invalid_regex"


@pytest.mark.parametrize("case", ACCENT_CASES, ids=[c["id"] for c in ACCENT_CASES])
def test_a_combining_accent_after_the_letter_is_read_as_nemo_gym_reads_it(case):
    """`\\boxed{B}` with U+0301 after the B was noticed graded B: NeMo Gym 0.7.0's own code reads it so too (its
    parity cases in data/golden, checked against its code when written); each mode through the command."""
    opts = [f"--option={k}={v}" for o in case["options"] for k, v in o.items()]
    doc = check(
        run(
            [
                "grade",
                case["text"],
                *opts,
                "-m",
                case["mode"],
                "--expected",
                case["expected_answer"],
                "--format",
                "json",
            ]
        ),
        OK,
    )
    assert (doc["extracted_answer"], doc["reward"], doc["status"]) == (
        case["want"]["extracted_answer"],
        case["want"]["reward"],
        case["want"]["status"],
    )


# ----------------------------------------------------------------------------------------------- devices


def test_convert_writes_to_a_device(tmp_path):
    arc = build.write(tmp_path / "arc.jsonl", build.jsonl(build.arc_rows(4)) + b"{cut\n")
    doc = check(run(["convert", arc, "-o", os.devnull, "--format", "json"]), OK)
    assert (doc["counts"]["written"], doc["counts"]["rejected"], doc["rejects"]) == (4, 1, os.devnull)
    assert not list(Path(os.devnull).parent.glob("null.rejects*"))
    assert_clean(tmp_path)
