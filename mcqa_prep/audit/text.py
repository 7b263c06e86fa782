"""What the audit compares, in one place: a question and its options as normalised words, and the question of
a dataset row cut out of its prompt.

Normalised words are what survives case, punctuation, whitespace, Unicode compatibility forms and an option's
own letter label: NFKC, casefolded, runs of word characters (`\\w+`), so "A) The Cell-Wall." and "the cell
wall" are the same three words. Options are compared as a set (their order and letters never count).

A dataset row does not hold its question apart: the prompt holds an instruction (the template), the question
and the options, each rendered its own way. `RowText` cuts the question out of it:

1. the option block: the earliest place where an option's words occur for the last time (options are rendered
   after the question) ends the question; the first option's own label just before it is dropped;
2. instruction sentences: a sentence of the row's own `template_metadata.template_prompt` (a placeholder in
   it matches a few words: "one of {letters}." is "one of A/B/C/D."), or one of the
   `Boilerplate` sentences learned from the first rows of the dataset (a sentence found before the option
   block of at least 2% of those rows, and of at least 10 of them), is not part of the question.

Benchmark items (convert's extraction) need none of this: their question and options are columns.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..prompt import messages
from ..validate.facts import walk_options

_WORD = re.compile(r"\w+")
# an option's own label: "A)", "(b)", "C.", "[D]", "1:" followed by a space; never "3.5" nor "A cell"
_LABEL = re.compile(r"^\s*[(\[]?(?:[A-Za-z]|\d{1,2})[)\].:]\s+")

BOILERPLATE_SAMPLE = 2000  # rows read to learn instruction sentences
BOILERPLATE_SHARE = 0.02  # ... a sentence in at least this share of them
BOILERPLATE_MIN_ROWS = 10  # ... and in at least this many


# ASCII text: every character but [A-Za-z0-9_] becomes a space, then lower() and split(): what `\w+` finds,
# in C and several times faster than the regular expression
_ASCII_WORDS = str.maketrans({c: " " for c in map(chr, range(1, 128)) if not (c.isalnum() or c == "_")})
_LABEL_OPEN = frozenset("([")
_LABEL_CLOSE = frozenset(").:]")


def words(text: str) -> list[str]:
    """The normalised words of a text (see the module docstring)."""
    if text.isascii():
        return text.translate(_ASCII_WORDS).lower().split()
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _unlabelled(text: str) -> str:
    """An option's text without its own letter label ("A) ", "(b) ", "C. ")."""
    if text[:1] in _LABEL_OPEN or text[1:2] in _LABEL_CLOSE or text[:1].isspace():
        m = _LABEL.match(text)
        if m is not None and m.end() < len(text):
            return text[m.end() :]
    return text


def option_words(text: str) -> list[str]:
    """An option's normalised words, its own letter label dropped."""
    return words(_unlabelled(text))


def options_words(texts: list[str]) -> list[list[str]]:
    """option_words of every option (ASCII ones tokenised in one pass)."""
    plain = [_unlabelled(t) for t in texts]
    joined = "\x00".join(plain)
    if joined.isascii():
        return [p.split() for p in joined.translate(_ASCII_WORDS).lower().split("\x00")]
    return [words(t) for t in plain]


def split_sentences(text: str) -> list[str]:
    """A text's sentences (ended by '. ', '? ', '! ') and lines, as raw text."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(line.replace("? ", ". ").replace("! ", ". ").split(". "))
    return out


def sentences(text: str) -> list[list[str]]:
    """The normalised words of each sentence (or line) of a text, empty ones left out."""
    out = []
    for s in split_sentences(text):
        if s:
            w = words(s)
            if w:
                out.append(w)
    return out


class Instructions(NamedTuple):
    """The instruction sentences of a template: exact ones, and (prefix, suffix, literal words) of those
    with a placeholder ("... one of {letters}."), which match a sentence that starts and ends with their
    literal text and is at most PLACEHOLDER_WORDS longer."""

    exact: frozenset[str]
    patterns: tuple[tuple[str, str, int], ...]

    def match(self, sentence: str, n_words: int) -> bool:
        if sentence in self.exact:
            return True
        for head, tail, literal in self.patterns:
            if (
                n_words <= literal + PLACEHOLDER_WORDS
                and sentence.startswith(head)
                and sentence.endswith(tail)
            ):
                return True
        return False


NO_INSTRUCTIONS = Instructions(frozenset(), ())
PLACEHOLDER_WORDS = 12
_PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][\w.]*\}(?!\})")


@functools.lru_cache(maxsize=256)
def template_instructions(template_prompt: str) -> Instructions:
    """The instruction sentences of a `template_prompt` (`{problem}` and other placeholders are not text)."""
    exact: set[str] = set()
    patterns: list[tuple[str, str, int]] = []
    for raw in split_sentences(template_prompt):
        pieces = [" ".join(words(p)) for p in _PLACEHOLDER.split(raw)]
        literal = sum(len(p.split()) for p in pieces)
        if len(pieces) == 1:
            if pieces[0]:
                exact.add(pieces[0])
        elif literal >= 3 and (pieces[0] or pieces[-1]):
            patterns.append((pieces[0], pieces[-1], literal))
    return Instructions(frozenset(exact), tuple(patterns))


class Parsed(NamedTuple):
    """What the audit reads of one dataset row."""

    question: list[str]  # the question's normalised words (instruction and option block cut)
    options: list[list[str]]  # each option's normalised words, in the row's order
    letters: list[str]  # the option letters, in the row's order
    gold: str | None  # the gold letter when it names an option


def row_options(data: Mapping[str, Any], hint: Any = None) -> tuple[list[str], list[str]]:
    """(letters, texts) of a row's options: the reader's hint for a Parquet row, else validate's walk."""
    if hint is not None:
        return list(hint[0]), list(hint[1])
    w = walk_options(data.get("options"))
    pairs = sorted(w.letters.items(), key=lambda kv: kv[1][0])
    return [L for L, _ in pairs], [v[2] for _, v in pairs]


