"""How a table of `phrases.py` becomes a pattern or a cheap test: alternations of words, prefix tries,
the literal prefixes every match of a pattern starts with (from which the cheap tests before the patterns
are derived), case variants. Used by `patterns.py` and `keywords.py`."""

from __future__ import annotations

import re

# (the standard library's own regex parser: the cheap tests are derived from the tables' patterns)
from re import _parser as _sre  # type: ignore[attr-defined]
from typing import Any

from ...retrie import trie_alternation


def alt(words: tuple[str, ...] | list[str], *, escape: bool = True) -> str:
    """An alternation of words, longest first; multi-word entries match any whitespace between words."""
    items = sorted(set(words), key=len, reverse=True)
    if escape:
        items = [r"\s+".join(re.escape(w) for w in item.split()) for item in items]
    return "(?:" + "|".join(items) + ")"


def is_latin(word: str) -> bool:
    return all(ch < "\u0250" for ch in word if ch.isalpha())


def literal_prefixes(fragment: str, limit: int = 12) -> set[str]:
    """Patterns one of which every match of the regex `fragment` starts with: its literal characters
    (escaped) and runs of whitespace (`\\s+`), up to the first thing that is neither (branches and
    optional groups give several; a fragment that can start with anything gives ""). How the cheap tests
    before a table's pattern are derived from the table."""
    return _prefixes(_sre.parse(fragment), {""}, limit)


_SPACE = [(_sre.IN, [(_sre.CATEGORY, _sre.CATEGORY_SPACE)])]


def _prefixes(items: Any, opens: set[str], limit: int) -> set[str]:
    done: set[str] = set()
    for op, av in items:
        if not opens:
            break
        if op is _sre.LITERAL:
            opens = {o + re.escape(chr(av)) for o in opens}
        elif op is _sre.BRANCH:
            opens = set().union(*(_prefixes(branch, opens, limit) for branch in av[1]))
        elif op is _sre.SUBPATTERN:
            opens = _prefixes(av[-1], opens, limit)
        elif op is _sre.MAX_REPEAT and av[0] >= 1 and list(av[2]) == _SPACE:
            opens = {o + r"\s+" for o in opens}
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] == 0:
            done |= _prefixes(av[2], opens, limit)  # (through the optional part: its prefixes end there)
        else:  # (not a literal: every prefix ends here)
            done |= opens
            opens = set()
        done |= {o for o in opens if len(o) >= limit}
        opens = {o for o in opens if len(o) < limit}
    return done | opens


def coordinators(words: tuple[str, ...], tail: bool) -> str:
    """Coordinator marks as they are; words as whole words (`tail`: only their start is bounded)."""
    out = []
    for w in sorted(words, key=len, reverse=True):
        if w[:1].isalpha() and w.isascii():
            out.append(r"\b" + r"\s+".join(map(re.escape, w.split())) + ("" if tail else r"\b,?"))
        else:
            out.append(re.escape(w))
    return "(?:" + "|".join(out) + ")"


def case_variants(prefix: str) -> set[str]:
    """A prefix pattern (escaped literals and `\\s+`) as written in lower case, capitalised, in title case and
    in capitals (the usual cases of a line opening), without IGNORECASE."""
    words = [re.sub(r"\\(.)", r"\1", w) for w in prefix.split(r"\s+")]
    text = " ".join(words)
    return {
        r"\s+".join(map(re.escape, v.split(" ")))
        for v in (text, text.capitalize(), text.title(), text.upper())
    }


def trie_pattern(words: list[str]) -> str:
    """A regex matching any of `words` (longest first), factored by common prefixes: a flat alternation
    of ~80 literals costs the engine ~80 tests per position, a trie a few."""
    return trie_alternation(words, escape=re.escape)
