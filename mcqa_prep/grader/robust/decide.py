"""Stage 4, decide: one decision over all the evidence of the answered scope (docs/design/robust.md, "Decision").

1. The strongest statements win: the last decisive ANCHORED candidate, else the last decisive PHRASE.
2. A later candidate of lower strength replaces it only as a revision: a self-correction ("wait,
   actually D"), any commitment after a revision marker ("let me check again ... so C"), or any
   commitment after a draft ("Initial answer: C ... Therefore A is correct").
3. Abstain (several answers) when the evidence conflicts: the winner is coordinated with a different
   answer ("\\boxed{A} and \\boxed{C}"), two verdicts on letters disagree ("A is right. C is right."), the
   winner is hedged and another hedged answer differs, or parts (a), (b) of the response answer
   differently.
FORMAT candidates are considered by the caller only when this finds nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from ...records import Candidate
from . import patterns
from .evidence import ANCHORED, LETTER, NONE, PHRASE, SEVERAL, Evidence, Reading
from .scope import part_of
from .tokens import letter_use


class Decision(NamedTuple):
    chosen: Evidence | None
    reading: Reading | None  # the chosen evidence's reading, or several answers when evidence conflicts
    final: bool  # nothing earlier in the text can change this decision (no need to scan further back)


def _same(a: Reading, b: Reading) -> bool:
    return a.kind == b.kind and a.letter == b.letter


def decide(evidence: list[Evidence], t: str, parts: list[int]) -> Decision:
    decisive = [e for e in evidence if e.decisive]
    anchored = [e for e in decisive if e.tier == ANCHORED]
    if anchored:
        base = anchored[-1]
        m = None if base.draft else patterns.REVISION_RE.search(t, base.end)
        revised_from = base.end if base.draft else m.start() if m is not None else len(t)
        later = [
            e
            for e in decisive
            if e.pos > base.pos and e.tier < ANCHORED and (e.revision or e.pos >= revised_from)
        ]
        if later:
            base = later[-1]
        elif m is not None and base.reading.kind == LETTER and _withdrawn(t, m.start(), base.reading.letter):
            return Decision(
                base, Reading(NONE, None, base.reading.span, "the answer is withdrawn later"), True
            )
    else:
        phrases = [e for e in decisive if e.tier == PHRASE]
        if not phrases:
            return Decision(None, None, False)
        base = phrases[-1]
    final = base.tier == ANCHORED or base.revision
    reading = base.reading
    why = _conflict(base, decisive, t, parts) or (_cycle(anchored, base, t) if anchored else None)
    if why is not None:
        reading = Reading(SEVERAL, None, base.reading.span, why)
    if base.hedged or base.verdict_of_letter or parts:
        final = False
    return Decision(base, reading, final)


def _cycle(anchored: list[Evidence], base: Evidence, t: str) -> str | None:
    """The anchored answers come back to the winning letter after another one, with no revision between
    ("[答案]A ... [答案]B ... [答案]C ... [答案]A": a loop, not a decision)."""
    letter = base.reading.letter
    if base.reading.kind != LETTER or len(anchored) < 3:
        return None
    first = next((e for e in anchored if e.reading.kind == LETTER and e.reading.letter == letter), base)
    if first is base:
        return None
    others = {e.reading.letter for e in anchored if first.pos < e.pos < base.pos and e.decisive}
    others.discard(letter)
    if others and patterns.REVISION_RE.search(t, first.pos, base.pos) is None:
        return "the answers cycle between several letters"
    return None


def _withdrawn(t: str, lo: int, letter: str | None) -> bool:
    """After a revision marker at `lo`, the answer's own letter is declared wrong ("Hmm, actually no. C
    can't be right.") or doubted ("I'm no longer sure it's B"), and no new answer follows (the caller)."""
    for m in patterns.PROSE_LETTER_RE.finditer(t, lo):
        j = m.start()
        if (
            t[j] == letter
            and letter_use(t, j) is None
            and (
                patterns.RETRACTED_AFTER_RE.match(t, j + 1)
                or patterns.RETRACTED_BEFORE_RE.search(t, max(lo, j - 60), j)
            )
        ):
            return True
    return False


def _conflict(base: Evidence, decisive: list[Evidence], t: str, parts: list[int]) -> str | None:
    """Why the evidence gives several answers rather than `base`'s, or None."""
    before = [e for e in decisive if e.pos < base.pos]
    if before:
        prev = before[-1]
        gap = t[prev.end : base.pos]
        if prev.tier >= base.tier and not _same(prev.reading, base.reading):
            bare = gap.strip(" \t*_$`()[]{}")  # (a gap of markup only: the two stand side by side)
            joined = (
                patterns.COORDINATION_GAP_RE.fullmatch(gap)
                if bare
                else "\n" not in gap and prev.rule == base.rule
            )
            if joined or patterns.COORDINATION_OPENER_RE.search(t, max(0, prev.pos - 12), prev.pos):
                return "several answers given together"
    if any(e.also and e.pos > base.pos and not _same(e.reading, base.reading) for e in decisive):
        return "another answer is called valid too"
    if before and patterns.ALSO_VALID_RE.match(t, base.end):
        if any(not _same(e.reading, base.reading) for e in before if e.tier >= PHRASE):
            return "another answer is called valid too"
    if base.verdict_of_letter:
        for e in decisive:
            if e is not base and e.verdict_of_letter and not _same(e.reading, base.reading):
                lo, hi = sorted((e.end, base.pos))
                if not patterns.REVISION_RE.search(t, lo, hi):
                    return "verdicts on several letters"
    if base.hedged:
        for e in decisive:
            if e is not base and e.hedged and not _same(e.reading, base.reading):
                return "hedged between several answers"
    if parts:
        by_part: dict[int, Reading] = {}
        for e in decisive:
            k = part_of(e.pos, parts)
            if k >= 0:
                by_part[k] = e.reading
        readings = list(by_part.values())
        if len(readings) > 1 and any(not _same(r, readings[0]) for r in readings):
            return "answers to several sub-items"
    return None


def explain(evidence: list[Evidence], chosen: Evidence | None) -> list[Candidate]:
    """Every candidate with what became of it, for --explain."""
    out = []
    for e in evidence:
        r = e.reading
        if e is chosen:
            verdict = "accepted" if r.kind == "letter" else r.verdict
        elif not e.decisive:
            verdict = r.verdict
        elif chosen is not None and _same(r, chosen.reading):
            verdict = "same answer as the deciding candidate"
        elif chosen is not None and e.pos < chosen.pos:
            verdict = "draft superseded by later answer"
        elif e.tier < ANCHORED and not e.revision:
            verdict = "later mention, not a commitment"
        else:
            verdict = "superseded"
        out.append(Candidate(e.rule, r.span, r.letter, verdict))
    return out
