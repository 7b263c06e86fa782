"""How the prompt labels its options, read from the rendered prompt (docs/design/robust.md, "Labels").

`grade_text` never sees the prompt, so a row whose prompt numbers its options ("1. Paris", "(2) London") says
so in `template_metadata.option_labels`. `grade_request` does see it: for a row that does not say, it asks
`prompt_option_labels` for the scheme the prompt itself shows. Each option's text is looked up in the prompt
and the label written right before it is read ("1.", "1)", "(1)", "[1]", "a)", "A.", "Б)", "ア.", "①"); the
scheme is returned only when every option is found, in order, each with a label of the same shape, and the
labels count as one scheme counts:

- 1, 2, 3, ... -> "numbers";
- a, b, c, ... -> "lower";
- A, B, C, ... -> None (the default: nothing to say);
- one character of another script per option, all different -> those labels, in option order ("АБВГ");
  with a label of several characters the table knows (the Persian الف), the labels as a list.

Anything else (an option not found, a label missing or of another shape, labels out of order) -> None: the
row is graded as it would be without a prompt. Pure; cached per (prompt, option texts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...labels import LETTERS, SEVERAL_CHARACTERS

# The label right before an option's text, after a line start or a separator: an opening bracket or none, one
# token (a number of one or two digits, a label of several characters of the label table, or one letter of
# any script), a closing mark or none; spaces around.
_LABEL_BEFORE_RE = re.compile(
    r"(?:^|(?<=[\s;,，；、|:：]))(?P<open>[(\[（【]?)[ \t]*(?P<tok>\d{1,2}|"
    + "".join(re.escape(label) + "|" for label in sorted(SEVERAL_CHARACTERS, key=len, reverse=True))
    + r"[^\W\d_])[ \t]*(?P<close>[.)\]:：）】．、-]?)[ \t]*\Z"
)
_CIRCLED = frozenset("①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳")
_LOOKBACK = 12  # characters before an option's text where its label may stand
_MAX_HITS = 32  # occurrences of one option's text examined (a short text may occur often)
_LOWER = LETTERS.lower()


def prompt_option_labels(prompt: str, texts: Sequence[str]) -> str | list[str] | None:
    """The label scheme the prompt shows for options with these texts (in option order), or None."""
    if not prompt or len(texts) < 2 or any(not isinstance(t, str) or not t.strip() for t in texts):
        return None
    key = (prompt, tuple(t.strip() for t in texts))
    if key in _CACHE:
        return _CACHE[key]
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = found = _scheme(*key)
    return found


_CACHE: dict[tuple[str, tuple[str, ...]], str | list[str] | None] = {}  # (rollouts of one row share a prompt)


def _scheme(prompt: str, texts: tuple[str, ...]) -> str | list[str] | None:
    found: list[tuple[str, str, str]] = []  # (open, token, close) per option
    pos = 0
    for text in texts:
        hit = _labelled(prompt, text, pos)
        if hit is None:
            return None
        pos, label = hit
        found.append(label)
    if len({(o, c) for o, _, c in found}) != 1:
        return None  # (one shape for every label: "1." throughout, or "(a)" throughout)
    return _name(tuple(tok for _, tok, _ in found))


def _labelled(prompt: str, text: str, start: int) -> tuple[int, tuple[str, str, str]] | None:
    """(end, label) of the first occurrence of `text` at or after `start` with a label right before it."""
    i = prompt.find(text, start)
    for _ in range(_MAX_HITS):
        if i < 0:
            return None
        m = _LABEL_BEFORE_RE.search(prompt, max(0, i - _LOOKBACK), i)
        if m is not None and (m.group("open") or m.group("close") or m.group("tok") in _CIRCLED):
            return i + len(text), (m.group("open"), m.group("tok"), m.group("close"))
        i = prompt.find(text, i + 1)
    return None


def _name(tokens: tuple[str, ...]) -> str | list[str] | None:
    n = len(tokens)
    if all(t.isascii() and t.isdigit() for t in tokens):
        return "numbers" if tokens == tuple(str(k) for k in range(1, n + 1)) else None
    joined = "".join(tokens)
    if joined == _LOWER[:n]:
        return "lower"
    if (
        joined.isascii()
        or len(set(tokens)) != n
        or any(len(t) != 1 and t not in SEVERAL_CHARACTERS for t in tokens)
    ):
        return None  # (Latin capitals in order are the default; anything else ASCII is no scheme)
    return joined if all(len(t) == 1 for t in tokens) else list(tokens)
