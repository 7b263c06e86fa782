"""Golden cases for the NeMo Gym compatible modes and custom regexes (data/golden/grader_cases.jsonl).

Each line: id, mode (the policy override; null for none), optional row_mode (the row's grading_mode),
text, options, expected_answer, template_metadata, want {extracted_answer, reward, status[, validity]}.
The rules they pin are those of docs/design/grading.md; a behaviour change shows up here first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcqa_prep.grader import grade_text
from mcqa_prep.grader.boxed import last_box, strip_text_wrappers
from mcqa_prep.grader.custom_regex import compile_pattern, extract_custom
from mcqa_prep.records import STATUS_INVALID_REGEX, STATUS_REGEX_TIMEOUT, STATUSES

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "grader_cases.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_golden_ids_unique_and_modes_covered():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    modes = {c["mode"] or c.get("row_mode") for c in CASES}
    assert {
        None,
        "strict_single_letter_boxed",
        "lenient_boxed",
        "lenient_answer_colon",
        "lenient_answer_colon_md",
        "string_equals_mcqa",
    } <= modes | {None}
    assert any(c["template_metadata"] and "output_regex" in c["template_metadata"] for c in CASES)
    assert any(len(c["options"]) == 10 for c in CASES) and any(len(c["options"]) == 4 for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case):
    got = grade_text(
        case["text"],
        case["options"],
        case["expected_answer"],
        case.get("row_mode"),
        case["template_metadata"],
        override=case["mode"],
    )
    want = case["want"]
    assert (got.extracted_answer, got.reward, got.status) == (
        want["extracted_answer"],
        want["reward"],
        want["status"],
    ), f"{case['id']}: rule={got.rule} message={got.message}"
    if "validity" in want:
        assert got.validity == want["validity"]
    assert got.status in STATUSES


# ---- custom regex unit checks that do not fit the golden format


def test_catastrophic_pattern_times_out():
    text = "Answer: " + "a" * 40 + "!"
    ext = extract_custom(text, r"Answer: ((?:a|a)+)+$", {"A": "x"}, timeout=0.05)
    assert ext.status == STATUS_REGEX_TIMEOUT and ext.letter is None


def test_timeout_decides_the_row():
    text = "\\boxed{A} Answer: " + "a" * 40 + "!"
    got = grade_text(
        text, [{"A": "x"}], "A", template_metadata={"output_regex": r"((?:a|a)+)+$"}, regex_timeout=0.05
    )
    assert got.status == STATUS_REGEX_TIMEOUT and got.extracted_answer is None and got.reward == 0.0


def test_compile_pattern_reports():
    compiled, err, groups = compile_pattern(r"Answer:\s*([A-D])")
    assert compiled is not None and err is None and groups == 1
    compiled, err, groups = compile_pattern(r"(a)(b)")
    assert compiled is not None and err is None and groups == 2
    compiled, err, groups = compile_pattern("([")
    assert compiled is None and "does not compile" in err
    compiled, err, groups = compile_pattern(None)
    assert compiled is None and "string" in err
    # accepted by the regex module, rejected by re (what NeMo Gym runs): rejected here too
    compiled, err, _ = compile_pattern(r"(?<=Answer:\s*)[A-D]")
    assert compiled is None and err


def test_compile_cache_is_reused():
    a = compile_pattern(r"Final Choice:\s*([A-J])")[0]
    b = compile_pattern(r"Final Choice:\s*([A-J])")[0]
    assert a is b


def test_two_group_message():
    ext = extract_custom("Answer: B", "(Answer):\\s*([A-D])", {"B": "x"})
    assert ext.status == STATUS_INVALID_REGEX and "2 capture groups" in ext.message


def test_engine_differences_follow_re():
    # \w: re does not count a combining mark as a word character (regex does); NeMo Gym runs re, so the
    # capture stops before the mark and equals option A's text.
    ext = extract_custom("Answer: cafe\u0301 au lait", r"Answer:\s*(\w+)", {"A": "cafe", "B": "tea"})
    assert ext.letter == "A"
    # under re IGNORECASE an ASCII i also matches U+0131 (dotless i); under regex it does not
    ext = extract_custom("Answer: \u0131", r"Answer:\s*(i)", {"I": "x"})
    assert ext.letter == "I"
    # U+001C..U+001F are \s for re only
    ext = extract_custom("Answer:\x1cB", r"Answer:\s(\w)", {"B": "x"})
    assert ext.letter == "B"


# ---- helpers against their reference definitions


@pytest.mark.parametrize(
    "s",
    [
        "\\text{B}",
        "\\text{ \\text{ C } }",
        "\\text{a} and \\text{b}",
        "\\text{}",
        "\\text{",
        "x\\text{B}",
        "\\text{\n B\n}",
    ],
)
def test_strip_text_wrappers_matches_reference(s):
    import re

    pat = re.compile(r"\\text\{\s*(.*?)\s*\}", re.S)
    ref = s
    while (m := pat.fullmatch(ref)) is not None:
        ref = m.group(1)
    assert strip_text_wrappers(s) == ref


@pytest.mark.parametrize(
    "text,want",
    [
        ("\\boxed{B}", "B"),
        ("\\boxed{\\text{E}}", "\\text{E}"),
        ("\\boxed{A} \\boxed{B", None),
        ("no box", None),
        ("\\boxed{{a}{b}}x}", "{a}{b}"),
        ("\\boxed{a{b}", None),
    ],
)
def test_last_box(text, want):
    span = last_box(text)
    assert (text[span[0] : span[1]] if span else None) == want
