"""The one table of option letters and labels (mcqa_prep/labels.py): its shape, NeMo Gym's fixed view of it, and
its readers (the grader's custom-regex mapping, `robust`, `convert`) reading every label alike."""

from __future__ import annotations

import re
import unicodedata

import pytest

from mcqa_prep.convert.anchors import UNRESOLVED, letter_refs
from mcqa_prep.grader import grade_text
from mcqa_prep.grader.letters import LOCALISED, map_localised
from mcqa_prep.grader.robust.labels import DEFAULT_LOCAL
from mcqa_prep.labels import (
    DIGITS,
    LETTERS,
    LOOKALIKES,
    NATIVE,
    NEMO_GYM_LOCALISED,
    ONE_READING,
    SCRIPTS,
    SEVERAL_CHARACTERS,
    TWO_READINGS,
)

OPTIONS = [{"A": "Mercury"}, {"B": "Venus"}, {"C": "Mars"}, {"D": "Jupiter"}, {"E": "Saturn"}]


def test_nemo_gym_custom_regex_mapping_is_exactly_its_own():
    """grading.md, "Custom regex": أ ب ج د, অ ব ড ঢ and full-width Ａ-Ｄ to A-D; nothing else, whatever the table
    holds (a parity view: it never grows with the table)."""
    want = dict(zip("أبجد", "ABCD", strict=True)) | dict(zip("অবডঢ", "ABCD", strict=True))
    assert dict(NEMO_GYM_LOCALISED) == want and LOCALISED == want
    assert map_localised("ＡＢＣＤ") == "ABCD" and map_localised("ه") == "ه" and map_localised("В") == "В"


def test_the_table_has_one_entry_per_script_and_reads_one_way():
    names = [s.name for s in SCRIPTS]
    assert len(names) == len(set(names))
    seen: dict[str, str] = {}
    for s in SCRIPTS:
        assert s.label_runs or s.lookalikes, s.name
        for run in s.label_runs:
            assert 2 <= len(run) <= len(LETTERS) and len(set(run)) == len(run), s.name
            for i, label in enumerate(run):
                assert len(label) == 1 or label in SEVERAL_CHARACTERS, (s.name, label)
                assert seen.setdefault(label, LETTERS[i]) == LETTERS[i], (s.name, label)  # one letter a label
                if s.letters:
                    assert re.fullmatch(f"[{s.letters}]+", label), (s.name, label)
        for other, label in s.spellings.items():
            assert any(label in run for run in s.label_runs) and other not in seen, (s.name, other)
        for c, latin in s.lookalikes.items():
            assert latin in LETTERS and not c.isascii() and c.isupper(), (s.name, c)
        for digits in s.digits:
            assert [unicodedata.digit(c) for c in digits] == list(range(10)), (s.name, digits)
    assert set(NATIVE) == set(seen) | {o for s in SCRIPTS for o in s.spellings}
    assert set(SEVERAL_CHARACTERS) == {c for c in ONE_READING if len(c) > 1}


def test_a_character_that_reads_two_ways_means_what_the_question_labels_make_it():
    """Cyrillic В: the third label of А Б В Г, the look-alike of Latin B (the only such character today)."""
    assert TWO_READINGS == {"В"} and NATIVE["В"] == "C" and LOOKALIKES["В"] == "B"
    # robust: a question whose labels are not known labels in Latin, as the row's option keys do
    assert grade_text("Ответ: В", OPTIONS, "B", "robust").extracted_answer == "B"
    assert grade_text("Ответ: В", OPTIONS, "C", "robust", {"option_labels": "АБВГД"}).extracted_answer == "C"
    assert grade_text("Ответ: Б", OPTIONS, "B", "robust").extracted_answer == "B"  # one reading: Cyrillic
    # convert: a reference that shows Cyrillic labels is read in their order; one that could be Latin is not
    # guessed
    assert letter_refs("Б и В", 4) == ["B", "C"]
    assert letter_refs("А и В", 4) == UNRESOLVED


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.label_runs], ids=lambda s: s.name)
def test_robust_and_convert_read_every_label_of_the_table(script):
    for run in script.label_runs:
        for i, label in enumerate(run[:4]):
            want = LETTERS[i]
            if label in TWO_READINGS:
                continue  # (above)
            assert DEFAULT_LOCAL.get(label, want) == LOOKALIKES.get(label, want), (script.name, label)
            if label in ONE_READING:
                assert DEFAULT_LOCAL[label[0]] == want  # (several characters: read as the first)
                got = grade_text(f"Answer: {label}", OPTIONS, want, "robust")
                assert got.extracted_answer == want, (script.name, label, got)
            if unicodedata.normalize("NFKC", label) != label:
                continue  # convert reads option texts in NFKC: a circled ① is the digit 1 there
            refs = letter_refs(f"Only {label} and {run[(i + 1) % 4]}", 5)
            assert refs == [want, LETTERS[(i + 1) % 4]], (script.name, label, refs)


@pytest.mark.parametrize("digit", sorted(DIGITS), ids=lambda d: f"U+{ord(d):04X}")
def test_robust_reads_every_digit_of_the_table_as_a_number_label(digit):
    """A question that numbers its options is answered with the digits of its script (`١`, `۳`, `४`): each is
    its number there; where the options are lettered, a digit names none."""
    n = int(DIGITS[digit])
    if not 1 <= n <= len(OPTIONS):
        return
    got = grade_text(f"Answer: {digit}", OPTIONS, LETTERS[n - 1], "robust", {"option_labels": "numbers"})
    assert got.extracted_answer == LETTERS[n - 1]
    assert grade_text(f"Answer: {digit}", OPTIONS, "A", "robust").extracted_answer is None


def test_a_label_of_several_characters_is_read_where_it_stands_alone():
    """The Persian الف (three characters) and the Arabic هـ (with its tatweel) name their options; glued to more
    letters they are words (الفبا, the alphabet)."""
    persian = {"option_labels": ["الف", "ب", "پ", "ت"]}
    assert grade_text("الف", OPTIONS, "A", "robust", persian).extracted_answer == "A"
    assert grade_text("پاسخ: الف) Mercury", OPTIONS, "A", "robust").extracted_answer == "A"
    assert grade_text("الإجابة: هـ", OPTIONS, "E", "robust").extracted_answer == "E"
    assert grade_text("پاسخ: الفبا", OPTIONS, "A", "robust", persian).extracted_answer is None


def test_the_option_alphabet_is_written_once():
    """A-Z as option letters is `labels.LETTERS`; nine modules once spelled it themselves."""
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "mcqa_prep"
    spelled = [
        str(p.relative_to(pkg)) for p in pkg.rglob("*.py") if "ABCDEFGHIJKLMNOP" in p.read_text("utf-8")
    ]
    assert spelled == ["labels.py"]
