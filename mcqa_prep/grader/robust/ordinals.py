"""Options named by their position: "That's the second option.", "I'll go with the third choice",
"The answer is the last one." — an ordinal after a phrase that commits to it, closing its sentence, reads
the letter at that position (docs/design/robust.md, "Evidence")."""

from __future__ import annotations

from collections.abc import Collection

from ...labels import LETTERS
from . import patterns, phrases
from .evidence import ANCHORED, PHRASE, Evidence, letter_reading

RULE = "robust.ordinal"
_POSITION = {w: i for i, w in enumerate(phrases.ORDINALS)}


def ordinal_commitment(t: str, low: str, k: int, kw: str, letters: Collection[str]) -> Evidence | None:
    """The evidence of "<commitment> the <ordinal> <noun>" whose ordinal starts at k, or None."""
    if not patterns.ORDINAL_AFTER_RE.match(low, k + len(kw)):
        return None
    ls = low.rfind("\n", 0, k) + 1
    m = patterns.ORDINAL_BEFORE_RE.search(low, max(ls, k - 40), k)
    if m is None:
        return None
    word = kw.split()[0]
    if word == "last":
        letter = max(letters) if letters else "A"
    else:
        letter = LETTERS[_POSITION[word]]
    r = letter_reading(letter, letters, k, "ordinal")._replace(span=(k, k + len(kw)))
    tier = ANCHORED if low.startswith("answer", m.start()) else PHRASE
    return Evidence(m.start(), tier, RULE, r)
