"""Every per-mode fact lives in the Mode rows of grader/modes.py (issue 22): what a compliant answer looks like,
where a mode reads the letter, whether it matches option texts, which modes a row, NeMo Gym or a convert
template may use. Elsewhere a mode is named only as data (a template's grading_mode, a default), never
compared, listed or keyed by name; and changing a fact in the table changes what every consumer does."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from mcqa_prep.grader import modes

PACKAGE = Path(modes.__file__).resolve().parents[1]
NAMES = {m.name for m in modes.MODES}


def _mode_name(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in NAMES else None


def _facts_outside_the_table(package: Path = PACKAGE) -> list[str]:
    """Places that compare a mode name, list mode names or key a mapping by them, outside grader/modes.py."""
    out = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).as_posix() == "grader/modes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                found = [_mode_name(n) for n in (node.left, *node.comparators)]
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                found = [_mode_name(n) for n in node.elts]
            elif isinstance(node, ast.Dict):
                found = [_mode_name(n) for n in node.keys if n is not None]
            else:
                continue
            for name in filter(None, found):
                out.append(f"{path.relative_to(package.parent)}:{node.lineno}: {name}")
    return out


def test_no_mode_is_compared_listed_or_keyed_outside_the_table():
    assert _facts_outside_the_table() == []


def test_the_scan_finds_a_fact_written_elsewhere(tmp_path):
    """The scan above is not vacuous: per-mode facts like the ones issue 22 moved are found."""
    fake = tmp_path / "mcqa_prep"
    (fake / "grader").mkdir(parents=True)
    (fake / "grader" / "modes.py").write_text('MODES = ("robust",)\n')
    (fake / "x.py").write_text(
        'BOXED = ("strict_single_letter_boxed", "lenient_boxed")\nok = m == "robust"\nS = {"robust": "Answer: %s"}\n'
    )
    assert _facts_outside_the_table(fake) == [
        "mcqa_prep/x.py:1: strict_single_letter_boxed",
        "mcqa_prep/x.py:1: lenient_boxed",
        "mcqa_prep/x.py:2: robust",
        "mcqa_prep/x.py:3: robust",
    ]


@pytest.fixture
def changed_table(monkeypatch):
    """Change one row of the table in place (as editing modes.py would) and clear what caches it."""
    from mcqa_prep.validate import row_rules

    def change(name: str, **facts):
        new = dataclasses.replace(modes.BY_NAME[name], **facts)
        table = tuple(new if m.name == name else m for m in modes.MODES)
        monkeypatch.setattr(modes, "MODES", table)
        monkeypatch.setitem(modes.BY_NAME, name, new)
        monkeypatch.setattr(row_rules, "MODES", table)  # imported by name there
        row_rules.never_extracted.cache_clear()
        return new

    yield change
    row_rules.never_extracted.cache_clear()


def test_a_compliant_answer_is_the_tables(changed_table):
    from mcqa_prep.convert.checks import mode_sample
    from mcqa_prep.validate.row_rules import never_extracted

    assert mode_sample("lenient_answer_colon", "B").endswith("Answer: B")
    assert "lenient_answer_colon" not in never_extracted("B")
    changed_table("lenient_answer_colon", answer="The final answer, boxed: \\boxed{%s}")
    assert mode_sample("lenient_answer_colon", "B").endswith("\\boxed{B}")
    assert "lenient_answer_colon" in never_extracted("B")  # the grader reads no Answer: line in it


def test_where_a_mode_reads_is_the_tables(changed_table):
    from mcqa_prep.convert.checks import SelfCheck
    from mcqa_prep.convert.templates import BUILTIN

    boxed = BUILTIN["boxed"]
    assert not SelfCheck(boxed).possible("Question? \\boxed{}")
    changed_table(boxed.grading_mode, reads=modes.EVERY_FORMAT)
    assert SelfCheck(boxed).possible("Question? \\boxed{}")


def test_the_veto_of_a_word_capture_is_the_tables(changed_table):
    from mcqa_prep.grader import grade_text

    args = ("Answer: Answer: C", [{"A": "a"}, {"C": "c"}], "C")
    tm = {"output_regex": "(A)nswer"}
    assert grade_text(*args, "robust", tm).extracted_answer == "C"  # the A of Answer is no answer
    changed_table("robust", word_capture_veto=False)
    assert grade_text(*args, "robust", tm).extracted_answer == "A"


def test_derived_lists_follow_the_rows():
    assert modes.TEMPLATE_MODES == tuple(m.name for m in modes.MODES if m.row and m.nemo_gym)
    assert "robust" not in modes.TEMPLATE_MODES and "lenient_answer_colon_md" not in modes.TEMPLATE_MODES
    assert all(modes.BY_NAME[m].row_alternative in modes.ROW_MODES for m in modes.OVERRIDE_ONLY_MODES)
    assert set(modes.OPTION_TEXT_MODES) == {m.name for m in modes.MODES if m.option_texts}
