"""Option letters, and the labels questions write for them in other scripts: one table, read by the grader
(NeMo Gym's custom-regex mapping, `robust`) and by `convert` (letter references in option texts).

Options are keyed by the letters A, B, C, ... (`LETTERS`): the grader's allowed letters, convert's keys, the
letters a question names its options by when it labels them in Latin.

A question in another script may label its options in that script. `SCRIPTS` holds one entry per script:
the runs of labels it writes, each in option order (the first names A, the second B, ...; a label may be
several characters long, as the Persian الف), other spellings of a label, its capitals that are drawn like
Latin ones, and the digits it writes numbers with (a question that numbers its options is answered with
them: `١`, `۳`, `४`). To teach the readers a script, add its entry (tests/test_labels.py checks the table's
shape). Views of the table, each for one reader:

- `NEMO_GYM_LOCALISED`: NeMo Gym 0.7.0's mapping of localised letters in a captured answer (grading.md,
  "Custom regex"): Arabic أ ب ج د and Bengali অ ব ড ঢ to A-D, exactly (full-width Ａ-Ｄ come to A-D by NFKC).
  Parity, not reading: it never grows with the table.
- `NATIVE`: every label of every script (and every other spelling) -> its option letter, in its script's
  order: what the label means when the question labels its options in that script.
- `LOOKALIKES`: the capitals of other scripts drawn like a Latin letter -> that letter: what the character
  means when the question labels its options in Latin and the answer was typed in another script.
- `DIGITS`: every digit of the table's scripts -> the ASCII digit (a number label in another script).

**What a label means is what the question that labels with it means** (Cyrillic В: the third label in
А Б В Г, the look-alike of Latin B). A label that reads one way only (Б, Г, Д; ア, 가, ক, ...) means its
option wherever it stands. A character that reads two ways (`TWO_READINGS`: В) means what the question's
label set makes it: the third option when the question labels in Cyrillic, B when it labels in Latin. Where
the label set is not known the readers differ only in whether they guess:

- `robust` reads the question's labels from `template_metadata.option_labels`, or from the rendered prompt
  (`grade_request`); when neither says, the question is taken to label in Latin, as the row's option keys
  do, and В is B (docs/design/robust.md, "Labels").
- `convert` reads a reference in an option text of a source question whose labels it does not know: a
  label that reads one way (Б) shows the question labels in Cyrillic, and В beside it is C; a reference made
  only of characters that could be Latin ("А и В") is left unresolved (the row keeps its option order),
  never guessed (convert/anchors.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # the option letters, in order
LETTER_SET = frozenset(LETTERS)


class Script(NamedTuple):
    """One script's option labels (see the module's docstring)."""

    name: str
    label_runs: tuple[tuple[str, ...], ...] = ()  # runs of labels, each in option order (A, B, C, ...)
    spellings: Mapping[str, str] = MappingProxyType({})  # another spelling of a label -> the label
    lookalikes: Mapping[str, str] = MappingProxyType({})  # a capital drawn like a Latin letter -> the letter
    letters: str = ""  # the script's letters as a regex class body: a label glued to one starts a word
    digits: tuple[str, ...] = ()  # runs of the script's digits, each 0 to 9 in order


# fmt: off
SCRIPTS: tuple[Script, ...] = (
    Script(
        "Arabic",
        (("أ", "ب", "ج", "د", "ه"),  # abjad order (Arabic; older Persian exams too)
         ("الف", "ب", "پ", "ت", "ث")),  # Persian alphabet order, the first label the letter's name
        {"هـ": "ه", "ا": "أ"},  # the fifth written with a tatweel; alef without its hamza (Persian)
        letters="\u0600-\u06ff",
        digits=("٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹"),  # Arabic-Indic; Persian (and Urdu)
    ),
    Script(
        "Bengali",
        (("ক", "খ", "গ", "ঘ", "ঙ"),  # alphabet order
         ("অ", "ব", "ড", "ঢ")),  # the labels NeMo Gym maps to A-D
        letters="\u0980-\u09ff",
        digits=("০১২৩৪৫৬৭৮৯",),
    ),
    Script(
        "Devanagari",
        (("क", "ख", "ग", "घ", "ङ"),  # alphabet order
         ("अ", "ब", "स", "द")),  # the sounds of A, B, C, D
        letters="\u0900-\u097f",
        digits=("०१२३४५६७८९",),
    ),
    Script("Hebrew", (("א", "ב", "ג", "ד", "ה"),), letters="\u05d0-\u05ea"),
    Script(
        "Cyrillic",
        (("А", "Б", "В", "Г", "Д"),),
        lookalikes={"А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "К": "K", "М": "M", "О": "O", "Р": "P",
                    "Т": "T", "Х": "X"},
        letters="\u0400-\u04ff",
    ),
    Script(
        "Greek",
        (("Α", "Β", "Γ", "Δ", "Ε"),),
        lookalikes={"Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
                    "Ο": "O", "Ρ": "P", "Τ": "T", "Χ": "X"},
        letters="\u0370-\u03ff",
    ),
    Script("Thai", (("ก", "ข", "ค", "ง", "จ"),), letters="\u0e00-\u0e7f", digits=("๐๑๒๓๔๕๖๗๘๙",)),
    Script("Katakana", (("ア", "イ", "ウ", "エ", "オ"),), letters="\u30a0-\u30ff"),
    Script("Hangul", (("가", "나", "다", "라", "마"),), letters="\uac00-\ud7af"),
    Script("Han", (("甲", "乙", "丙", "丁", "戊"),), letters="\u4e00-\u9fff"),  # the heavenly stems
    Script("Circled digits", (("①", "②", "③", "④", "⑤"),)),
)
# fmt: on


def native_letters(scripts: tuple[Script, ...] = SCRIPTS) -> dict[str, str]:
    """Every label (and other spelling of one) -> its option letter, read in its script's order."""
    out: dict[str, str] = {}
    for s in scripts:
        for run in s.label_runs:
            for i, label in enumerate(run):
                out.setdefault(label, LETTERS[i])
        for other, label in s.spellings.items():
            out.setdefault(other, out[label])
    return out


