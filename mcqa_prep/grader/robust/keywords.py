"""Where to look: every anchor and commitment starts at a literal keyword ("answer", "答案", "choose",
"correct", "leaving", ...). This module maps each keyword to what to try there and finds the keywords of a
stretch of text quickly; `candidates.py` tries them."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from . import patterns, phrases
from .derive import trie_pattern

# What a keyword can start.
ANCHOR = "anchor"  # an answer anchor with a payload
COMMIT = "commit"  # a commitment phrase with a letter slot
VERDICT = "verdict"  # "B is the correct answer", found from the verdict word backwards
ELIMINATION = "elimination"  # "leaving C", "only D remains"
CJK_VERDICT = "cjk_verdict"  # "选项B正确"
ORDINAL = "ordinal"  # "that's the second option"

# Anchor kinds.
PLAIN, QUALIFIED, CHOSEN, OTHER = "plain", "qualified", "chosen", "other"


class Handler(NamedTuple):
    what: str
    tail: re.Pattern[str] | None = None
    kind: str = ""
    before: re.Pattern[str] | None = None


def _table() -> dict[str, list[Handler]]:
    table: dict[str, list[Handler]] = {}

    def add(kw: str, h: Handler) -> None:
        table.setdefault(kw, []).append(h)

    for kw in phrases.ANSWER_NOUNS:
        add(kw, Handler(ANCHOR, patterns.ANSWER_TAIL_RE, PLAIN))
    add("ans", Handler(ANCHOR, patterns.ANS_TAIL_RE, PLAIN))
    for kw, tail in patterns.QUALIFIED_TAIL_RES.items():
        add(kw, Handler(ANCHOR, tail, QUALIFIED))
    for kw, tail in patterns.CHOSEN_TAIL_RES.items():
        add(kw, Handler(ANCHOR, tail, CHOSEN))
    for kw, tail, before in patterns.OTHER_ANCHORS:
        add(kw, Handler(ANCHOR, tail, OTHER, before))
    for kw in phrases.OPTION_NOUNS:
        add(kw, Handler(COMMIT, patterns.OPTION_IS_CORRECT_RE, "option_correct"))
    for kw in phrases.SELF_CORRECTION_WORDS:
        add(kw, Handler(COMMIT, patterns.SELF_CORRECTION_RE, "self_correction"))
    for kw in phrases.CHOOSE_VERBS:
        add(kw, Handler(COMMIT, patterns.CHOOSE_RE, "choose", patterns.FIRST_PERSON_BEFORE_RE))
    for kw in phrases.IT_IS_PHRASES:
        add(kw, Handler(COMMIT, patterns.IT_IS_RE, "it_is"))
    for kw in phrases.MATCH_PHRASES:
        add(kw, Handler(COMMIT, patterns.MATCH_RE, "it_is"))
    for kw in patterns.VERDICT_KEYWORDS + phrases.VERDICT_NOUNS_ALONE:
        if all(h.what != VERDICT for h in table.get(kw, ())):
            add(kw, Handler(VERDICT))
    for kw in patterns.ELIMINATION_KEYWORDS:
        add(kw, Handler(ELIMINATION))
    for kw in patterns.CJK_VERDICT_KEYWORDS:
        add(kw, Handler(CJK_VERDICT))
    for kw in patterns.ORDINAL_KEYWORDS:
        add(kw, Handler(ORDINAL))
    return table


TABLE = _table()
KW_MAX = max(map(len, TABLE)) + 2  # longer than any keyword
_ASCII_KWS = [kw for kw in TABLE if kw.isascii()]
KW_RE_ASCII = re.compile(trie_pattern(_ASCII_KWS))
KW_RE_ALL = re.compile(trie_pattern(list(TABLE)))

# ASCII text: every character but letters, digits and the apostrophe becomes a space before splitting
# (bytes.translate on the ASCII-encoded text: a plain 256-byte table, several times faster than str's).
TOKEN_TABLE = bytes(c if (chr(c).isalnum() or chr(c) == "'") else 32 for c in range(256))
_BY_FIRST_WORD: dict[bytes, list[str]] = {}
for _kw in _ASCII_KWS:
    _first = _kw.split()[0].rstrip(",—–-")
    for _form in (_first, _first + "s", _first + "es"):
        if _form:
            _BY_FIRST_WORD.setdefault(_form.encode("ascii"), []).append(_kw)
FIRST_WORDS = frozenset(_BY_FIRST_WORD)


def keyword_hits(low: str, lo: int, hi: int, ascii_text: bool) -> list[tuple[int, str]]:
    """(position, keyword) of every keyword starting in [lo, hi), in text order.

    ASCII text: the words present are collected first (translate + split at C speed) and only keywords
    whose first word occurs are searched with str.find. Other scripts have no spaces to split on: one
    prefix-factored regex over all keywords."""
    end = min(len(low), hi + KW_MAX)
    if not ascii_text:
        return [(m.start(), m.group()) for m in KW_RE_ALL.finditer(low, lo, end) if m.start() < hi]
    present = FIRST_WORDS.intersection(low[lo:end].encode("ascii").translate(TOKEN_TABLE).split())
    hits: list[tuple[int, str]] = []
    seen: set[str] = set()
    for w in present:
        for kw in _BY_FIRST_WORD[w]:
            if kw in seen:
                continue
            seen.add(kw)
            k = low.find(kw, lo, end)
            while 0 <= k < hi:
                hits.append((k, kw))
                k = low.find(kw, k + 1, end)
    hits.sort()
    return hits


def handlers(kw: str) -> list[Handler]:
    return TABLE[kw]


def words_present(low_ascii: str) -> frozenset[bytes] | Any:
    """The keyword first-words present in an ASCII stretch (the fast path checks free payloads)."""
    return FIRST_WORDS.intersection(low_ascii.encode("ascii").translate(TOKEN_TABLE).split())
