"""A user's first hour: the silent and wrong cases a new user met, each one fixed and held here.

Each test names the case as the user saw it. (The curriculum's rows without evidence: tests/test_curriculum.py;
the findings grouped for people: tests/test_validate.py, tests/test_prepare.py; one CLI vocabulary:
tests/test_cli_vocabulary.py; the error reference: tests/test_error_table.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE, read_jsonl
from passrate_helpers import make_setup

ARC = REPO / "data" / "examples" / "arc_sample.jsonl"


def _json(res) -> dict:
    return json.loads(res.stdout)


# ---- a truncated line in a benchmark file -------------------------------------------------------------------


@pytest.fixture
def truncated_bench(tmp_path) -> Path:
    lines = ARC.read_text(encoding="utf-8").splitlines()[:3]
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(lines) + '\n{"id": "x", "question": {"stem": "trunc', encoding="utf-8")
    return path


def test_a_truncated_benchmark_line_fails_the_audit_as_a_broken_data_line_does(cli, truncated_bench):
    res = cli("audit", SAMPLE / "train.jsonl", "--against", truncated_bench, "--format", "json", "-q")
    assert res.exit_code == 1
    err = _json(res)["error"]
    assert err["reason"] == "unreadable_benchmark" and "bench.jsonl:4" in err["message"]
    assert "--on-invalid reject" in err["hint"]
    assert len(res.stderr.strip().splitlines()) == 1
    # asked to go on: the audit goes on, and its text says what it left out
    res = cli("audit", SAMPLE / "train.jsonl", "--against", truncated_bench, "--on-invalid", "reject", "-q")
    assert res.exit_code == 0
    assert f"  {truncated_bench}: 3 question(s) of 4 row(s); not used: malformed_row: 1" in res.stdout


def test_a_truncated_benchmark_line_fails_prepare_decontamination(cli, tmp_path, truncated_bench):
    res = cli(
        "prepare", SAMPLE / "train.jsonl", "-o", tmp_path / "p", "--decontaminate-against", truncated_bench
    )
    assert res.exit_code == 1 and "unreadable" not in res.stdout
    assert "bench.jsonl:4: a benchmark line that cannot be read" in res.stderr
    assert not (tmp_path / "p").exists()


# ---- grade: no options, a gold that is not an option, a pattern that does not compile -----------------------


@pytest.mark.parametrize(
    "args, says",
    [
        (["\\boxed{B}", "--expected", "B"], "give the answer options"),
        (
            ["\\boxed{B}", "--option", "A=x", "--option", "B=y", "--expected", "Z"],
            "'Z' is not one of the options",
        ),
        (
            ["Answer: B", "--option", "A=x", "--option", "B=y", "--regex", "("],
            "--regex: pattern '(' does not compile",
        ),
    ],
)
def test_grade_refuses_what_it_cannot_grade_as_a_usage_error(cli, args, says):
    res = cli("grade", *args)
    assert res.exit_code == 2, res.output
    assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_grade_without_a_gold_letter_says_it_has_no_reward_instead_of_zero(cli):
    res = cli("grade", "\\boxed{B}", "--option", "A=x", "--option", "B=y")
    assert res.exit_code == 0 and "letter: B" in res.stdout and "reward: - (no --expected" in res.stdout
    doc = _json(cli("grade", "\\boxed{B}", "--option", "A=x", "--option", "B=y", "--format", "json"))
    assert doc["reward"] is None and doc["extracted_answer"] == "B"
    assert (
        _json(
            cli("grade", "\\boxed{B}", "--option", "A=x", "--option", "B=y", "-e", " b", "--format", "json")
        )["reward"]
        == 1.0
    )  # the gold as NeMo Gym reads it: stripped, upper-cased


# ---- stdin where a command does not read it ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["prepare", "-", "-o", "out"], ["passrates", "-", "-o", "t.jsonl"], ["audit", "-"], ["summarize", "-"]],
)
def test_dash_is_named_as_stdin_not_as_a_missing_path(cli, tmp_path, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli(*args)
    assert res.exit_code == 2
    assert (
        "'-' is stdin, which this command does not read" in res.stderr and "does not exist" not in res.stderr
    )


# ---- load_prepared: the integrity error is the error -------------------------------------------------------------


def test_load_prepared_integrity_error_is_not_chained_to_an_arrow_error(cli, tmp_path, monkeypatch):
    from mcqa_prep import load_prepared
    from mcqa_prep.errors import IntegrityError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "p"
    assert cli("prepare", SAMPLE / "train.jsonl", "-o", out).exit_code == 0
    shard = next(out.glob("train-*.jsonl"))
    text = shard.read_text(encoding="utf-8")
    rows = [json.loads(x) for x in text.splitlines()]
    rows[0]["template_metadata"] = {"output_regex": ["a"]}  # another shape: Arrow's reader gives up first
    shard.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(IntegrityError) as err:
        load_prepared(out)
    assert err.value.__cause__ is None and err.value.__context__ is None
    assert "the file changed after preparation" in str(err.value)


# ---- the report's per-model section ----------------------------------------------------------------------------


def test_the_reports_per_model_section_counts_that_models_rows(cli, tmp_path):
    ds, table = make_setup(cli, tmp_path)  # m1 has rates for 7 of the 10 questions, m2 for 2
    doc = _json(cli("report", ds, "--pass-rates", table, "--format", "json", "-q"))
    matched = {
        s["summary"]["model"]: s["summary"]["rows_matched"]
        for s in doc["sections"]
        if s["kind"] == "passrates"
    }
    assert matched == {"m1": 7, "m2": 2}


# ---- prepare's messages ---------------------------------------------------------------------------------------------


def test_a_path_is_printed_once_with_its_separator_and_a_setting_not_asked_for_reads_false(cli, tmp_path):
    bad = tmp_path / "rows.jsonl"
    rows = read_jsonl(SAMPLE / "train.jsonl")
    rows[0]["expected_answer"] = "Z"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = f"{tmp_path / 'p'}/"
    res = cli("prepare", bad, "-o", out, "--on-invalid", "reject")
    assert (
        res.exit_code == 0
        and f"see {tmp_path / 'p' / 'rejects.jsonl'})" in res.stdout
        and "//" not in res.stdout
    )
    res = cli("prepare", bad, "-o", out, "--on-invalid", "reject", "--repair-regexes")
    assert res.exit_code == 1 and "settings.repair_regexes: false != true" in res.stderr


# ---- a missing optional package ------------------------------------------------------------------------------------

_BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"uvicorn", "ray"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from mcqa_prep.cli import main
sys.argv = ["mcqa-prep", *sys.argv[1:]]
main()
"""


