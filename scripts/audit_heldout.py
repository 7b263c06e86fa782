"""Measure validate's regex audit and prompt checks on the held-out set of public evaluators' regexes and
prompts (data/heldout/public_regexes.jsonl): each case becomes one row (a question, its options, the
evaluator's instruction if it has one) and goes through `RowValidator`; the findings are scored against the
verdict written into the file before the audit existed.

    .venv/bin/python scripts/audit_heldout.py [--verbose]

Scoring. audit "error": some regex rule reports an error (the regex misgrades ordinary English, or cannot
work at all). audit "clean": no regex rule reports anything. audit "warning": a regex rule warns and none
errs. Prompt cases: `unrendered` expects template_unrendered, `format` "mismatch" expects
prompt_answer_format or prompt_answer_format_regex and "ok" expects neither.

First sight (commit 07865de, before anything was changed for these cases; data/heldout/first_sight.txt):
misgrading regexes flagged as errors 24/24, clean regexes silent 8/10 (the two others failed the older
positive control), warning-only regexes 2/6 (4 raised to errors), prompt checks 9/9.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcqa_prep.records import Row
from mcqa_prep.validate import RowValidator

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout" / "public_regexes.jsonl"
TEXTS = (
    "Argon",
    "Nitrogen",
    "Oxygen",
    "Carbon dioxide",
    "Methane",
    "Ozone",
    "Helium",
    "Neon",
    "Xenon",
    "Radon",
)


def row_of(case: dict) -> dict:
    letters = case["letters"]
    opts = [{L: TEXTS[k]} for k, L in enumerate(letters)]
    lines = "\n".join(f"{L}: {TEXTS[k]}" for k, L in enumerate(letters))
    prompt = f"Which of the following is a noble gas?\n{lines}"
    if case.get("instruction"):
        prompt = f"{prompt}\n\n{case['instruction']}"
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "options": opts,
        "expected_answer": "A",
        "uuid": case["id"],
    }
    if case.get("grading_mode"):
        row["grading_mode"] = case["grading_mode"]
    if case.get("output_regex") is not None:
        row["template_metadata"] = {"template_id": case["id"], "output_regex": case["output_regex"]}
    return row


def main(verbose: bool) -> int:
    cases = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line.strip()]
    v = RowValidator()
    tally: dict[str, list[int]] = {}
    misses = []
    for i, case in enumerate(cases):
        findings = v.check(Row("heldout", i + 1, i, row_of(case), None, "train"))
        rules = {(f.rule, f.severity) for f in findings}
        regex = {(r, s) for r, s in rules if r.startswith("regex_")}
        exp = case["expect"]
        checks = []
        if "audit" in exp:
            want = exp["audit"]
            if want == "error":
                ok = any(s == "error" for _, s in regex)
            elif want == "clean":
                ok = not regex
            else:
                ok = bool(regex) and not any(s == "error" for _, s in regex)
            checks.append((f"audit:{want}", ok))
        if "unrendered" in exp:
            checks.append(("unrendered", (("template_unrendered", "error") in rules) == exp["unrendered"]))
        if "format" in exp:
            got = any(r.startswith("prompt_answer_format") for r, _ in rules)
            checks.append((f"format:{exp['format']}", got == (exp["format"] == "mismatch")))
        for name, ok in checks:
            tally.setdefault(name, [0, 0])[0 if ok else 1] += 1
            if not ok:
                misses.append((case["id"], name, sorted(rules)))
        if verbose:
            print(case["id"], [n for n, ok in checks if ok], sorted(rules))
            for f in findings:
                print("    ", f.rule, f.severity, f.message[:220])
    print("check            right  wrong")
    for name, (right, wrong) in sorted(tally.items()):
        print(f"{name:16} {right:5} {wrong:6}")
    for cid, name, rules in misses:
        print(f"MISS {cid}: expected {name}, got {rules}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--verbose" in sys.argv))
