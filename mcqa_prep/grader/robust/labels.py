"""Labels as the question labels them: which tokens of a response name which option (docs/design/robust.md,
"Labels").

Latin capitals always (lower-case ones after an anchor, in a box or in brackets); besides them, by default
(the question labels in Latin, as the row's option keys do), the labels of other scripts that name an option
in one reading only (labels.ONE_READING, from the package's one label table, mcqa_prep/labels.py) and the
capitals of other scripts drawn like Latin ones (labels.LOOKALIKES: Cyrillic В read as B). A row whose
prompt labels its options otherwise says so in `template_metadata.option_labels`:

- "lower": a b c d — lower-case letters are labels wherever capitals are;
- "numbers": 1 2 3 4 — a number after an anchor names that option ("최종 답변: 1", "Answer: (2)");
- the labels themselves, in option order: a string of one-character labels ("АБВГ", "アイウエ") or a list of
  strings ("الف", "ب", "پ", "ت": a label may be several characters long) — each names its option, over any
  default (with "АБВГ", В is the third option, not B).

The scheme is one small record per row, cached per (labels, letters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...labels import LOOKALIKES, ONE_READING, SEVERAL_CHARACTERS
from . import patterns, phrases


class Labels(NamedTuple):
    local: Mapping[str, str]  # a label of another script -> its option letter
    lower: bool = False  # lower-case letters are labels everywhere
    numbers: bool = False  # numbers 1..N are labels after an anchor
    order: tuple[str, ...] = ()  # the option letters in order (for numbers)
    several: re.Pattern[str] | None = None  # the labels written with several characters, standing alone


def _several_re(labels: Mapping[str, str], local: Mapping[str, str]) -> re.Pattern[str] | None:
    """A pattern for the labels of several characters (الف, هـ) that stand alone (no letter, mark or tatweel
    glued to either end), each of which the mode reads as its first character: a label of one character
    naming the same option."""
    read = sorted((lab for lab, L in labels.items() if local.get(lab[0]) == L), key=len, reverse=True)
    if not read:
        return None
    return re.compile(r"(?<![^\W\d_\u0640])(?:" + "|".join(map(re.escape, read)) + r")(?![^\W\d_\u0640])")


# (the mode reads a response character by character: a label of several characters is read as its first one)
DEFAULT_LOCAL: dict[str, str] = {**{c: L for c, L in ONE_READING.items() if len(c) == 1}, **LOOKALIKES}
DEFAULT = Labels(DEFAULT_LOCAL, several=_several_re(SEVERAL_CHARACTERS, DEFAULT_LOCAL))
_CACHE: dict[tuple[Any, ...], Labels] = {}


def labels_for(letters: Mapping[str, Any], template_metadata: Mapping[str, Any] | None) -> Labels:
    """The row's label scheme (DEFAULT unless template_metadata.option_labels says otherwise)."""
    if not template_metadata:
        return DEFAULT
    spec = template_metadata.get("option_labels")
    if not spec:
        return DEFAULT
    if isinstance(spec, list):
        spec = tuple(spec)
    try:
        key = (spec, tuple(letters))
        hit = _CACHE.get(key)
    except TypeError:  # (an unhashable spec: the default)
        return DEFAULT
    if hit is None:
        hit = _build(spec, tuple(letters))
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = hit
    return hit


def numbers_as_letters(t: str, labels: Labels) -> str:
    """When the question numbers its options, a one-digit number with a counter word ("3번", and each of
    "3, 4, 5번") is that option's letter and the counter a space ("C ", "C, D, E "), one character for
    one, so every rule reads it as a label."""
    if not labels.numbers or not any(c in t for c in phrases.NUMBER_LABEL_COUNTERS):
        return t
    order = labels.order

    def letters(m: re.Match[str]) -> str:
        out = [order[int(c) - 1] if c.isdigit() and 1 <= int(c) <= len(order) else c for c in m.group(1)]
        return "".join(out) + " " * (m.end() - m.end(1))

    return patterns.NUMBER_COUNTER_RE.sub(letters, t)


def several_as_one(t: str, labels: Labels) -> str:
    """Each label of several characters that stands alone (the Persian الف, the fifth Arabic label هـ) as its
    first character and spaces (`ا  `), one character for one, so every rule reads it as a label."""
    if labels.several is None or t.isascii():
        return t
    return labels.several.sub(lambda m: m.group()[0] + " " * (m.end() - m.start() - 1), t)


def _build(spec: Any, order: tuple[str, ...]) -> Labels:
    if spec == "lower":
        return DEFAULT._replace(lower=True, order=order)
    if spec == "numbers":
        return DEFAULT._replace(numbers=True, order=order)
    if isinstance(spec, str):
        spec = tuple(spec)
    if not isinstance(spec, tuple) or not all(isinstance(s, str) and s for s in spec):
        return DEFAULT
    local = dict(DEFAULT_LOCAL)
    several = dict(SEVERAL_CHARACTERS)
    for label, letter in zip(spec, order, strict=False):
        if len(label) == 1 and not label.isascii():
            local[label] = letter
        elif len(label) > 1 and not label.isascii():
            several[label] = letter
    return Labels(local, order=order, several=_several_re(several, local))
