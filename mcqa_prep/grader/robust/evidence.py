"""The records every stage of `robust` passes on: what a piece of text says (`Reading`) and where and how
strongly the response says it (`Evidence`). Design: docs/design/robust.md, "Evidence"."""

from __future__ import annotations

from typing import NamedTuple

# What a reading says.
LETTER = "letter"  # one option letter
SEVERAL = "several"  # several different answers at once (status ambiguous)
REFUSAL = "refusal"  # "I don't know", "none of these" (when that is not an option)
OUT_OF_RANGE = "out_of_range"  # a letter that is not one of the options
NONE = "none"  # nothing: a mention, a dismissal, a condition, an empty payload
DECISIVE = frozenset((LETTER, SEVERAL, REFUSAL, OUT_OF_RANGE))

# How strongly the response commits (docs/design/robust.md, "Strength").
ANCHORED = 2  # an answer anchor, a box, a JSON answer field, "I choose B", "B is the correct answer"
PHRASE = 1  # "therefore B.", "it's B", "leaving C", "the vitamin in question is (D).", "C is right."
FORMAT = 0  # only the shape of the response: a bare letter, a last label line, a bold letter, ...


class Reading(NamedTuple):
    """What one payload or letter says; `span` is the letter (or the text) it was read from."""

    kind: str
    letter: str | None
    span: tuple[int, int]
    verdict: str  # "accepted" material: why, in words, for --explain


class Evidence(NamedTuple):
    """One candidate answer: where its statement starts (`pos`), how strong it is (`tier`), the rule that
    found it, what it says, and the context flags the decision needs."""

    pos: int
    tier: int
    rule: str
    reading: Reading
    revision: bool = False  # the statement itself corrects an earlier answer ("wait, actually D")
    hedged: bool = False  # tentative ("the answer might be B", "possibly C")
    verdict_of_letter: bool = False  # a verdict on a letter ("C is right."): two such may disagree
    label_only: bool = False  # a line that holds nothing but a label ("C", "**(C)**"): may revise
    also: bool = False  # "D is also valid": keeps the other answers given, does not replace them
    draft: bool = False  # "Initial answer: C": any later commitment replaces it

    @property
    def end(self) -> int:
        return self.reading.span[1]

    @property
    def decisive(self) -> bool:
        return self.reading.kind in DECISIVE


def letter_reading(letter: str, letters: object, j: int, why: str) -> Reading:
    """A one-letter reading at t[j]: the letter when it is an option, else out of range."""
    if letter in letters:  # type: ignore[operator]
        return Reading(LETTER, letter, (j, j + 1), why)
    return Reading(OUT_OF_RANGE, None, (j, j + 1), f"{letter} is not an option")


def none_reading(span: tuple[int, int], why: str) -> Reading:
    return Reading(NONE, None, span, why)
