"""`strict_single_letter_boxed` and `lenient_boxed` (grading.md), NeMo Gym 0.7.0 compatible.

Both read only the LAST literal `\\boxed{` of the text, with braces counted so nested groups such as
`\\boxed{\\text{E}}` are kept whole; an unbalanced last box is no answer even when an earlier box was fine.
The hot path is plain string operations (rfind/find/startswith); regexes run only on the short content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..records import STATUS_AMBIGUOUS, STATUS_NO_ANSWER, STATUS_OK, STATUS_OUT_OF_RANGE
from .base import Extraction

BOX_MARKER = "\\boxed{"
_MARKER_LEN = len(BOX_MARKER)
_TEXT_OPEN = "\\text{"

# The content holds exactly one ASCII letter, upper-case, with only non-letters around it: E, [C], (B), **B**.
_LETTER_ONLY = re.compile(r"[^A-Za-z]*([A-Z])[^A-Za-z]*")
# The content starts with an upper-case letter, then a label delimiter: "E: text", "C) text", "B. text".
_LETTER_LABEL = re.compile(r"\s*([A-Z])\s*[:).\-]")
_BRACES = re.compile(r"[{}]")

RULE_STRICT = "boxed_letter"
RULE_LENIENT = "boxed_option_text"

_NO_BOX = Extraction(None, STATUS_NO_ANSWER, RULE_STRICT, message="no \\boxed{...} in the text")
_UNBALANCED = Extraction(None, STATUS_NO_ANSWER, RULE_STRICT, message="the last \\boxed{ is not closed")


def last_box(text: str) -> tuple[int, int] | None:
    """Span (start, end) of the content of the last `\\boxed{...}`, braces counted; None if absent or
    unbalanced. Why spans: callers need the content and the location for --explain without copying."""
    start = text.rfind(BOX_MARKER)
    if start < 0:
        return None
    begin = start + _MARKER_LEN
    close = text.find("}", begin)
    if close < 0:
        return None
    if text.find("{", begin, close) < 0:  # common case: no nested group
        return begin, close
    depth = 1
    for m in _BRACES.finditer(text, begin):
        if m.group() == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return begin, m.start()
    return None


def strip_text_wrappers(s: str) -> str:
    """Repeatedly remove a `\\text{...}` wrapper spanning the whole string, trimming inner whitespace.

    Equivalent to a full match of `\\text\\{\\s*(.*?)\\s*\\}` (DOTALL) applied until it stops matching.
    """
    while s.startswith(_TEXT_OPEN) and s.endswith("}") and len(s) > 6:
        s = s[6:-1].strip()
    return s


def read_boxed_letter(content: str) -> str | None:
    """The letter a box's raw content names under the strict rule (not yet checked against options)."""
    inner = strip_text_wrappers(content.strip())
    if len(inner) == 1:  # fast path: \boxed{E}
        return inner if "A" <= inner <= "Z" else None
    m = _LETTER_ONLY.fullmatch(inner) or _LETTER_LABEL.match(inner)
    return m.group(1) if m else None


def _strict(text: str, letters: Mapping[str, Any], span: tuple[int, int] | None) -> Extraction:
    if span is None:
        return _UNBALANCED if BOX_MARKER in text else _NO_BOX
    letter = read_boxed_letter(text[span[0] : span[1]])
    if letter is None:
        return Extraction(None, STATUS_NO_ANSWER, RULE_STRICT, span, message="the last box holds no letter")
    if letter not in letters:
        return Extraction(
            None, STATUS_OUT_OF_RANGE, RULE_STRICT, span, message=f"boxed letter {letter} is not an option"
        )
    return Extraction(letter, STATUS_OK, RULE_STRICT, span)


def extract_strict(text: str, letters: Mapping[str, Any], template_metadata: Any = None) -> Extraction:
    """strict_single_letter_boxed: one upper-case letter (or a labelled letter) in the last box."""
    return _strict(text, letters, last_box(text))


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def extract_lenient_boxed(text: str, letters: Mapping[str, Any], template_metadata: Any = None) -> Extraction:
    """lenient_boxed: strict first, else exactly one option text contained in the last box's content."""
    span = last_box(text)
    strict = _strict(text, letters, span)
    if strict.letter is not None or span is None:
        return strict
    inner = text[span[0] : span[1]].strip()
    cands = (_norm(inner), _norm(strip_text_wrappers(inner)))
    matched: list[str] = []
    c0, c1 = cands
    for letter, option in letters.items():
        if option is None:
            continue
        low = option.lower()
        # cheap necessary condition first: the option's last word is part of its normalised text
        tail = low.rsplit(None, 1)
        if not tail or (tail[-1] not in c0 and tail[-1] not in c1):
            continue
        opt = " ".join(low.split())
        if (opt in c0 or opt in c1) and letter not in matched:
            matched.append(letter)
    if len(matched) == 1:
        return Extraction(matched[0], STATUS_OK, RULE_LENIENT, span)
    if matched:
        return Extraction(
            None,
            STATUS_AMBIGUOUS,
            RULE_LENIENT,
            span,
            message=f"the last box contains the text of options {', '.join(matched)}",
        )
    if strict.status == STATUS_OUT_OF_RANGE:
        return strict
    return Extraction(None, STATUS_NO_ANSWER, RULE_LENIENT, span, message="the last box names no option")
