"""The fast strict-boxed extraction (grader/boxed.py) against a straightforward reference of the rule.

The reference is grading.md's `strict_single_letter_boxed` written as plainly as possible (a character loop
that counts braces, the `\\text{}` wrapper regex applied until it stops matching, the two letter regexes), so
any shortcut in boxed.py that changes a result (letter, status or span) on some text shows up here. Texts are
generated from the pieces that matter (boxes, braces, \\text, letters, delimiters, whitespace, non-ASCII and
astral characters that change CPython's string width).
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcqa_prep.grader.boxed import extract_lenient_boxed, extract_strict, last_box, read_boxed_letter
from mcqa_prep.records import STATUS_NO_ANSWER, STATUS_OK, STATUS_OUT_OF_RANGE

_WRAP = re.compile(r"\\text\{\s*(.*?)\s*\}", re.S)
_ONLY = re.compile(r"^[^A-Za-z]*([A-Z])[^A-Za-z]*$")
_LABEL = re.compile(r"^\s*([A-Z])\s*[:).\-]")


def reference(text: str, letters) -> tuple[str | None, str, tuple[int, int] | None]:
    """(letter, status, span) by the rule as written in grading.md."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None, STATUS_NO_ANSWER, None
    begin = start + len("\\boxed{")
    depth, end = 1, None
    for i in range(begin, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end is None:
        return None, STATUS_NO_ANSWER, None
    inner = text[begin:end].strip()
    while (m := _WRAP.fullmatch(inner)) is not None:
        inner = m.group(1)
    m = _ONLY.match(inner) or _LABEL.match(inner)
    if m is None:
        return None, STATUS_NO_ANSWER, (begin, end)
    letter = m.group(1)
    if letter not in letters:
        return None, STATUS_OUT_OF_RANGE, (begin, end)
    return letter, STATUS_OK, (begin, end)


PIECES = [
    "\\boxed{", "\\boxed{", "\\text{", "{", "}", "}", "}}", "A", "B", "E", "Z", "b", "x", ":", ")", ".", "-",
    " ", "  ", "\n", "\t", "\u00a0", "[", "(", "*", "**", "文字", "ب", "é", "e\u0301", "🤔", "Ａ", "\\[", "\\]",
    "Answer: ", "the answer is ",
]  # fmt: skip
_free = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)
_short = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)
# most texts end with a box whose content is a few pieces (the shapes the fast paths decide)
_boxed = st.tuples(
    _free,
    st.sampled_from(["\\boxed{", "\\boxed{\\text{"]),
    _short,
    st.sampled_from(["}", "}}", "", "} x", "}}}"]),
    _short,
).map("".join)
texts = st.one_of(_free, _boxed, _boxed)
letter_sets = st.sampled_from([{"A": "a", "B": "b", "E": "e"}, {c: c for c in "ABCDEFGHIJ"}, {}])


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=st.text(max_size=40), text=texts, letters=letter_sets)
def test_strict_matches_the_reference(prefix, text, letters):
    text = prefix + text
    ext = extract_strict(text, letters)
    letter, status, span = reference(text, letters)
    assert (ext.letter, ext.status) == (letter, status)
    if span is not None:
        assert ext.span == span
    # lenient_boxed starts with the strict rule: whenever strict decides, so does lenient
    if letter is not None:
        assert extract_lenient_boxed(text, letters).letter == letter


@settings(max_examples=2000, deadline=None)
@given(text=texts)
def test_last_box_and_read_letter_match_the_reference(text):
    _, status, span = reference(text, {c: c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
    got = last_box(text)
    assert got == span
    if span is not None:
        assert (read_boxed_letter(text[span[0] : span[1]]) is not None) == (status == STATUS_OK)


def test_known_shapes():
    abc = {"A": "x", "B": "y", "C": "z"}
    for text, want in [
        ("so \\boxed{B}", "B"),
        ("\\boxed{ B }", "B"),
        ("\\boxed{\\text{C}}", "C"),
        ("\\boxed{\\text{ C }}", "C"),
        ("\\boxed{\\text{\\text{A}}}", "A"),
        ("\\boxed{C: z}", "C"),
        ("\\boxed{(B)}", "B"),
        ("\\boxed{b}", None),
        ("\\boxed{D}", None),
        ("\\boxed{A} then \\boxed{B", None),
        ("\\boxed{\\text{B}} x}", "B"),
        ("\\boxed{\\text{B}x}", None),
        ("文字\\boxed{\\text{B}}🤔", "B"),
    ]:
        assert extract_strict(text, abc).letter == want, text
        assert reference(text, abc)[0] == want, text
