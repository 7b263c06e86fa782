"""The rendered prompt's option block: found exactly, or refused with the reason; rewritten for a new order.

A row's prompt shows its options as a block of lines, one option per line, in the row's order:

    A: Nucleus                (A) Nucleus          1. Nucleus          أ) النواة
    B: Mitochondrion          (B) Mitochondrion    2. Mitochondrion    ب) الميتوكوندريا

The block is found when there is exactly one run of lines `P LABEL S TEXT` where TEXT is the option's text
exactly (the rest of its line but spaces), P and S are the same on every line (an indent, `(`, `**`, `Option `
before the label; `: `, `. `, `) ` after it), the labels follow one scheme in option order (the row's letters,
their lower case, 1 2 3, or a run of the label table, labels.py: أ ب ج, क ख ग, А Б В, ア イ ウ, 가 나 다, ① ② ③;
or `template_metadata.option_labels`), and the lines are separated alike (the same number of line
breaks). Anything else is refused, saying why: a text that does not end a line (options inline, or the text
changed in the prompt), lines out of order or labelled in two styles, or two such blocks (an example before
the question): rewriting a block that is not certainly the options would put the wrong text before a label.

Labels stay where they are (position p keeps its letter), so a new order only replaces each line's TEXT with
the text now at that position; the rest of the prompt is kept byte for byte.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..labels import SCRIPTS

MAX_PREFIX = 24  # characters before the label on a line (indent, bullet, "Option ")
MAX_MARK = 12  # characters between the label and the text (": ", ") ", ".** ")
_SPACE = " \t"


@dataclass(frozen=True)
class Block:
    """Where each option's text stands in the prompt, in option order, and the label scheme found."""

    spans: tuple[tuple[int, int], ...]
    scheme: str


@functools.cache
def _native_schemes() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, labels in order A, B, C, ...) of every run of option labels of the label table (labels.py)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for script in SCRIPTS:
        for k, run in enumerate(script.label_runs):
            name = script.name.lower().replace(" ", "_")
            out.append((name if k == 0 else f"{name}-{k + 1}", tuple(run)))
    return tuple(out)


def _schemes(letters: Sequence[str], given: Any) -> list[tuple[str, Callable[[int], str | None]]]:
    n = len(letters)
    out: list[tuple[str, Callable[[int], str | None]]] = [
        ("letters", lambda i: letters[i]),
        ("lower", lambda i: letters[i].lower()),
        ("upper", lambda i: letters[i].upper()),
        ("numbers", lambda i: str(i + 1)),
    ]
    for name, seq in _native_schemes():
        if len(seq) >= n:
            out.append((name, lambda i, seq=seq: seq[i]))  # type: ignore[misc]
    if isinstance(given, (str, tuple)) and len(given) == n and all(isinstance(x, str) and x for x in given):
        out.append(("option_labels", lambda i: given[i]))
    return out


@functools.lru_cache(maxsize=1024)
def _schemes_for(letters: tuple[str, ...], given: Any) -> list[tuple[str, Callable[[int], str | None]]]:
    """The schemes that label these options differently (the row's letters are their upper case, usually),
    once per letter set and given labels."""
    seen: set[tuple[str | None, ...]] = set()
    out = []
    for name, label in _schemes(letters, given):
        tokens = tuple(label(i) for i in range(len(letters)))
        if tokens not in seen:
            seen.add(tokens)
            out.append((name, label))
    return out


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_block(prompt: str, letters: Sequence[str], texts: Sequence[str], given: Any = None) -> Block | str:
    """The option block of `prompt` for options `letters`/`texts` (in the row's order), or why it cannot be
    found exactly. `given`: the row's template_metadata.option_labels, when it has them."""
    n = len(texts)
    if n < 2 or any(not t for t in texts):
        return "a block needs at least two options, each with a text"
    ends = [_line_ends(prompt, t) for t in texts]
    for letter, t, found in zip(letters, texts, ends, strict=True):
        if not found:
            return (
                f"the text of option {letter} ({_quote(t)}) does not end a line of the prompt: the options are not "
                "one per line, or the prompt shows another text"
            )
    schemes = _schemes_for(tuple(letters), tuple(given) if isinstance(given, list) else given)
    blocks: dict[tuple[tuple[int, int], ...], str] = {}
    for start in ends[0]:
        for spans, scheme in _blocks_at(prompt, start, texts, schemes):
            blocks.setdefault(spans, scheme)
    if not blocks:
        return (
            f"no run of option lines in the order {', '.join(letters)} with one label style and the same line "
            "breaks between them"
        )
    if len(blocks) > 1:
        return (
            f"the option block occurs {len(blocks)} times in the prompt: which one to rewrite is not certain"
        )
    spans, scheme = next(iter(blocks.items()))
    return Block(spans, scheme)


