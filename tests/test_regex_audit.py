"""The adversarial regex audit (validate/regex_audit.py) and the prompt's answer format (validate/answer_format.py).

Every counterexample the audit reports is checked here against an independent reading of NeMo Gym 0.7.0's
custom-regex semantics (docs/design/grading.md, "Custom regex": Python re, IGNORECASE, findall, the last match,
group 1 or the whole match, strip + upper-case): the audit never reports a letter NeMo Gym would not give.
"""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from conftest import FIXTURES

from mcqa_prep.convert.checks import TemplateChecker
from mcqa_prep.convert.templates import BUILTIN
from mcqa_prep.records import Row
from mcqa_prep.validate import RowValidator
from mcqa_prep.validate import regex_audit as audit_mod
from mcqa_prep.validate import regex_audit_rules as audit_rules
from mcqa_prep.validate.answer_format import examples, unrendered
from mcqa_prep.validate.regex_audit import audit, candidate_fixes, group_span

BOXED = "strict_single_letter_boxed"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def nemo_gym_letter(text: str, patterns: list[str]) -> str | None:
    """NeMo Gym 0.7.0's reading of a custom output_regex, written from docs/design/grading.md alone."""
    for p in patterns:
        try:
            c = re.compile(p, re.IGNORECASE)
        except re.error:
            continue
        found = c.findall(text)
        if not found:
            continue
        last = found[-1]
        s = unicodedata.normalize("NFKC", last.strip()).strip().upper()
        if len(s) == 1 and s.isalpha():
            return s
    return None


MISGRADING = [
    # the issue's own examples: our old built-ins and NeMo Gym 0.7.0's shipped templates
    (r"answer is\s*\(?([A-Z])\)?(?![A-Za-z0-9])", "ABCD"),
    (r"Final choice:\s*\(?([A-Z])\)?(?![A-Za-z0-9])", "ABCD"),
    (r"Answer\s*:\s*(?!Answer)\s*([A-Za-z])\s*", LETTERS[:10]),
    (r"Final Choice:\s*([A-Za-z])\s*", LETTERS[:10]),
    (r"Option Selected:\s*([A-Za-z])\s*", LETTERS[:10]),
    (r"ANSWER IS\s*([A-Za-z])\s*", LETTERS[:10]),
    # shapes nobody listed: the probes come from each pattern's own anchor
    (r"Verdict\s*=>\s*([A-H])", LETTERS[:8]),
    (r"(?i)r[ée]ponse finale\s*:\s*([A-D])", "ABCD"),
    (r"\b([A-J])\b", LETTERS[:10]),
    (r"\(([A-D])\)", "ABCD"),
    (r"[A-D]", "ABCD"),
]
CLEAN = [
    (r"\\boxed\{([A-D])\}", "ABCD"),
    (r"<answer>\s*([A-D])\s*</answer>", "ABCD"),
    (r"(?m)^Answer:\s*\**([A-D])\**\s*$", "ABCD"),
    (r"Answer:\s*\(?([A-D])\)?\s*$", "ABCD"),
    (r"Verdict\s*=>\s*((?-i:[A-H]))(?![^\n]*\w)", LETTERS[:8]),
]


@pytest.mark.parametrize("pattern, letters", MISGRADING)
def test_misgrading_regexes_are_errors_with_real_counterexamples(pattern, letters):
    a = audit("str", (pattern,), letters, BOXED, 0.5)
    assert a.errors, pattern
    for c in a.errors + a.warnings:
        # a real counterexample: NeMo Gym reads exactly this letter, and the reader does not accept it
        assert nemo_gym_letter(c.probe.text, [pattern]) == c.got, c.probe.text
        assert c.got not in c.probe.accept
    for c in a.errors:
        assert c.got in letters and c.probe.ordinary


@pytest.mark.parametrize("pattern, letters", MISGRADING)
def test_a_named_fix_passes_the_audit_and_still_grades_every_letter(pattern, letters):
    a = audit("str", (pattern,), letters, BOXED, 0.5)
    if a.fix is None:
        assert group_span(pattern) is None  # only a pattern without a capture group gets a fix in words
        return
    fixed = a.fix.split("`")[1]
    again = audit("str", (fixed,), letters, BOXED, 0.5)
    assert not again.errors
    assert not again.warnings or "still reads edge cases" in a.fix
    for x in audit_mod.anchors((pattern,), pattern, letters, BOXED, 0.5):
        for L in letters:
            assert nemo_gym_letter(x.answer(L), [fixed]) == L


