"""`lenient_answer_colon` and `lenient_answer_colon_md` (grading.md), NeMo Gym 0.7.0 compatible.

Speed: candidate `answer` positions are found with str.find on the lower-cased text and the fixed patterns
are then matched *anchored* at those positions. That gives the same matches as scanning the whole text
(the argument is in `_iter_answer_matches`; tests/test_grader_properties.py checks it against the
whole-text reference patterns) at a fraction of the cost.
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from ..records import STATUS_AMBIGUOUS, STATUS_NO_ANSWER, STATUS_OK, STATUS_OUT_OF_RANGE
from .base import Extraction
from .boxed import extract_strict, strip_text_wrappers
from .custom_regex import LOCALISED_SPACED
from .letters import LOCALISED as LOCALISED_SPACED_KEYS
from .letters import letter_for_text
from .nfkc import nfkc

RULE_COLON = "answer_colon"
RULE_MD = "answer_colon_md"
RULE_PREFIX = "answer_prefix"

# lenient_answer_colon: the FIRST `answer : payload` (whitespace incl. newlines around the colon).
_COLON_TAIL = r"\s*:\s*(.+)"
_COLON = re.compile("answer" + _COLON_TAIL, re.IGNORECASE)
# lenient_answer_colon_md, anchored at the `answer` word; the optional leading `*`/`_` run (up to two) of
# the reference pattern is added back to the match start in `_md_payloads`.
_MD_TAIL = r"[*_]{0,2}\s*:[*_\s]{0,2}(.+)"
_MD = re.compile("answer" + _MD_TAIL, re.IGNORECASE)
# The whole-text form of the md pattern; kept as the reference the fast path is tested against.
MD_REFERENCE = re.compile(r"[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}(.+)", re.IGNORECASE | re.MULTILINE)
COLON_REFERENCE = _COLON
# The same patterns from their `w` on, one per case of the `w`: a literal first character lets re scan for it
# with its fast literal search (`_iter_answer_matches`).
_FROM_W = {
    pattern: (re.compile("w[Ee][Rr]" + tail), re.compile("W[Ee][Rr]" + tail))
    for pattern, tail in ((_COLON, _COLON_TAIL), (_MD, _MD_TAIL))
}

_CHOICE_LETTER = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")
_LIST_SEPARATOR = re.compile(r"(?:\s*[/|&,;]\s*|\s+(?:or|and)\s+|\s+)", re.IGNORECASE)
_LEADING_LETTER = re.compile(r"([a-zA-Z])(?![a-zA-Z0-9])")
_STANDALONE_UPPER = re.compile(r"\b[A-Z]\b")
_PAYLOAD_STRIP = "*_` \t\n\r.,;:"


def normalize_payload(s: str) -> str:
    """NFKC, localised letters -> Latin (space-prefixed), stripped: the captured-string normalisation."""
    return unicodedata.normalize("NFKC", s).translate(LOCALISED_SPACED).strip()


def _iter_answer_matches(text: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """Non-overlapping matches of `pattern` (`_COLON` or `_MD`: the literal `answer`, IGNORECASE, then a tail
    without letters) in order, as `pattern.finditer(text)` gives them.

    The only non-ASCII character re's IGNORECASE folds onto a letter of "answer" is U+017F (long s; the
    property tests check every code point), so without one a match is ASCII `answer` in any case: its `w` or
    `W` starts a match of the same tail behind `w[Ee][Rr]` or `W[Ee][Rr]`, three characters after the start.
    Those two patterns have a literal first character, which re scans for with its fast literal search (one
    pass over a multilingual text costs a third of lower-casing it, and a quarter of an IGNORECASE search);
    each candidate is confirmed by `pattern` itself, so a candidate that is not a match costs a check, never a
    wrong answer.
    """
    if "\u017f" in text:
        yield from pattern.finditer(text)
        return
    pats = _FROM_W[pattern]
    # per `w` pattern: its next match of `pattern` starting at or after `pos`; None once it has no more
    nxt: list[re.Match[str] | None] = [_next_match(text, w, pattern, 0) for w in pats]
    pos = 0
    while True:
        for i, m in enumerate(nxt):
            if m is not None and m.start() < pos:
                nxt[i] = _next_match(text, pats[i], pattern, pos)
        found = [m for m in nxt if m is not None]
        if not found:
            return
        m = min(found, key=_start) if len(found) > 1 else found[0]
        yield m
        pos = m.end()


_start = operator.methodcaller("start")


def _next_match(text: str, w: re.Pattern[str], pattern: re.Pattern[str], pos: int) -> re.Match[str] | None:
    """The first match of `pattern` at or after pos whose `w` the pattern `w` finds, else None."""
    at = pos + 3
    while True:
        found = w.search(text, at)
        if found is None:
            return None
        q = found.start() - 3
        if text[q : q + 3].lower() == "ans":
            m = pattern.match(text, q)
            if m is not None:
                return m
        at = found.start() + 1


def extract_answer_colon(text: str, letters: Mapping[str, Any], template_metadata: Any = None) -> Extraction:
    """lenient_answer_colon: the first `Answer:` line; a single allowed letter, else an option's text."""
    m = next(_iter_answer_matches(text, _COLON), None)
    if m is None:
        return Extraction(None, STATUS_NO_ANSWER, RULE_COLON, message="no 'Answer:' in the text")
    span = m.span(1)
    payload = strip_text_wrappers(m.group(1)).strip()
    if len(payload) == 1 and payload.isalpha():
        up = payload.upper()
        if up in letters:
            return Extraction(up, STATUS_OK, RULE_COLON, span)
    by_text = letter_for_text(payload, letters)
    if by_text is not None:
        return Extraction(by_text, STATUS_OK, RULE_COLON, span)
    if len(payload) == 1 and payload.isalpha():
        return Extraction(
            None, STATUS_OUT_OF_RANGE, RULE_COLON, span, message=f"letter {payload.upper()} is not an option"
        )
    return Extraction(
        None, STATUS_NO_ANSWER, RULE_COLON, span, message="the 'Answer:' payload names no option"
    )


