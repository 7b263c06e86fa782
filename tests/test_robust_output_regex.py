"""Custom output_regex next to the modes (grading.md, "Custom regex").

1. NeMo Gym 0.7.0 parity cases that apply to every mode (data/golden/output_regex_parity_cases.jsonl):
   a row with no usable options trusts the captured letter; an output_regex given as an object is read
   as its keys, in order. (validate does not yet warn about the object shape: that is validate's job.)
2. In `robust` only: a capture that is one letter glued to a word (the "A" of "Answer") is not a
   commitment, so the mode reads the text instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcqa_prep.grader import grade_text
from mcqa_prep.records import STATUSES

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "output_regex_parity_cases.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
OPTIONS = [{"A": "Oslo"}, {"B": "Rome"}, {"C": "Vienna"}, {"D": "Lisbon"}]


def test_cases_cover_both_shapes():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert any(c["options"] is None for c in CASES)
    assert any(isinstance(c["template_metadata"]["output_regex"], dict) for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_parity_case(case):
    got = grade_text(
        case["text"],
        case["options"],
        case["expected_answer"],
        None,
        case["template_metadata"],
        override=case["mode"],
    )
    want = case["want"]
    assert (got.extracted_answer, got.reward, got.status) == (
        want["extracted_answer"],
        want["reward"],
        want["status"],
    ), f"{case['id']}: rule={got.rule} message={got.message}"
    assert got.status in STATUSES


WORD_INITIAL = {"output_regex": r"Answer:\s*([A-Za-z])"}


def test_robust_ignores_a_capture_inside_a_word():
    got = grade_text("Answer: Answer: C", OPTIONS, "C", None, WORD_INITIAL, override="robust")
    assert (got.extracted_answer, got.reward, got.mode) == ("C", 1.0, "robust")
    assert got.candidates[0].rule == "output_regex" and got.candidates[0].verdict == "a letter inside a word"


def test_other_modes_keep_nemo_gym_behaviour():
    got = grade_text("Answer: Answer: C", OPTIONS, "C", None, WORD_INITIAL)
    assert (got.extracted_answer, got.reward, got.mode) == ("A", 0.0, "output_regex")


def test_robust_ignores_an_out_of_range_capture_inside_a_word():
    got = grade_text("Answer: Xylophone", OPTIONS, "B", None, WORD_INITIAL, override="robust")
    assert got.extracted_answer is None and got.status == "no_answer" and got.mode == "robust"


def test_robust_keeps_a_standalone_capture():
    got = grade_text("Answer: B\n\nAnswer: D", OPTIONS, "D", None, WORD_INITIAL, override="robust")
    assert (got.extracted_answer, got.mode, got.rule) == ("D", "output_regex", "output_regex")
