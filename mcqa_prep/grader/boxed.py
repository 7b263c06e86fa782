"""`strict_single_letter_boxed` and `lenient_boxed` (grading.md), NeMo Gym 0.7.0 compatible.

Both read only the LAST literal `\\boxed{` of the text, with braces counted so nested groups such as
`\\boxed{\\text{E}}` are kept whole; an unbalanced last box is no answer even when an earlier box was fine.
The hot path is plain string operations (rfind/find/startswith); regexes run only on the short content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..labels import LETTER_SET
from ..records import STATUS_AMBIGUOUS, STATUS_NO_ANSWER, STATUS_OK, STATUS_OUT_OF_RANGE
from .base import Extraction

BOX_MARKER = "\\boxed{"
_MARKER_LEN = len(BOX_MARKER)
_TEXT_OPEN = "\\text{"
_TEXT_LEN = len(_TEXT_OPEN)

# The content holds exactly one ASCII letter, upper-case, with only non-letters around it: E, [C], (B), **B**.
_LETTER_ONLY = re.compile(r"[^A-Za-z]*([A-Z])[^A-Za-z]*")
# The content starts with an upper-case letter, then a label delimiter: "E: text", "C) text", "B. text".
_LETTER_LABEL = re.compile(r"\s*([A-Z])\s*[:).\-]")

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
    return _nested_close(text, begin)


def _nested_close(text: str, begin: int) -> tuple[int, int] | None:
    """The span of a box content that holds nested groups: braces counted with str.find (C loops over the
    text, faster than a regex scan or a loop over characters on long multilingual texts)."""
    depth = 1
    pos = begin
    find = text.find
    while True:
        close = find("}", pos)
        if close < 0:
            return None
        opened = find("{", pos, close)
        if opened >= 0:  # a group opens before the next closing brace
            depth += 1
            pos = opened + 1
            continue
        depth -= 1
        if depth == 0:
            return begin, close
        pos = close + 1


def strip_text_wrappers(s: str) -> str:
    """Repeatedly remove a `\\text{...}` wrapper spanning the whole string, trimming inner whitespace.

    Equivalent to a full match of `\\text\\{\\s*(.*?)\\s*\\}` (DOTALL) applied until it stops matching.
    """
    while s.startswith(_TEXT_OPEN) and s.endswith("}") and len(s) > 6:
        s = s[6:-1].strip()
    return s


_UPPER = LETTER_SET
_LABEL_DELIMS = frozenset(":).-")


def read_boxed_letter(content: str) -> str | None:
    """The letter a box's raw content names under the strict rule (not yet checked against options)."""
    inner = content.strip()
    if inner.startswith(_TEXT_OPEN):
        inner = strip_text_wrappers(inner)
    n = len(inner)
    if n == 1:  # fast path: \boxed{E}
        return inner if inner in _UPPER else None
    # fast path: a stripped content "E: text" / "C) text": both rules name its first letter
    if n > 1 and inner[0] in _UPPER and inner[1] in _LABEL_DELIMS:
        return inner[0]
    m = _LETTER_ONLY.fullmatch(inner) or _LETTER_LABEL.match(inner)
    return m.group(1) if m else None


_new = tuple.__new__  # an Extraction built without its Python-level __new__ (the hot path builds one per row)
_NO_LETTER = "the last box holds no letter"


def _strict(text: str, letters: Mapping[str, Any], span: tuple[int, int] | None) -> Extraction:
    if span is None:
        return _UNBALANCED if BOX_MARKER in text else _NO_BOX
    letter = read_boxed_letter(text[span[0] : span[1]])
    if letter is None:
        return _new(Extraction, (None, STATUS_NO_ANSWER, RULE_STRICT, span, (), _NO_LETTER, None))
    if letter not in letters:
        return Extraction(
            None, STATUS_OUT_OF_RANGE, RULE_STRICT, span, message=f"boxed letter {letter} is not an option"
        )
    return _new(Extraction, (letter, STATUS_OK, RULE_STRICT, span, (), None, None))


def extract_strict(text: str, letters: Mapping[str, Any], template_metadata: Any = None) -> Extraction:
    """strict_single_letter_boxed: one upper-case letter (or a labelled letter) in the last box.

    last_box and read_boxed_letter define the rule; this is the same rule with the common shapes decided
    inline (\\boxed{E}, \\boxed{\\text{E}}, a content without nested groups), one str.find per step."""
    start = text.rfind(BOX_MARKER)
    if start < 0:
        return _NO_BOX
    begin = start + _MARKER_LEN
    close = text.find("}", begin)
    if close < 0:
        return _UNBALANCED
    if text.find("{", begin, close) < 0:  # no nested group: the content ends at the first closing brace
        if close == begin + 1:  # \boxed{E}
            letter = text[begin]
            if letter in _UPPER and letter in letters:
                return _new(Extraction, (letter, STATUS_OK, RULE_STRICT, (begin, close), (), None, None))
        return _strict(text, letters, (begin, close))
    inner = begin + _TEXT_LEN
    if (
        text.startswith(_TEXT_OPEN, begin)
        and text.startswith("}", close + 1)
        and text.find("{", inner, close) < 0
    ):  # \boxed{\text{...}}: the content is one \text group without braces inside
        letter = text[inner:close].strip()
        if letter in _UPPER and letter in letters:
            return _new(Extraction, (letter, STATUS_OK, RULE_STRICT, (begin, close + 1), (), None, None))
        return _strict(text, letters, (begin, close + 1))
    return _strict(text, letters, _nested_close(text, begin))


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