def _line_ends(prompt: str, text: str) -> list[int]:
    """Start offsets of every occurrence of `text` followed only by spaces up to a line break (or the end)."""
    out = []
    at = prompt.find(text)
    while at >= 0:
        rest = at + len(text)
        while rest < len(prompt) and prompt[rest] in _SPACE:
            rest += 1
        if rest == len(prompt) or prompt[rest] == "\n":
            out.append(at)
        at = prompt.find(text, at + 1)
    return out


def _blocks_at(
    prompt: str, start: int, texts: Sequence[str], schemes: list[tuple[str, Callable[[int], str | None]]]
) -> list[tuple[tuple[tuple[int, int], ...], str]]:
    """Every block whose first option text starts at `start` (one per label scheme and split that fits)."""
    line0 = prompt.rfind("\n", 0, start) + 1
    head = prompt[line0:start]
    if len(head) > MAX_PREFIX + MAX_MARK + 8:
        return []
    out = []
    for name, label in schemes:
        tok = label(0)
        if not tok:
            continue
        j = head.find(tok)
        while j >= 0:
            p, s = head[:j], head[j + len(tok) :]
            if (
                len(p) <= MAX_PREFIX
                and len(s) <= MAX_MARK
                and not (p and _is_word(p[-1]))
                and not (s and _is_word(s[0]))
                and "\n" not in s
            ):
                spans = _follow(prompt, start, texts, p, s, label)
                if spans is not None:
                    out.append((spans, name))
            j = head.find(tok, j + 1)
    return out


def _follow(
    prompt: str, start: int, texts: Sequence[str], p: str, s: str, label: Callable[[int], str | None]
) -> tuple[tuple[int, int], ...] | None:
    """The spans of every option text when lines 2..n follow line 1 as `p LABEL s TEXT`, else None."""
    spans = [(start, start + len(texts[0]))]
    breaks: int | None = None
    at = spans[0][1]
    for i in range(1, len(texts)):
        gap = at
        while gap < len(prompt) and prompt[gap] in " \t\n":
            gap += 1
        between = prompt[at:gap]
        k = between.count("\n")
        if k == 0 or (breaks is not None and k != breaks):
            return None
        breaks = k
        line = between.rfind("\n") + 1 + at
        tok = label(i)
        if tok is None:
            return None
        expect = p + tok + s
        if not prompt.startswith(expect, line) or not prompt.startswith(texts[i], line + len(expect)):
            return None
        begin = line + len(expect)
        spans.append((begin, begin + len(texts[i])))
        at = begin + len(texts[i])
    tail = at
    while tail < len(prompt) and prompt[tail] in _SPACE:
        tail += 1
    if tail < len(prompt) and prompt[tail] != "\n":
        return None
    return tuple(spans)


def rewrite(prompt: str, block: Block, texts: Sequence[str]) -> str:
    """The prompt with the text at each option position replaced by `texts` (the new order's texts)."""
    out = []
    at = 0
    for (a, b), t in zip(block.spans, texts, strict=True):
        out.append(prompt[at:a])
        out.append(t)
        at = b
    out.append(prompt[at:])
    return "".join(out)


def _quote(t: str, n: int = 40) -> str:
    return repr(t if len(t) <= n else t[: n - 1] + "…")


def labels_given(template_metadata: Any) -> Any:
    """The row's own option labels (template_metadata.option_labels), when it names them."""
    if isinstance(template_metadata, Mapping):
        return template_metadata.get("option_labels")
    return None
