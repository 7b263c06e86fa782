"""The general path of `robust`: normalise → scope → candidates (from the end, in stages) → decide →
formats when nothing was said → one `Extraction`. `fastpath.py` returns the same result for the most
common closings without most of this work."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...records import (
    STATUS_AMBIGUOUS,
    STATUS_NO_ANSWER,
    STATUS_OK,
    STATUS_OUT_OF_RANGE,
    STATUS_REFUSAL,
    Candidate,
)
from ..base import Extraction
from . import patterns as X
from .candidates import Text, make_text, strong_candidates
from .decide import Decision, decide, explain
from .evidence import DECISIVE, LETTER, Evidence, Reading
from .formats import format_candidates, last_line
from .options import Options
from .scope import follow_up_boundaries, foreign_listing_before, may_have_structure, sub_items
from .text import fold_width, lower_same_length

STATUS_OF = {
    "several": STATUS_AMBIGUOUS,
    "refusal": STATUS_REFUSAL,
    "out_of_range": STATUS_OUT_OF_RANGE,
    "none": STATUS_NO_ANSWER,  # (an answer withdrawn later)
}
NO_TEXT = Extraction(None, STATUS_NO_ANSWER, "robust.none")


def unfinished_reasoning(text: str) -> Extraction | None:
    """The response opens a `<think>` block and never closes it: it stopped while reasoning, before
    giving its final answer (what the reasoning says on the way is not a commitment)."""
    i = text.find("<think>")
    if i < 0 or text[:i].strip() or text.find("</think>", i) >= 0:
        return None
    why = "stops inside its <think> block: no final answer"
    cand = Candidate("robust.scope", (i, len(text)), None, why)
    return Extraction(None, STATUS_NO_ANSWER, "robust.scope", (i, len(text)), (cand,), message=why)


def general_extract(text: str, letters: Mapping[str, Any]) -> Extraction:
    """extract_robust without the fast path (the property tests compare the two)."""
    unfinished = unfinished_reasoning(text)
    if unfinished is not None:
        return unfinished
    t = fold_width(text)
    structure = may_have_structure(t)
    x = make_text(t, lower_same_length(t), Options(letters), structure)
    ext = _extract_scope(x, single_stage=False)
    before = ext.span[0] if ext.span is not None else len(t)
    markers = structure and X.STRUCTURE_NL_RE.search(x.low) is not None
    bounds = follow_up_boundaries(t, x.low, x.opts, before, markers=markers)
    for b in bounds:
        prefix = make_text(t[:b], x.low[:b], x.opts, structure)
        sub = _extract_scope(prefix, single_stage=True)
        if sub.status != STATUS_NO_ANSWER:
            note = Candidate(
                "robust.scope", (b, len(t)), None, "answers a follow-up question, not the one asked"
            )
            return sub._replace(candidates=sub.candidates + (note,))
    if bounds and ext.status != STATUS_NO_ANSWER and foreign_listing_before(t, before, x.opts) is not None:
        # the only answer is to an invented question right above it (a base model writing the next exam
        # item instead of answering): nothing answers the question asked
        why = "answers a follow-up question, not the one asked; nothing before it answers"
        note = Candidate("robust.scope", ext.span or (0, len(t)), None, why)
        return Extraction(
            None, STATUS_NO_ANSWER, "robust.scope", ext.span, ext.candidates + (note,), message=why
        )
    return ext


def stages(t: str) -> list[int]:
    """Start offsets of the successively longer tails scanned: the closing lines (from the last line with
    some words in it, at most 200 characters), the last 350 characters, everything."""
    n = len(t)
    if n <= 300:
        return [0]
    lo1 = first_stage_start(t, n)
    out = [lo1]
    if n - 350 < lo1 and n > 450:
        out.append(n - 350)
    out.append(0)
    return out


def first_stage_start(t: str, n: int) -> int:
    """Start of the closing lines: the last line with some words in it (at most the last 200 characters)."""
    e = n
    lo1 = n
    while e > 0 and lo1 > n - 200:
        s0 = t.rfind("\n", 0, e - 1) + 1
        lo1 = s0
        if X_WORDISH_RE.search(t, s0, e):
            break
        e = s0
    return max(lo1, n - 200)


X_WORDISH_RE = re.compile(r"[A-Za-z0-9\u00c0-\uffff]{2}|[A-Z]")


def _extract_scope(x: Text, *, single_stage: bool) -> Extraction:
    t = x.t
    parts = sub_items(t, x.opts) if x.structure else []
    evidence: list[Evidence] = []
    dec = Decision(None, None, False)
    hi = len(t)
    for lo in [0] if (single_stage or parts) else stages(t):
        found = strong_candidates(x, lo, hi)
        evidence = found + evidence if evidence else found
        if any(e.reading.kind in DECISIVE for e in found):  # (else the decision cannot have changed)
            dec = decide(evidence, t, parts)
        if dec.final and dec.chosen is not None and not may_join_earlier(t, lo, dec.chosen.pos):
            break
        hi = lo
    if dec.chosen is not None:
        chosen, reading = dec.chosen, dec.reading
        if chosen.draft or X.REVISION_RE.search(t, chosen.end):
            ll = last_line(x)  # "Answer: B ... let me check again ... \n\nC": a corrected bare answer
            if (
                ll.decisive
                and ll.label_only
                and ll.pos > chosen.end
                and ll.reading.letter != chosen.reading.letter
            ):
                evidence.append(ll)
                chosen, reading = ll, ll.reading
        return _result(chosen, reading, explain(evidence, chosen))  # type: ignore[arg-type]
    out = explain(evidence, None)
    for ev in format_candidates(x, parts):
        out.append(Candidate(ev.rule, ev.reading.span, ev.reading.letter, _verdict(ev.reading)))
        if ev.reading.kind in DECISIVE:
            return _result(ev, ev.reading, out)
    return Extraction(None, STATUS_NO_ANSWER, "robust.none", None, tuple(out), message="no answer found")


_JOINERS = (",", ";", "/", "&", "+", " and", " or", "both", "either", "和", "或", "及")


def may_join_earlier(t: str, lo: int, pos: int) -> bool:
    """Could a candidate before `lo` be coordinated with the one at `pos` ("\\boxed{A} or\\n\\boxed{B}")?
    Only when the text from lo to pos could be a coordination gap and the text before lo ends with a
    conjunction, or "both"/"either" stands right before pos."""
    if lo == 0:
        return False
    gap = t[lo:pos]
    if gap.strip() and not X.COORDINATION_GAP_RE.fullmatch(gap):
        return False
    tail = t[max(0, lo - 40) : lo].rstrip(" \t\r\n*_$`([{").lower()
    if tail.endswith(_JOINERS) or tail == "and" or tail == "or":
        return True
    near = t[max(0, pos - 12) : pos].lower()
    return ("both" in near or "either" in near) and X.COORDINATION_OPENER_RE.search(
        t, max(0, pos - 12), pos
    ) is not None


def _verdict(r: Reading) -> str:
    return "accepted" if r.kind == LETTER else r.verdict


def _result(chosen: Evidence, reading: Reading, cands: list[Candidate]) -> Extraction:
    span = (min(chosen.pos, reading.span[0]), reading.span[1])
    if reading.kind == LETTER:
        return Extraction(reading.letter, STATUS_OK, chosen.rule, span, tuple(cands))
    return Extraction(None, STATUS_OF[reading.kind], chosen.rule, span, tuple(cands), message=reading.verdict)
