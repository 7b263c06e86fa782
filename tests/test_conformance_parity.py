"""Parity with NeMo Gym 0.7.0's mcqa verifier on shared/conformance/nemo_gym_parity_dev.jsonl.

Pass rule (conformance README): where NeMo Gym answered, reward and extracted_answer are equal, except
that a letter outside the row's allowed letters must come back as null (status out_of_range; the reward
still equals NeMo Gym's) when the row has any allowed letters; where it failed (422/500), the row is still graded or given a
typed status, without raising.
"""

from __future__ import annotations

import json

import pytest
from conftest import CONFORMANCE, report

from mcqa_prep.grader import grade_text, response_text
from mcqa_prep.grader.letters import allowed_letters
from mcqa_prep.records import STATUS_OUT_OF_RANGE, STATUSES

PARITY = CONFORMANCE / "nemo_gym_parity_dev.jsonl"


def _load() -> list[dict]:
    with open(PARITY, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


CASES = _load()


def check(case: dict) -> str | None:
    """None when the case passes, else a one-line reason."""
    req = case["request"]
    text = response_text(req.get("response"))
    try:
        got = grade_text(
            text,
            req.get("options"),
            req.get("expected_answer"),
            req.get("grading_mode"),
            req.get("template_metadata"),
            override=case.get("config_grading_mode"),
        )
    except Exception as exc:  # the grader must never raise on data
        return f"raised {type(exc).__name__}: {exc}"
    want = case["want"]
    if want.get("error"):
        if got.status not in STATUSES:
            return f"NeMo Gym error row got an unknown status {got.status!r}"
        return None
    want_letter = want["extracted_answer"]
    letters = allowed_letters(req.get("options"))
    if want_letter is not None and letters and want_letter not in letters:
        # README pass rule: the reward still equals NeMo Gym's; only the letter comes back as null
        if (
            got.extracted_answer is not None
            or got.reward != want["reward"]
            or got.status != STATUS_OUT_OF_RANGE
        ):
            return (
                f"out-of-range {want_letter}: want null/{want['reward']}/out_of_range, got "
                f"{got.extracted_answer}/{got.reward}/{got.status}"
            )
        return None
    if got.reward != want["reward"] or got.extracted_answer != want_letter:
        return (
            f"want reward={want['reward']} extracted={want_letter!r}; got reward={got.reward} "
            f"extracted={got.extracted_answer!r} status={got.status} rule={got.rule}"
        )
    return None


def test_parity_all_rows():
    by_source: dict[str, list[int]] = {}
    failures = []
    for case in CASES:
        reason = check(case)
        stats = by_source.setdefault(case["source"], [0, 0])
        stats[1] += 1
        if reason is None:
            stats[0] += 1
        else:
            failures.append(f"{case['id']}: {reason}")
    passed = sum(s[0] for s in by_source.values())
    print(f"\nparity: {passed}/{len(CASES)} passed")
    report(
        f"nemo_gym_parity_dev (grade_text): {passed}/{len(CASES)} passed; "
        + ", ".join(f"{s} {o}/{t}" for s, (o, t) in sorted(by_source.items()))
    )
    for source, (ok, total) in sorted(by_source.items()):
        print(f"  {source}: {ok}/{total}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_parity_case(case):
    reason = check(case)
    assert reason is None, reason