def prompt_text(data: Mapping[str, Any]) -> str:
    """Every message text of the row's prompt, one per line (usually one user message)."""
    msgs = messages(data.get("responses_create_params")) or []
    return "\n".join(t for _, t in msgs if isinstance(t, str))


def _instructions(data: Mapping[str, Any]) -> Instructions:
    tm = data.get("template_metadata")
    tp = tm.get("template_prompt") if isinstance(tm, Mapping) else None
    return template_instructions(tp) if isinstance(tp, str) and tp else NO_INSTRUCTIONS


# the first option's own label at the end of the question part: "A: ", "(A) ", "A. ", "**A)** "
_TRAIL_LABEL = re.compile(r"(?<!\w)[(\[*]*([A-Za-z])[)\].:*]*\s*$")


class RowText:
    """Cuts rows into (question, options) with the instruction sentences it knows (see the module docstring)."""

    def __init__(self, boilerplate: Iterable[str] = ()) -> None:
        self.boilerplate = frozenset(boilerplate)

    def parse(self, data: Mapping[str, Any], hint: Any = None) -> Parsed:
        letters, texts = row_options(data, hint)
        opts = options_words(texts)
        gold = data.get("expected_answer")
        g = gold.strip().upper() if isinstance(gold, str) else None
        sents = self.question(prompt_text(data), texts, opts, letters)
        ins = _instructions(data)
        q: list[str] = []
        for s in sents:
            joined = " ".join(s)
            if joined not in self.boilerplate and not ins.match(joined, len(s)):
                q.extend(s)
        return Parsed(q, opts, letters, g if g in letters else None)

    @staticmethod
    def question(prompt: str, texts: list[str], opts: list[list[str]], letters: list[str]) -> list[list[str]]:
        """The sentences (normalised words) of the prompt before its option block."""
        cut, first = _raw_block(prompt, texts)
        if cut is not None:
            head = prompt[:cut]
            m = _TRAIL_LABEL.search(head, max(0, len(head) - 12))
            if m is not None and first is not None and m.group(1).upper() == letters[first].upper():
                head = head[: m.start()]
            return sentences(head)
        sents = sentences(prompt)  # the option texts are not in the prompt as such: find their words
        flat = [w for s in sents for w in s]
        cut_w, first = _option_block(flat, opts)
        kept: list[list[str]] = []
        n = 0
        for s in sents:
            if n >= cut_w:
                break
            kept.append(s if n + len(s) <= cut_w else s[: cut_w - n])
            n += len(s)
        if kept and first is not None and kept[-1] and kept[-1][-1] == letters[first].casefold():
            kept[-1] = kept[-1][:-1]
        return [s for s in kept if s]


def _raw_block(prompt: str, texts: list[str]) -> tuple[int | None, int | None]:
    """(where the option block starts in the prompt, which option opens it), when every option's text is in
    the prompt as it is; (None, None) otherwise."""
    best, first = len(prompt), None
    for i, t in enumerate(texts):
        t = t.strip()
        if not t:
            continue
        p = prompt.rfind(t)
        if p < 0:
            return None, None
        if p < best:
            best, first = p, i
    return (best, first) if first is not None else (None, None)


def _option_block(flat: list[str], opts: list[list[str]]) -> tuple[int, int | None]:
    """(word index where the option block starts, which option opens it); (len, None) when no option's words
    are found in the prompt."""
    text = " " + " ".join(flat) + " "
    best, first = len(text), None
    for i, o in enumerate(opts):
        if not o:
            continue
        p = text.rfind(" " + " ".join(o) + " ")
        if 0 <= p < best:
            best, first = p, i
    if first is None:
        return len(flat), None
    return text.count(" ", 0, best + 1) - 1, first


class Boilerplate:
    """Learns instruction sentences from the first rows of a dataset: a sentence found before the option block
    of many rows is an instruction, not a question (a question is rarely asked by 2% of the rows)."""

    def __init__(self, sample: int = BOILERPLATE_SAMPLE) -> None:
        self.sample = sample
        self.rows = 0
        self.counts: Counter[str] = Counter()

    @property
    def full(self) -> bool:
        return self.rows >= self.sample

    def add(self, data: Mapping[str, Any], hint: Any = None) -> None:
        letters, texts = row_options(data, hint)
        opts = options_words(texts)
        sents = RowText.question(prompt_text(data), texts, opts, letters)
        self.rows += 1
        self.counts.update({" ".join(s) for s in sents})

    def learned(self) -> list[str]:
        need = max(BOILERPLATE_MIN_ROWS, BOILERPLATE_SHARE * self.rows)
        return sorted(s for s, n in self.counts.items() if n >= need)