# ---------------------------------------------------------------------------------------------------------
# lenient_answer_colon_md


@functools.lru_cache(maxsize=1024)
def _prefix_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(re.escape(prefix) + r"\s*", re.IGNORECASE)


def _md_entries(nt: str, prefix: str | None) -> list[tuple[int, str, int, int]]:
    """(start, rule, payload start, payload end) for every md `Answer:` match and every prefix occurrence,
    sorted by start (stable: an `Answer:` match sorts before a prefix match at the same position)."""
    found: list[tuple[int, str, int, int]] = []
    for m in _iter_answer_matches(nt, _MD):
        a = m.start()
        start = a
        # the optional leading run of up to two `*`/`_`; it cannot reach into the previous match, which
        # ends at a newline
        while start > a - 2 and start > 0 and nt[start - 1] in "*_":
            start -= 1
        found.append((start, RULE_MD, m.start(1), m.end(1)))
    if prefix:
        nprefix = unicodedata.normalize("NFKC", prefix)
        pat = _prefix_pattern(nprefix)
        for m in _iter_prefix_matches(nt, nprefix, pat):
            end = m.end()
            line_end = nt.find("\n", end)
            found.append((m.start(), RULE_PREFIX, end, len(nt) if line_end < 0 else line_end))
    if prefix and len(found) > 1:
        found.sort(key=lambda item: item[0])
    return found


def _md_payloads(nt: str, prefix: str | None) -> list[tuple[int, str, int, str]]:
    """`_md_entries` with each payload's text."""
    return [(start, rule, a, nt[a:b]) for start, rule, a, b in _md_entries(nt, prefix)]