@pytest.mark.parametrize("pattern, letters", CLEAN)
def test_clean_regexes_have_no_finding(pattern, letters):
    a = audit("str", (pattern,), letters, BOXED, 0.5)
    assert not a.errors and not a.warnings, [(c.probe.text, c.got) for c in a.errors + a.warnings]
    assert a.probes > 20


def test_issue_counterexamples_for_the_old_builtins():
    old = r"answer is\s*\(?([A-Z])\)?(?![A-Za-z0-9])"
    a = audit("str", (old,), "ABCD", BOXED, 0.5)
    texts = {c.probe.text: c.got for c in a.errors}
    assert texts["answer is B\n\nNote that the answer is a consequence of the second premise."] == "A"
    old = r"Final choice:\s*\(?([A-Z])\)?(?![A-Za-z0-9])"
    texts = {c.probe.text: c.got for c in audit("str", (old,), "ABCD", BOXED, 0.5).errors}
    assert texts["Final choice: B\n\nNote that the final choice: a consequence of the second premise."] == "A"


def test_nemo_gym_answer_colon_reads_because_as_b():
    a = audit("str", (r"Answer\s*:\s*(?!Answer)\s*([A-Za-z])\s*",), LETTERS[:10], BOXED, 0.5)
    first = a.errors[0]
    assert first.probe.text.startswith("Answer: because") and first.got == "B"


def test_edge_cases_are_warnings():
    # a case-sensitive class ended at a word's end reads no word, but a hedge still names a letter
    a = audit("str", (r"Answer:\s*((?-i:[A-D]))(?![A-Za-z0-9])",), "ABCD", BOXED, 0.5)
    assert not a.errors
    assert {c.probe.kind for c in a.warnings} == {"hedge"}
    # a letter class wider than the options: 'Answer: Q' decides the row without being an option
    a = audit("str", (r"\\boxed\{\s*([A-Za-z])\s*\}",), "ABCD", BOXED, 0.5)
    assert [(c.probe.kind, c.got) for c in a.warnings] == [("range", "Q")] and not a.errors


def test_lists_are_audited_as_nemo_gym_tries_them():
    # the first pattern decides when it matches: a sound second pattern does not save a loose first one
    pats = (r"Answer:\s*([A-D])", r"\\boxed\{([A-D])\}")
    a = audit("list", pats, "ABCD", BOXED, 0.5)
    assert a.errors and a.errors[0].pattern == 0
    assert nemo_gym_letter(a.errors[0].probe.text, list(pats)) == a.errors[0].got
    assert (
        audit("list", (r"\\boxed\{([A-D])\}", r"<answer>([A-D])</answer>"), "ABCD", BOXED, 0.5).errors == ()
    )


def test_the_mode_matters_robust_vetoes_a_letter_glued_to_a_word():
    pat = r"Answer:\s*([A-D])"
    boxed = audit("str", (pat,), "ABCD", BOXED, 0.5)
    robust = audit("str", (pat,), "ABCD", "robust", 0.5)
    glued = [c for c in boxed.errors if c.probe.text.startswith("Answer: because")]
    assert glued and not [c for c in robust.errors if c.probe.text.startswith("Answer: because")]


@pytest.mark.parametrize("template", [t for t in BUILTIN.values()], ids=lambda t: t.id)
@pytest.mark.parametrize("n", [2, 4, 5, 10, 26])
def test_every_builtin_template_passes_the_audit_and_its_controls(template, n):
    tm = template.template_metadata(n)
    if "output_regex" in tm:
        a = audit("str", (tm["output_regex"],), LETTERS[:n], template.grading_mode, 0.5)
        assert not a.errors and not a.warnings, [(c.probe.text, c.got) for c in a.errors + a.warnings]
    checker = TemplateChecker()
    try:
        checker.ensure(template, n)  # the whole validator on a rendered probe row: raises on any finding
    finally:
        checker.close()


