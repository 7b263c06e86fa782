"""NFKC of a whole text, normalising only the words that can change (exactly `unicodedata.normalize("NFKC", t)`).

Normalising a multilingual response costs tens of microseconds, most of it on characters NFKC leaves alone. A
character that is a starter (canonical combining class 0) with NFKC_Quick_Check=Yes never changes, never moves
and never combines with what comes before it, so normalisation can be cut before any such character: NFKC(a + b)
is NFKC(a) + NFKC(b) when b starts with one (UAX #15, stable code points). The space and the newline are such
characters. So the text is cut at spaces and newlines into words, and only the words holding an unstable
character are normalised: one whose NFKC form differs from itself, one with a non-zero combining class, one
that can be the second half of a canonical composition (Quick_Check=Maybe), or a Hangul jamo vowel or
trailing consonant (composed algorithmically). The rest of the text is copied. The set of unstable characters
is computed once per process from this Python's Unicode tables (~0.3 s), so it is that version's NFKC.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@functools.cache
def _unstable() -> tuple[re.Pattern[str], frozenset[str]]:
    """(a class of the unstable characters of the Basic Multilingual Plane, the set of the astral ones). The
    BMP class is searched with a bitmap; astral characters are rare, so each one found is tested against the
    set instead (a class holding astral ranges is checked range by range for every character)."""
    second: set[int] = set()
    for cp in range(0x80, 0x110000):
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                second.add(int(parts[1], 16))
    bmp: list[int] = []
    astral: set[str] = set()
    for cp in range(0x80, 0x110000):
        c = chr(cp)
        if (
            unicodedata.combining(c)
            or cp in second
            or 0x1160 <= cp <= 0x11FF  # Hangul jamo vowels and trailing consonants
            or unicodedata.normalize("NFKC", c) != c
        ):
            if cp <= 0xFFFF:
                bmp.append(cp)
            else:
                astral.add(c)
    ranges: list[list[int]] = []
    for cp in bmp:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    cls = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    )
    return re.compile(f"[{cls}]"), frozenset(astral)


def nfkc(text: str) -> str:
    """unicodedata.normalize("NFKC", text), normalising only the words (cut at spaces and newlines) that hold
    an unstable character."""
    if text.isascii():
        return text
    bmp, astral = _unstable()
    hits = [m.start() for m in _ASTRAL.finditer(text) if m.group() in astral]
    if hits:  # rare (mathematical letters, enclosed and compatibility characters): the plain way
        return unicodedata.normalize("NFKC", text)
    m = bmp.search(text)
    if m is None:
        return text
    out: list[str] = []
    last = 0
    n = len(text)
    find, rfind, search, normalize = text.find, text.rfind, bmp.search, unicodedata.normalize
    while m is not None:
        at = m.start()
        start = max(rfind(" ", last, at), rfind("\n", last, at), last)
        end = find(" ", at)
        nl = find("\n", at)
        if end < 0 or 0 <= nl < end:
            end = nl
        if end < 0:
            end = n
        out.append(text[last:start])
        out.append(normalize("NFKC", text[start:end]))
        last = end
        m = search(text, end)
    out.append(text[last:])
    return "".join(out)
