"""Regression tests for validate's blind spots (each failed before the rule-registry rewrite) and the
library's argument checks. Only the public API: validate_paths, RowValidator, Row."""

from __future__ import annotations

import copy
import json
import math

import pytest
from conftest import REPO, write_jsonl

from mcqa_prep.errors import UsageError
from mcqa_prep.records import Row
from mcqa_prep.validate import RowValidator, validate_paths

CASES = [json.loads(line) for line in (REPO / "data/golden/validate_cases.jsonl").read_text().splitlines()]
BASE = CASES[0]["row"]


def _row(i: int, **changes) -> dict:
    r = copy.deepcopy(BASE) | {"uuid": f"u-{i}"}
    r["responses_create_params"]["input"][0]["content"] = (
        f"({i}) " + r["responses_create_params"]["input"][0]["content"]
    )
    return r | changes


def _rules(report) -> list[tuple[int | None, str]]:
    return [(f.line, f.rule) for f in report.findings]


# -- empty input ------------------------------------------------------------------------------------------


def test_empty_input_is_not_ok(tmp_path, cli):
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    report = validate_paths([empty], max_findings=0)
    assert not report.ok and report.exit_code == 1
    assert [(f.file, f.line, f.row, f.path, f.rule, f.severity) for f in report.findings] == [
        ("<inputs>", None, None, "$", "no_rows", "error")
    ]
    res = cli("validate", empty)
    assert res.exit_code == 1
    assert res.output.splitlines()[-1] == "FAILED: 1 error(s), 0 warning(s)"


def test_blank_lines_only_is_empty_too(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text("\n\n  \n", encoding="utf-8")
    assert [f.rule for f in validate_paths([path]).findings] == ["no_rows"]


# -- argument checks --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.5, math.nan, math.inf, True, "0.5", None])
def test_regex_timeout_must_be_a_positive_number(tmp_path, bad):
    with pytest.raises(UsageError, match="regex timeout"):
        RowValidator(regex_timeout=bad)
    path = write_jsonl(tmp_path / "one.jsonl", [_row(1)])
    with pytest.raises(UsageError, match="regex timeout"):
        validate_paths([path], regex_timeout=bad)


def test_negative_max_findings_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "one.jsonl", [_row(1)])
    with pytest.raises(UsageError, match="max_findings"):
        validate_paths([path], max_findings=-1)
    assert validate_paths([path], max_findings=0).ok  # 0 keeps all


def test_prepare_refuses_a_zero_regex_timeout(tmp_path, cli):
    path = write_jsonl(tmp_path / "one.jsonl", [_row(1)])
    res = cli("prepare", path, "-o", tmp_path / "out", "--regex-timeout", "0")
    assert res.exit_code == 2
    assert "--regex-timeout" in res.output and "0.01" in res.output
    from mcqa_prep.errors import UsageError
    from mcqa_prep.prepare.run import prepare

    with pytest.raises(UsageError, match="regex timeout must be a number of seconds > 0"):
        prepare([path], tmp_path / "lib-out", regex_timeout=0)


# -- addresses ----------------------------------------------------------------------------------------------


def test_finding_row_is_the_zero_based_row_index(tmp_path):
    """Blank lines are not rows: `row` counts rows (Row.index), `line` counts lines."""
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps(_row(1)), "", "{oops", "", json.dumps(_row(2, expected_answer="Z"))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = validate_paths([path], max_findings=0)
    assert [(f.line, f.row, f.rule) for f in report.findings] == [
        (3, 1, "malformed_row"),
        (5, 2, "expected_answer_not_option"),
    ]
    v = RowValidator()
    [f] = v.check(Row("x.jsonl", 40, 7, _row(3, expected_answer="Z")))
    assert (f.line, f.row) == (40, 7)


# -- NaN / Infinity -----------------------------------------------------------------------------------------


def test_nan_and_infinity_are_errors(tmp_path):
    text = json.dumps(_row(1, metadata={"p": 0.5})).replace("0.5", "NaN")
    text2 = json.dumps(_row(2, reward_profiles=[{"pass_rate": 1.5}])).replace("1.5", "Infinity")
    path = tmp_path / "nan.jsonl"
    path.write_text(text + "\n" + text2 + "\n", encoding="utf-8")
    report = validate_paths([path], max_findings=0)
    assert [(f.line, f.path, f.rule, f.severity) for f in report.findings] == [
        (1, "$.metadata.p", "non_finite_number", "error"),
        (2, "$.reward_profiles[0].pass_rate", "non_finite_number", "error"),
    ]
    assert not report.ok


# -- "the same prompt" ----------------------------------------------------------------------------------------


def test_content_parts_without_a_type_are_the_prompt_text(tmp_path):
    """prompt.content_text: every part with a text counts, as rescore and summarize read it."""
    row = _row(1)
    text = row["responses_create_params"]["input"][0]["content"]
    row["responses_create_params"]["input"][0]["content"] = [{"text": text[:20]}, {"text": text[20:]}]
    report = validate_paths([write_jsonl(tmp_path / "parts.jsonl", [row])], max_findings=0)
    assert report.findings == [] and report.ok


def test_duplicates_use_the_prompt_key_of_every_message_shape(tmp_path):
    """Two identical rows whose prompt is not a single user message are still the same row; a string
    content and the same text as parts are the same prompt (prompt.prompt_key, as rescore joins rows)."""
    two = _row(1)
    two["responses_create_params"]["input"].insert(0, {"role": "system", "content": "Be brief."})
    parts = _row(3)
    parts["uuid"] = "u-parts"
    text = parts["responses_create_params"]["input"][0]["content"]
    parts["responses_create_params"]["input"][0]["content"] = [{"type": "input_text", "text": text}]
    path = write_jsonl(tmp_path / "dups.jsonl", [two, copy.deepcopy(two), _row(3), parts])
    report = validate_paths([path], max_findings=0)
    assert _rules(report) == [
        (1, "prompt_messages"),
        (2, "prompt_messages"),
        (2, "duplicate_row"),
        (4, "duplicate_prompt"),
    ]