def _core_only(tmp_path: Path, *args: object) -> subprocess.CompletedProcess:
    """The CLI as the core install runs it: the extras' packages cannot be imported."""
    script = tmp_path / "core_only.py"
    script.write_text(textwrap.dedent(_BLOCK), encoding="utf-8")
    env = {**os.environ, "RAY_ADDRESS": ""}
    return subprocess.run(
        [sys.executable, script, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize(
    "args, extra",
    [
        (["serve", "--port", "0"], "serve"),
        (
            [
                "rescore",
                SAMPLE / "rollouts.jsonl",
                "--rows",
                SAMPLE / "train.jsonl",
                "-o",
                "out",
                "--engine",
                "ray",
            ],
            "ray",
        ),
    ],
)
def test_a_missing_optional_package_is_one_failure_with_one_exit_code_naming_its_extra(tmp_path, args, extra):
    p = _core_only(tmp_path, *args, "--format", "json")
    assert p.returncode == 1, p.stderr
    err = json.loads(p.stdout)["error"]
    assert err["reason"] == "missing_extra" and err["extra"] == extra and err["exit_code"] == 1
    assert err["hint"] == f"install it with pip install 'mcqa-prep[{extra}]'"
    p = _core_only(tmp_path, *args)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert f"pip install 'mcqa-prep[{extra}]'" in p.stderr


def test_the_core_runs_the_main_job_without_the_extras(tmp_path):
    p = _core_only(tmp_path, "prepare", SAMPLE / "train.jsonl", "-o", "p", "-q")
    assert p.returncode == 0, p.stderr
    p = _core_only(tmp_path, "report", SAMPLE / "train.jsonl", "--format", "json", "-q")
    assert p.returncode == 0 and json.loads(p.stdout)["ok"] is True
    p = _core_only(
        tmp_path, "report", SAMPLE / "train.jsonl", "-o", "r.html", "-q"
    )  # the package draws the plots
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("<svg ") >= 5


# ---- streams, help ---------------------------------------------------------------------------------------------------


def test_rescores_report_is_on_stdout_as_every_commands_is(cli, tmp_path):
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "--rows", SAMPLE / "train.jsonl", "--rows",
              SAMPLE / "validation.parquet", "-o", tmp_path / "r.jsonl")  # fmt: skip
    assert res.exit_code == 0 and "mean reward: 0.7500" in res.stdout and res.stderr == ""


@pytest.mark.parametrize("command", ["validate", "verify", "contract"])
def test_help_has_examples(cli, command):
    text = cli(command, "--help").stdout
    examples = text.split("Examples:", 1)[1].splitlines()[1:3]
    assert all(line.strip().startswith(f"mcqa-prep {command}") for line in examples), text


def test_help_examples_are_whole_commands(cli):
    text = cli("report", "--help").stdout
    assert "&&" not in text  # a continuation the help turned into one line
    top = cli("--help").stdout
    assert "prepare Nemotron-RL-knowledge-mcqa -o prepared/ --repair-regexes --on-invalid reject" in top


# ---- example ids --------------------------------------------------------------------------------------------


def test_example_ids_are_listed_once_and_merging_parts_lists_what_adding_rows_does():
    from mcqa_prep.rescore.run import Bucket

    ids = ["u1", "u1", "u2", "u1", "u3", "u4", "u2", "u5"]
    whole = Bucket()
    for i in ids:
        whole.add(i, 3)
    assert whole.count == 8 and whole.examples == ["u1", "u2", "u3"]
    for cut in range(len(ids) + 1):  # the same list however the rows were split between workers
        a, b = Bucket(), Bucket()
        for i in ids[:cut]:
            a.add(i, 3)
        for i in ids[cut:]:
            b.add(i, 3)
        a.merge(b, 3)
        assert (a.count, a.examples) == (whole.count, whole.examples)