# The non-ASCII characters re's IGNORECASE takes for an ASCII letter (dotted capital I, dotless i, long s,
# Kelvin sign); tests/test_grader_properties.py checks the list against every code point.
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def _iter_prefix_matches(nt: str, nprefix: str, pat: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """Non-overlapping matches of `pat` (the prefix, IGNORECASE, then `\\s*`) in order, as pat.finditer(nt)."""
    anchor = _prefix_anchor(nprefix)
    if anchor is not None:
        # An ASCII character that is no letter matches only itself under IGNORECASE, and every match holds
        # it `k` characters after its start: str.find walks its occurrences, each confirmed by `pat`.
        k, ch = anchor
        find, match = nt.find, pat.match
        at = find(ch, k)
        while at >= 0:
            m = match(nt, at - k)
            if m is None:
                at = find(ch, at + 1)
                continue
            yield m
            end = m.end()
            at = find(ch, max(end + k, at + 1))
        return
    # An ASCII prefix: where lower() keeps the length and no character folds onto an ASCII letter, IGNORECASE
    # equals lower() equality, so str.find on the lower-cased text gives the candidates.
    low = nt.lower() if nprefix.isascii() else ""
    if not low or len(low) != len(nt) or (not nt.isascii() and any(c in nt for c in FOLDS_TO_ASCII)):
        yield from pat.finditer(nt)
        return
    lp = nprefix.lower()
    pos = low.find(lp)
    while pos >= 0:
        m = pat.match(nt, pos)
        if m is None:  # cannot happen for an ASCII prefix, kept for safety
            pos = low.find(lp, pos + 1)
            continue
        yield m
        pos = low.find(lp, m.end() if m.end() > pos else pos + 1)


@functools.lru_cache(maxsize=1024)
def _prefix_anchor(nprefix: str) -> tuple[int, str] | None:
    """(offset, character) of the prefix's rarest-looking ASCII non-letter (punctuation first, then a digit,
    then a space or other whitespace), or None when it has none."""
    best: tuple[int, int, str] | None = None
    for k, ch in enumerate(nprefix):
        if not ch.isascii() or ch.isalpha():
            continue
        rank = 2 if ch.isspace() else 1 if ch.isdigit() else 0
        if best is None or rank < best[0]:
            best = (rank, k, ch)
    return None if best is None else (best[1], best[2])


def _is_ambiguous(candidate: str, letters: Mapping[str, Any]) -> bool:
    prev: tuple[str, int] | None = None
    for m in _CHOICE_LETTER.finditer(candidate):
        up = m.group(1).upper()
        if up not in letters:
            continue
        if prev is not None and prev[0] != up and _LIST_SEPARATOR.fullmatch(candidate, prev[1], m.start(1)):
            return True
        prev = (up, m.end(1))
    return False


def choice_letter(payload: str, letters: Mapping[str, Any]) -> tuple[str | None, str]:
    """The letter one md payload names, and a status when it names none (ambiguous/out_of_range/no_answer)."""
    cand = normalize_payload(payload).strip().strip(_PAYLOAD_STRIP)
    if _is_ambiguous(cand, letters):
        return None, STATUS_AMBIGUOUS
    if len(cand) == 1:
        letter: str | None = cand
    else:
        m = _LEADING_LETTER.match(cand)
        if m is not None:
            letter = m.group(1)
        else:
            letter = None
            for m in _STANDALONE_UPPER.finditer(cand):
                letter = m.group()
    if not letter:
        return None, STATUS_NO_ANSWER
    up = letter.upper()
    if up in letters:
        return up, STATUS_OK
    return None, (STATUS_OUT_OF_RANGE if up.isalpha() else STATUS_NO_ANSWER)


def _letter_status(letter: str | None, letters: Mapping[str, Any]) -> tuple[str | None, str]:
    if not letter:
        return None, STATUS_NO_ANSWER
    up = letter.upper()
    if up in letters:
        return up, STATUS_OK
    return None, (STATUS_OUT_OF_RANGE if up.isalpha() else STATUS_NO_ANSWER)


def _shared_line_ends(entries: list[tuple[int, str, int, int]]) -> dict[int, _Suffixes]:
    """A suffix reader per line end shared by two or more prefix payloads (a prefix repeated along a line:
    each occurrence's payload runs to the line's end, and reading them one by one is quadratic)."""
    ends: dict[int, int] = {}
    for _s, rule, _a, b in entries:
        if rule == RULE_PREFIX:
            ends[b] = ends.get(b, 0) + 1
    return {b: _Suffixes() for b, n in ends.items() if n > 1}


_NON_SPACE = re.compile(r"\S")
_NON_STRIP = re.compile("[^" + re.escape(_PAYLOAD_STRIP) + "]")
_LOCALISED_RE = re.compile("[" + "".join(re.escape(c) for c in LOCALISED_SPACED_KEYS) + "]")


class _Suffixes:
    """`choice_letter` of every payload that ends at one line end, in O(log n) each after one linear pass.

    Those payloads are suffixes of one NFKC-normalised string, and a suffix of a normalised string is
    normalised (composition and reordering never look to the left of a starter), so each payload's candidate
    is a slice of one translated string q: from its own first kept character to a common end b2. Everything
    `choice_letter` reads is then the same in the slice as in q except at the slice's first character (a
    look-behind or word boundary there sees the start of the string), which is checked on its own.
    tests/test_grader_properties.py checks it against `choice_letter` on every suffix."""

    def __init__(self) -> None:
        self.base = -1

    def _build(self, seg: str, letters: Mapping[str, Any]) -> None:
        q = seg.translate(LOCALISED_SPACED)
        self.q = q
        self.localised = [m.start() for m in _LOCALISED_RE.finditer(seg)]  # each becomes two characters
        self.b1 = len(q.rstrip())
        self.b2 = len(q[: self.b1].rstrip(_PAYLOAD_STRIP))
        self.non_space = [m.start() for m in _NON_SPACE.finditer(q, 0, self.b1)]
        self.non_strip = [m.start() for m in _NON_STRIP.finditer(q, 0, self.b1)]
        self.choices = [
            (m.start(1), m.end(1), m.group(1).upper())
            for m in _CHOICE_LETTER.finditer(q, 0, self.b2)
            if m.group(1).upper() in letters
        ]
        self.starts = [c[0] for c in self.choices]
        n = len(self.choices)
        self.any_ambiguous = [False] * (n + 1)  # [k]: some pair of neighbours from the k-th on is ambiguous
        for k in range(n - 2, -1, -1):
            self.any_ambiguous[k] = self.any_ambiguous[k + 1] or self._ambiguous(
                self.choices[k], self.choices[k + 1]
            )
        last = None
        for last in _STANDALONE_UPPER.finditer(q, 0, self.b2):  # noqa: B007
            pass
        self.last_upper = -1 if last is None else last.start()

    def _ambiguous(self, prev: tuple[int, int, str], cur: tuple[int, int, str]) -> bool:
        return prev[2] != cur[2] and _LIST_SEPARATOR.fullmatch(self.q, prev[1], cur[0]) is not None

    def choice(self, nt: str, a: int, b: int, letters: Mapping[str, Any]) -> tuple[str | None, str]:
        """choice_letter(nt[a:b], letters) for a payload ending at this reader's line end b (no newline
        between a and b: every such payload starts on b's line, which the first call reads)."""
        if self.base < 0:
            self.base = nt.rfind("\n", 0, b) + 1
            self._build(nt[self.base : b], letters)
        i = a - self.base
        o = i + bisect.bisect_left(self.localised, i)
        q, b2 = self.q, self.b2
        k = bisect.bisect_left(self.non_space, o)
        if k == len(self.non_space):
            return None, STATUS_NO_ANSWER
        k = bisect.bisect_left(self.non_strip, self.non_space[k])
        if k == len(self.non_strip):
            return None, STATUS_NO_ANSWER
        a2 = self.non_strip[k]  # the candidate is q[a2:b2]
        k = bisect.bisect_left(self.starts, a2)
        ambiguous = self.any_ambiguous[k]
        if (k == len(self.starts) or self.starts[k] != a2) and _CHOICE_LETTER.match(q[a2 : min(a2 + 2, b2)]):
            up = q[a2].upper()  # a letter at the candidate's start, glued to a letter before it in q
            if up in letters and k < len(self.choices):
                ambiguous = ambiguous or self._ambiguous((a2, a2 + 1, up), self.choices[k])
        if ambiguous:
            return None, STATUS_AMBIGUOUS
        if b2 - a2 == 1:
            return _letter_status(q[a2], letters)
        m = _LEADING_LETTER.match(q, a2, b2)
        if m is not None:
            return _letter_status(m.group(1), letters)
        if self.last_upper >= a2:
            return _letter_status(q[self.last_upper], letters)
        m = _STANDALONE_UPPER.match(q[a2 : min(a2 + 2, b2)])
        return _letter_status(m.group() if m is not None else None, letters)


def md_text(text: str, prefix: str | None, *, lazy: bool = True) -> tuple[str, bool]:
    """(the text the md rule reads, whether it is the text itself, so that spans index it).

    The rule reads the NFKC form of the text. Normalising a whole multilingual response costs most of the
    mode's time (CJK punctuation, Indic vowel signs: a full normalisation), but only the lines a match can
    touch decide anything. NFKC never composes across a newline, so NFKC(text) is the NFKC of each line,
    joined. A match starts on a line whose NFKC form holds "answer": the line holds it (lower-cased), or
    holds a character whose decomposition brings one of its letters (`_answer_letter_sources`); it runs on
    through whitespace-only lines to its colon, and its payload ends at most two lines further. Those lines are
    normalised, the others kept as they are: the same matches and payloads as on NFKC(text), at other
    offsets (no spans then, as for any text NFKC changes). With an answer_prefix the whole text is
    normalised (the same scheme for a prefix measured no faster: its characters, the space and the colon
    among them, have sources common in CJK and Turkish text), word by word where a word can change
    (`nfkc.nfkc`: exactly NFKC(text)). `lazy=False`: the plain whole-text NFKC (the tests' reference)."""
    if not lazy:
        nt = unicodedata.normalize("NFKC", text)
        return nt, nt == text
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text, True
    if prefix:
        nt = nfkc(text)
        return nt, nt == text
    bmp, astral_blocks, astral = _answer_letter_sources()
    lines = text.split("\n")
    low = text.lower()
    if len(low) == len(text):  # offsets in low are offsets in text
        at = [*_occurrences(low, "answer"), *(m.start() for m in bmp.finditer(text))]
        starts = _line_numbers(text, at)
    else:
        starts = {i for i, line in enumerate(lines) if "answer" in line.lower() or bmp.search(line)}
    starts |= _line_numbers(text, [m.start() for m in astral_blocks.finditer(text) if m.group() in astral])
    near: set[int] = set()
    for s in starts:  # the line of a possible match, the blank lines after it, its colon's line, two more
        j = s + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        near.update(range(s, min(j + 3, len(lines))))
    for i in near:
        if not lines[i].isascii():
            lines[i] = unicodedata.normalize("NFKC", lines[i])
    return "\n".join(lines), False


def _line_numbers(text: str, positions: list[int]) -> set[int]:
    """The 0-based line of each position, newlines counted once over the text (not once per position)."""
    lines: set[int] = set()
    line = prev = 0
    for p in sorted(positions):
        line += text.count("\n", prev, p)
        prev = p
        lines.add(line)
    return lines


def _occurrences(s: str, sub: str) -> Iterator[int]:
    at = s.find(sub)
    while at >= 0:
        yield at
        at = s.find(sub, at + 1)


@functools.cache
def _answer_letter_sources() -> tuple[re.Pattern[str], re.Pattern[str], frozenset[str]]:
    """The non-ASCII characters whose NFKC form holds a letter of "answer" in either case (full-width and
    mathematical letters, ligatures, long s, ...; of FOLDS_TO_ASCII, the other characters re's IGNORECASE
    takes for ASCII letters, none stands for one of them). Those of the Basic Multilingual Plane as a
    character class (re searches it with a bitmap); the others as a set, found through a class of the few
    256-character blocks that hold them (a long class of astral characters is searched item by item).
    Built once per process from this Python's Unicode tables (~0.2 s)."""
    wanted = set("answerANSWER")
    cps = [
        chr(cp)
        for cp in range(0x80, 0x110000)
        if unicodedata.decomposition(chr(cp))
        and not wanted.isdisjoint(unicodedata.normalize("NFKC", chr(cp)))
    ]
    bmp = "".join(re.escape(c) for c in cps if c <= "\uffff")
    astral = frozenset(c for c in cps if c > "\uffff")
    blocks = sorted({ord(c) >> 8 for c in astral})
    ranges = "".join(f"{chr(b << 8)}-{chr(b << 8 | 0xFF)}" for b in blocks) or "\U0010ffff"
    return re.compile(f"[{bmp}]"), re.compile(f"[{ranges}]"), astral


def extract_answer_colon_md(
    text: str, letters: Mapping[str, Any], template_metadata: Any = None
) -> Extraction:
    """lenient_answer_colon_md: markdown-aware `Answer:` payloads plus `answer_prefix` lines, tried from
    last to first; with a prefix set and nothing found, strict boxed on the original text."""
    prefix = None
    if isinstance(template_metadata, Mapping):
        p = template_metadata.get("answer_prefix")
        # a non-string prefix crashes NeMo Gym; here it is ignored (validate flags it)
        if isinstance(p, str) and p:
            prefix = p
    nt, same = md_text(text, prefix)
    payloads = _md_entries(nt, prefix)
    shared = _shared_line_ends(payloads)
    worst = STATUS_NO_ANSWER
    for _start, rule, pstart, pend in reversed(payloads):
        reader = shared.get(pend) if rule == RULE_PREFIX else None
        if reader is None:
            letter, status = choice_letter(nt[pstart:pend], letters)
        else:
            letter, status = reader.choice(nt, pstart, pend, letters)
        span = (pstart, pend) if same else None
        if letter is not None:
            return Extraction(letter, STATUS_OK, rule, span)
        if status == STATUS_AMBIGUOUS or (status == STATUS_OUT_OF_RANGE and worst == STATUS_NO_ANSWER):
            worst = status
    if prefix:
        boxed = extract_strict(text, letters)
        if boxed.letter is not None:
            return boxed
    msg = "no 'Answer:' payload names an option" if payloads else "no 'Answer:' in the text"
    return Extraction(None, worst, RULE_MD, message=msg)
