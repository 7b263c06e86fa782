"""The row's options as the payload reader meets them: normalised texts, numeric values, content words.

An answer given as option text is read in four ways, strictest first: the same text (after
normalising case, spaces and markup); the same number (`0` for `0.0`, `8 m/s` for `8.0 m/s`); the text
at the start of the payload (`Paris, because ...`); a near-verbatim restatement (the same content
words, in any order). Computed lazily, cached per option set (rows are graded once per rollout).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import phrases
from .labels import DEFAULT, Labels
from .patterns import MARKUP_PRESENT_RE, STRIP_CHARS, WORD_RE
from .text import blank_markup, fold_width, norm

_NUMERIC_RE = re.compile(
    r"(?:about|approximately|approx\.?|roughly|~|≈)?\s*(?P<num>[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"(?:\s*/\s*\d+(?:\.\d+)?)?|[-−+]?\.\d+)(?:\s*(?:[x×]|\*)\s*10\s*\^?\s*\{?(?P<exp>[-−+]?\d+)\}?|e(?P<e>[-+]?\d+))?"
    r"\s*(?P<unit>[^\W\d][\w/°%·^\-. ]{0,15}|%|°\s*[cfk])?"
)
_CACHE_MAX = 2048
_NUMBER_START = frozenset("0123456789-−+.~≈a")


def parse_number(s: str) -> tuple[float, str] | None:
    """(value, unit) when `s` (normalised) is a number with an optional short unit, else None."""
    m = _NUMERIC_RE.fullmatch(s.strip(" .,;:!?"))
    if m is None:
        return None
    raw = m.group("num").replace(",", "").replace("−", "-").replace(" ", "")
    try:
        if "/" in raw:
            a, b = raw.split("/")
            value = float(a) / float(b)
        else:
            value = float(raw)
        exp = m.group("exp") or m.group("e")
        if exp:
            value *= 10.0 ** int(exp.replace("−", "-"))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    unit = (m.group("unit") or "").replace(" ", "").strip(".")
    return value, unit


def same_value(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def content_words(s: str) -> frozenset[str]:
    """The words of a normalised text that carry its meaning: stopwords dropped, plural -s folded."""
    out = set()
    for w in WORD_RE.findall(s):
        if w in phrases.STOPWORDS:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return frozenset(out)


def contains_words(hay: str, needle: str) -> bool:
    """`needle` occurs in `hay` with no letter or digit glued to either end."""
    start = 0
    while True:
        k = hay.find(needle, start)
        if k < 0:
            return False
        e = k + len(needle)
        if (k == 0 or not hay[k - 1].isalnum()) and (e == len(hay) or not hay[e].isalnum()):
            return True
        start = k + 1


class _Table:
    __slots__ = ("norms", "_numbers", "_words")

    def __init__(self, letters: Mapping[str, Any]) -> None:
        self.norms: list[tuple[str, str]] = []
        for letter, text in letters.items():
            if isinstance(text, str):
                if text.isascii() and MARKUP_PRESENT_RE.search(text) is None:
                    t = norm(text).strip(STRIP_CHARS)
                else:  # (folded like the response: full-width forms and 。 as ASCII)
                    t = norm(blank_markup(fold_width(text))).strip(STRIP_CHARS)
                if t:
                    self.norms.append((letter, t))
        self._numbers: list[tuple[str, tuple[float, str]]] | None = None
        self._words: list[tuple[str, frozenset[str]]] | None = None

    @property
    def numbers(self) -> list[tuple[str, tuple[float, str]]]:
        """(letter, (value, unit)) of the options that are a number with an optional unit."""
        if self._numbers is None:
            parsed = ((lt, parse_number(t)) for lt, t in self.norms if t[:1] in _NUMBER_START)
            self._numbers = [(lt, v) for lt, v in parsed if v is not None]
        return self._numbers

    @property
    def words(self) -> list[tuple[str, frozenset[str]]]:
        if self._words is None:
            self._words = [(lt, content_words(t)) for lt, t in self.norms]
        return self._words


_TABLES: dict[tuple[Any, ...], _Table] = {}


class Options:
    """The options of one row; the tables are built on first use and shared by equal option sets."""

    __slots__ = ("letters", "labels", "_table")

    def __init__(self, letters: Mapping[str, Any], labels: Labels = DEFAULT):
        self.letters = letters
        self.labels = labels  # how the question labels its options (labels.py)
        self._table: _Table | None = None

    @property
    def table(self) -> _Table:
        if self._table is None:
            try:
                key: tuple[Any, ...] | None = tuple(self.letters.items())
                hit = _TABLES.get(key)  # type: ignore[arg-type]
            except TypeError:  # unhashable option values
                key, hit = None, None
            if hit is None:
                hit = _Table(self.letters)
                if key is not None:
                    if len(_TABLES) >= _CACHE_MAX:
                        _TABLES.clear()
                    _TABLES[key] = hit
            self._table = hit
        return self._table

    @property
    def norms(self) -> list[tuple[str, str]]:
        return self.table.norms

    def equal(self, core: str) -> str | None:
        """The option whose text is `core` (normalised), or whose number is the number `core` states."""
        nc = norm(core)
        for letter, ot in self.table.norms:
            if nc == ot:
                return letter
        if nc[:1] in _NUMBER_START and self.table.numbers:
            return self.same_number(nc)
        return None

    def same_number(self, nc: str) -> str | None:
        parsed = parse_number(nc)
        if parsed is None:
            return None
        value, unit = parsed
        hits = [
            lt
            for lt, (v, u) in self.table.numbers
            if same_value(v, value) and (not unit or not u or u == unit)
        ]
        if len(hits) > 1 and unit:
            hits = [lt for lt, (v, u) in self.table.numbers if same_value(v, value) and u == unit]
        return hits[0] if len(hits) == 1 else None

    def starts_with(self, nc: str) -> str | None:
        """The option whose text starts `nc` and is the only option text in it (`Paris, because ...`)."""
        best = None
        for letter, ot in self.table.norms:
            if nc.startswith(ot) and (len(nc) == len(ot) or not nc[len(ot)].isalnum()):
                if best is None or len(ot) > len(best[1]):
                    best = (letter, ot)
        if best is None:
            return None
        for letter, ot in self.table.norms:
            if letter != best[0] and ot not in best[1] and contains_words(nc, ot):
                return None
        return best[0]

    def inside(self, nc: str) -> set[str]:
        """Letters of the option texts that occur in `nc` as whole words (texts inside longer option
        texts that also occur are not counted: "Vitamin B" inside "Vitamin B12")."""
        found = [(lt, ot) for lt, ot in self.table.norms if contains_words(nc, ot)]
        return {lt for lt, ot in found if not any(ot != o2 and ot in o2 for _, o2 in found)}

    def restated(self, nc: str) -> str | None:
        """The one option that `nc` restates near-verbatim: at least 80% of the option's content words,
        at most a third of the payload's words new, and clearly closer than any other option."""
        q = content_words(nc)
        if len(q) < 2:
            return None
        scored = []
        for letter, o in self.table.words:
            if len(o) < 2:
                continue
            inter = len(o & q)
            cover, precision = inter / len(o), inter / len(q)
            scored.append((min(cover, precision), cover, precision, letter))
        if not scored:
            return None
        scored.sort(reverse=True)
        best = scored[0]
        if best[1] < 0.8 or best[2] < 0.66:
            return None
        if len(scored) > 1 and scored[1][0] > best[0] - 0.25:
            return None
        return best[3]

    def is_option_phrase(self, phrase: str) -> bool:
        """True when a phrase (a refusal such as "none of the above") is, or is inside, an option text."""
        p = norm(phrase)
        return any(contains_words(ot, p) for _, ot in self.table.norms)


def clear_cache() -> None:
    _TABLES.clear()
