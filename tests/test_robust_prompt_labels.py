"""Option labels read from the rendered prompt (grader/robust/prompt_labels.py, docs/design/robust.md "Labels").

`grade_request` has the prompt and gives it to `robust` (grade_text's `prompt`): for a row whose template_metadata
does not say how its options are labelled, the mode reads the scheme from the prompt (numbered, lower-case,
native labels) and grades with it; without a prompt nothing changes. Golden cases: data/golden/robust_prompt_label_cases.jsonl
(prompt, options, the scheme wanted; with a response, the letter graded with and without the prompt).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcqa_prep.grader import grade_text
from mcqa_prep.grader.request import grade_request, prompt_text
from mcqa_prep.grader.robust import with_labels_of
from mcqa_prep.grader.robust.prompt_labels import prompt_option_labels
from mcqa_prep.policy import GradingPolicy

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "robust_prompt_label_cases.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
ROBUST = GradingPolicy(grading_mode_override="robust")


def _request(case: dict, response: str, **extra) -> dict:
    req = {
        "responses_create_params": {"input": [{"role": "user", "content": case["prompt"]}]},
        "options": [{k: v} for k, v in case["options"].items()],
        "expected_answer": "A",
        "response": {
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": response}]}],
        },
        **extra,
    }
    if case.get("template_metadata"):
        req["template_metadata"] = case["template_metadata"]
    return req


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_scheme_read_from_the_prompt(case: dict) -> None:
    assert prompt_option_labels(case["prompt"], list(case["options"].values())) == case["labels"], case[
        "note"
    ]


@pytest.mark.parametrize("case", [c for c in CASES if "response" in c], ids=lambda c: c["id"])
def test_graded_with_and_without_the_prompt(case: dict) -> None:
    result, _ = grade_request(_request(case, case["response"]), ROBUST)
    assert (result.extracted_answer, result.status) == (case["want"], case["status"]), case["note"]
    options = [{k: v} for k, v in case["options"].items()]
    plain = grade_text(case["response"], options, "A", None, case.get("template_metadata"), override="robust")
    assert plain.extracted_answer == case["want_without_prompt"], case["note"]


def test_golden_file_covers_every_scheme() -> None:
    schemes = {c["labels"] if not isinstance(c["labels"], list) else tuple(c["labels"]) for c in CASES}
    assert {"numbers", "lower", None} <= schemes and any(
        isinstance(s, str) and len(s) > 1 and not s.isascii() for s in schemes
    )
    assert any(isinstance(s, tuple) for s in schemes)  # (a label of several characters: the Persian الف)
    assert any(c.get("want") != c.get("want_without_prompt") for c in CASES if "response" in c)


def test_other_modes_never_read_the_prompt() -> None:
    case = next(c for c in CASES if c["id"] == "numbers-dot")
    req = _request(case, "\\boxed{3}", grading_mode="lenient_boxed")
    result, _ = grade_request(req, GradingPolicy())
    plain = grade_text("\\boxed{3}", req["options"], "A", "lenient_boxed", None)
    assert (result.extracted_answer, result.status) == (plain.extracted_answer, plain.status)


def test_the_prompt_labels_give_way_to_what_the_row_says() -> None:
    case = next(c for c in CASES if c["id"] == "numbers-dot")
    letters = dict(case["options"])
    assert with_labels_of(case["prompt"], letters, None) == {"option_labels": "numbers"}
    assert with_labels_of(case["prompt"], letters, {"output_regex": "X"}) == {
        "output_regex": "X",
        "option_labels": "numbers",
    }
    declared = {"option_labels": "lower"}  # (a declared scheme wins: the prompt is not read)
    options = [{k: v} for k, v in case["options"].items()]
    got = grade_text("(c)", options, "C", "robust", declared, prompt=case["prompt"])
    assert got.extracted_answer == "C"
    upper = next(c for c in CASES if c["id"] == "upper-default")
    assert with_labels_of(upper["prompt"], dict(upper["options"]), None) is None  # (A, B, C: nothing to say)
    assert with_labels_of(case["prompt"], {"A": "Paris", "B": None}, None) is None  # (an option without text)


def test_prompt_text_reads_user_items_only() -> None:
    req = {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Answer with A. or 1."},
                {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Q?"}, {"type": "input_text", "text": "1. x"}],
                },
                {"role": "assistant", "content": "<think>"},
            ]
        }
    }
    assert prompt_text(req) == "Q?1. x"
    assert prompt_text({"responses_create_params": {"input": "plain prompt"}}) == "plain prompt"
    assert prompt_text({"responses_create_params": None}) == ""
    assert prompt_option_labels("1. x\n2. y", ["x", None]) is None  # type: ignore[list-item]