def test_the_audit_runs_once_per_template_not_per_row():
    audit.cache_clear()
    audit_rules._JUDGED.clear()
    v = RowValidator()
    pattern = r"Final Choice:\s*([A-Za-z])\s*"
    for i in range(300):
        row = {
            "responses_create_params": {
                "input": [
                    {
                        "role": "user",
                        "content": f"Question {i}?\nA: a{i}\nB: b{i}\nC: c{i}\nD: d{i}\n\n"
                        'Conclude with "Final Choice: X".',
                    }
                ]  # fmt: skip
            },
            "options": [{"A": f"a{i}"}, {"B": f"b{i}"}, {"C": f"c{i}"}, {"D": f"d{i}"}],
            "expected_answer": "B",
            "uuid": f"u{i}",
            "template_metadata": {"template_id": "t", "output_regex": pattern},
        }
        found = v.check(Row("f.jsonl", i + 1, i, row))
        assert [f.rule for f in found] == ["regex_audit"]
    info = audit.cache_info()
    assert info.misses <= 4  # one audit (and the fix's own audits)
    # ... and every row's verdict (audit, quoted examples, format misses) is one entry of audit_facts' cache
    assert [k for k in audit_rules._JUDGED if k[0] is not None and pattern in k[0].patterns] != []
    assert len(audit_rules._JUDGED) == 1


# ------------------------------------------------------------------------------------------ answer format


@pytest.mark.parametrize(
    "prompt, want",
    [
        ("The last line should be in the format: 'Answer: \\boxed{{A/B/C/D}}' (e.g. 'Answer: \\boxed{{D}}').",
         ["Answer: \\boxed{{C}}", "Answer: \\boxed{{C}}"]),
        ("Choose one option and write: Option Selected: X", ["Option Selected: C"]),
        ('Conclude with "ANSWER IS X" on the final line.', ["ANSWER IS C"]),
        ("format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD.", ["Answer: C"]),
        ("Put the letter of the correct option inside \\boxed{}.", ["\\boxed{C}"]),
        ('Your response should end with "The best answer is [the_answer_letter]".', ["The best answer is C"]),
        ('Which statement about "Vitamin C" and "Plan B" is true?', []),
        ("Tom said 'I agree' and left.", []),
    ],
)  # fmt: skip
def test_answer_format_examples(prompt, want):
    assert [e.fill("C") for e in examples(prompt)] == want


@pytest.mark.parametrize(
    "prompt, markers",
    [
        ("Answer: \\boxed{{D}}", ["{{D}}"]),
        ("What is the answer to {{Question}}?\n(A) {{ choice1 }}", ["{{Question}}", "{{ choice1 }}"]),
        ("{% if context %}ctx{% endif %} q", ["{% if", "{% endif"]),
        ("{problem}\n\nA) x", ["{problem}"]),
        ("Solve x^{{2}} = \\frac{a}{{b}} and \\mathbf{{v}}.", []),  # LaTeX groups
        ("f(x) = {a} + \\sqrt{2}}", []),
    ],
)
def test_unrendered_markers(prompt, markers):
    assert [m.text for m in unrendered(prompt)] == markers


def test_candidate_fixes_rewrite_only_the_capture_group():
    pat = r"(?P<x>[A-Za-z])"
    assert group_span(pat) == (0, len(pat))
    fixed = [p for p, _ in candidate_fixes(r"ans(?:wer)?\s*[:=]\s*\(?([A-Z])\)?", "ABCD")]
    assert fixed[0] == r"ans(?:wer)?\s*[:=]\s*\(?((?-i:[A-D]))\)?"
    assert fixed[2].endswith(r"((?-i:[A-D]))(?![^\n]*\w)\)?")


def test_fixture_table_counts():
    """The closing-note table (docs/design/validate.md): NeMo Gym 0.7.0's shipped example regexes."""
    rows = [
        json.loads(x) for x in (FIXTURES / "example_with_template_metadata.jsonl").read_text().splitlines()
    ]
    flagged = {}
    for r in rows:
        letters = "".join(k for o in r["options"] for k in o)
        a = audit("str", (r["template_metadata"]["output_regex"],), letters, BOXED, 0.5)
        flagged[r["template_metadata"]["template_id"]] = (
            "error" if a.errors else "warning" if a.warnings else None
        )
    assert flagged == {
        "mcqa_benchmark_001": "warning",
        "mcqa_generated_027": "error",
        "mcqa_benchmark_002": "error",
        "mcqa_generated_019": "error",
        "mcqa_generated_015": "error",
    }