NATIVE: Mapping[str, str] = MappingProxyType(native_letters())
LOOKALIKES: Mapping[str, str] = MappingProxyType({c: L for s in SCRIPTS for c, L in s.lookalikes.items()})
# the characters whose look-alike letter is not their letter in their script's order (Cyrillic В)
TWO_READINGS = frozenset(c for c, L in LOOKALIKES.items() if NATIVE.get(c, L) != L)
# the characters that are a label in one reading only: no Latin capital looks like them
ONE_READING: Mapping[str, str] = MappingProxyType({c: L for c, L in NATIVE.items() if c not in LOOKALIKES})
# the labels written with several characters (the Persian الف; the fifth Arabic label with its tatweel, هـ)
SEVERAL_CHARACTERS: Mapping[str, str] = MappingProxyType({c: L for c, L in ONE_READING.items() if len(c) > 1})
DIGITS: Mapping[str, str] = MappingProxyType(
    {c: str(i) for s in SCRIPTS for run in s.digits for i, c in enumerate(run)}
)


# NeMo Gym's runs (script, which of its runs), of which it maps the first four labels to A-D
_NEMO_GYM_RUNS = (("Arabic", 0), ("Bengali", 1))


def _nemo_gym_localised() -> dict[str, str]:
    runs = {(s.name, i): run for s in SCRIPTS for i, run in enumerate(s.label_runs)}
    return {label: LETTERS[i] for key in _NEMO_GYM_RUNS for i, label in enumerate(runs.get(key, ())[:4])}


NEMO_GYM_LOCALISED: Mapping[str, str] = MappingProxyType(_nemo_gym_localised())
