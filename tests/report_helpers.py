"""Inputs for the report tests: the embedded sample (prepared and rescored), and a generated held-back set
with a known gold-letter bias, a broken template and two grading contracts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import SAMPLE
from response_helpers import fake_response

from mcqa_prep.cli import main

BIASED_LETTER = "A"
BROKEN_TEMPLATE = "broken_digit_tpl"
BROKEN_PATTERN = r"Final answer:\s*(\d)"  # captures a digit: a compliant answer never yields the gold letter
GOOD_TEMPLATE = "answer_colon_tpl"
GOOD_PATTERN = r"Answer:\s*((?-i:[A-D]))(?![^\n]*\w)"  # audit-clean: a case-sensitive letter ending its line
N_ROWS = 400
N_BROKEN = 40


# Reports made once per test session (their inputs and pages), shared by the report test modules.
_MADE: dict[str, dict[str, Any]] = {}


def run_cli(*args) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def make_report(tmp: Path, inputs: list[Path], name: str = "report.html") -> dict[str, Any]:
    """`report INPUTS -o PAGE --format json`: the page, its text and the JSON document printed."""
    page = tmp / name
    out = run_cli("report", *inputs, "-o", page, "--format", "json")
    return {"inputs": inputs, "page": page, "html": page.read_text(encoding="utf-8"), "json": out}


def sample_report(tmp_path_factory) -> dict[str, Any]:
    """The report of the embedded sample (prepared directory + rescored rollouts), made once."""
    if "sample" not in _MADE:
        tmp = tmp_path_factory.mktemp("report-sample")
        _MADE["sample"] = make_report(tmp, sample_inputs(tmp))
    return _MADE["sample"]


def heldback_report(tmp_path_factory) -> dict[str, Any]:
    """The report of the held-back set (dataset + two rescorings under two contracts), made once."""
    if "heldback" not in _MADE:
        tmp = tmp_path_factory.mktemp("report-heldback")
        p = heldback_inputs(tmp)
        _MADE["heldback"] = {**make_report(tmp, [p["data"], p["rescored_a"], p["rescored_b"]]), **p}
    return _MADE["heldback"]


def sample_inputs(tmp: Path) -> list[Path]:
    """The embedded sample as a user reports it: the prepared directory and the rescored rollouts."""
    prepared = tmp / "prepared"
    rescored = tmp / "rescored.jsonl"
    run_cli("prepare", SAMPLE / "train.jsonl", SAMPLE / "validation.parquet", "-o", prepared)
    run_cli(
        "rescore", SAMPLE / "rollouts.jsonl", "--rows", prepared, "-o", rescored, "--compare-mode", "robust"
    )
    return [prepared, rescored]


def heldback_row(i: int, rng: random.Random) -> dict:
    letters = "ABCD"
    texts = [f"choice {L} for item {i}" for L in letters]
    question = f"Item {i}: which choice is right?\n" + "\n".join(
        f"{L}: {t}" for L, t in zip(letters, texts, strict=True)
    )
    gold = BIASED_LETTER if rng.random() < 0.7 else rng.choice(letters)
    row = {
        "options": [{L: t} for L, t in zip(letters, texts, strict=True)],
        "expected_answer": gold,
        "uuid": f"hb-{i:04d}",
        "reward_profiles": [
            {"model_hf_path": "org/model-a", "num_generations": 8, "pass_rate": rng.choice([0, 0.25, 0.5, 1])}
        ],
    }
    if i < N_BROKEN:
        row["template_metadata"] = {"template_id": BROKEN_TEMPLATE, "output_regex": BROKEN_PATTERN}
        prompt = question + "\nEnd with 'Final answer: <letter>'."
    elif i % 3 == 0:
        row["template_metadata"] = {"template_id": GOOD_TEMPLATE, "output_regex": GOOD_PATTERN}
        prompt = question + "\nEnd with 'Answer: <letter>'."
    else:
        row["grading_mode"] = "strict_single_letter_boxed"
        prompt = "Put the letter in \\boxed{}. " + question
    row["responses_create_params"] = {"input": [{"role": "user", "content": prompt}]}
    return row


def _response(row: dict, rng: random.Random) -> dict:
    gold = row["expected_answer"]
    letter = gold if rng.random() < 0.6 else "ABCD"[("ABCD".index(gold) + 1) % 4]
    tm = row.get("template_metadata") or {}
    if tm.get("template_id") == BROKEN_TEMPLATE:
        text = f"Thinking... Final answer: {letter}"
    elif tm.get("template_id") == GOOD_TEMPLATE:
        text = f"Reasoning.\nAnswer: {letter}"
    else:
        text = f"Reasoning.\n\\boxed{{{letter}}}"
    return fake_response(text, id=f"resp-{row['uuid']}")


def heldback_inputs(tmp: Path) -> dict[str, Path]:
    """The held-back dataset and its verify requests rescored under two policies (two contracts)."""
    rng = random.Random(20240601)
    rows = [heldback_row(i, rng) for i in range(N_ROWS)]
    data = tmp / "heldback.jsonl"
    requests = tmp / "requests.jsonl"
    with open(data, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    with open(requests, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({**r, "response": _response(r, rng), "reward": 1.0}) + "\n")
    r1, r2 = tmp / "rescored-default.jsonl", tmp / "rescored-lenient.jsonl"
    run_cli("rescore", requests, "-o", r1, "--compare-mode", "robust")
    run_cli("rescore", requests, "-o", r2, "--grading-mode-override", "lenient_answer_colon")
    return {"data": data, "rescored_a": r1, "rescored_b": r2}
