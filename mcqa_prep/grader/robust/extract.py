"""The general path of `robust`: normalise → scope → candidates (from the end, in stages) → decide →
formats when nothing was said → one `Extraction`. `fastpath.py` returns the same result for the most
common closings without most of this work."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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
from . import patterns
from .candidates import RULE_FINAL, Text, make_text, strong_candidates
from .closing import RULE_CLOSING_LINE
from .decide import Decision, decide, explain
from .evidence import ANCHORED, DECISIVE, LETTER, NONE, SEVERAL, Evidence, Reading
from .formats import (
    RULE_BARE,
    RULE_BOLD,
    RULE_LAST_LINE,
    RULE_LEADING,
    RULE_OPTION_TEXT,
    format_candidates,
    last_line,
)
from .labels import DEFAULT, Labels, numbers_as_letters, several_as_one
from .options import Options
from .payload import text_below
from .region import answer_region, blank_special_tokens
from .scope import (
    follow_up_boundaries,
    foreign_listing_before,
    inline_listing_above,
    may_have_structure,
    sub_items,
)
from .text import at_line_start, fold_width, lower_same_length, norm
from .tokens import dangling

STATUS_OF = {
    "several": STATUS_AMBIGUOUS,
    "refusal": STATUS_REFUSAL,
    "out_of_range": STATUS_OUT_OF_RANGE,
    "none": STATUS_NO_ANSWER,  # (an answer withdrawn later)
}
NO_TEXT = Extraction(None, STATUS_NO_ANSWER, "robust.none")


Reader = Callable[[str, Mapping[str, Any], Labels], Extraction]


def read_response(
    text: str, letters: Mapping[str, Any], read: Reader, labels: Labels = DEFAULT
) -> Extraction:
    """`read` applied to the answer region of `text` (region.py), spans given in `text`; no answer when the
    response has no answer region (it stops while reasoning, or nothing follows its reasoning)."""
    reg = answer_region(text)
    if reg is None:
        return read(text, letters, labels)
    a = reg.start
    if reg.why_none is not None:
        span = (a, len(text))
        cand = Candidate("robust.scope", span, None, reg.why_none)
        return Extraction(None, STATUS_NO_ANSWER, "robust.scope", span, (cand,), message=reg.why_none)
    ext = read(blank_special_tokens(text[a:]), letters, labels)
    skipped = Candidate(
        "robust.region", (0, a), None, f"reasoning before the answer region ({reg.marker}): not read"
    )
    if a == 0:
        return ext._replace(candidates=(skipped, *ext.candidates))
    shifted = tuple(
        Candidate(c.rule, (c.span[0] + a, c.span[1] + a), c.letter, c.verdict) for c in ext.candidates
    )
    moved = None if ext.span is None else (ext.span[0] + a, ext.span[1] + a)
    return ext._replace(span=moved, candidates=(skipped, *shifted))


def general_extract(text: str, letters: Mapping[str, Any], labels: Labels = DEFAULT) -> Extraction:
    """extract_robust without the fast path (the property tests compare the two)."""
    return read_response(text, letters, read_text, labels)


def read_cut_off(
    text: str, letters: Mapping[str, Any], labels: Labels, why: str, headers: re.Pattern[str] | None = None
) -> Extraction:
    """The reading of a response its caller knows was cut off (`why`: "max_output_tokens", "length"): its
    answer region only. An anchored answer counts (an answer line, a box, a final-answer section, a JSON
    answer field, a first-person choice); a phrase, a closing line or the shape of a text that stopped
    mid-stream is not a commitment. An anchored answer after which the response went back to reasoning (a
    clause opening with a revision marker or a contrast) was not final either, unless it opened the response
    (answer first, then explained). Else no answer, with the reason."""
    ext = read_text(text, letters, labels, anchored_only=True, headers=headers)
    if ext.status != STATUS_NO_ANSWER and not _resumed(text, ext):
        return ext
    resumed = ext.letter is not None
    why = (
        f"the response was cut off ({why}) while reconsidering its answer: no final answer"
        if resumed
        else f"the response was cut off ({why}) before a final answer"
    )
    span = ext.span if resumed else None
    note = Candidate(RULE_INCOMPLETE, span or (0, len(text)), None, why)
    return Extraction(None, STATUS_NO_ANSWER, RULE_INCOMPLETE, span, ext.candidates + (note,), message=why)


RULE_INCOMPLETE = "robust.incomplete"


def read_text(
    text: str,
    letters: Mapping[str, Any],
    labels: Labels = DEFAULT,
    *,
    anchored_only: bool = False,
    headers: re.Pattern[str] | None = None,
) -> Extraction:
    """The general path on a text that is all answer region (`anchored_only`: only anchored evidence counts,
    no format rule: the reading of a response that was cut off; `headers`: the prompt's question header, a
    line that opens with it starts another question)."""
    t = numbers_as_letters(several_as_one(fold_width(text), labels), labels)
    structure = may_have_structure(t)
    x = make_text(t, lower_same_length(t), Options(letters, labels), structure)
    ext = _extract_scope(x, single_stage=False, anchored_only=anchored_only)
    before = ext.span[0] if ext.span is not None else len(t)
    markers = structure and patterns.STRUCTURE_NL_RE.search(x.low) is not None
    bounds = follow_up_boundaries(t, x.low, x.opts, before, markers=markers, headers=headers)
    for b in bounds:
        prefix = make_text(t[:b], x.low[:b], x.opts, structure)
        sub = _extract_scope(prefix, single_stage=True, anchored_only=anchored_only)
        if sub.status != STATUS_NO_ANSWER:
            note = Candidate(
                "robust.scope", (b, len(t)), None, "answers a follow-up question, not the one asked"
            )
            return sub._replace(candidates=sub.candidates + (note,))
    if ext.letter is not None and _cut_off(x):
        return _stopped(ext, t)
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


def _extract_scope(x: Text, *, single_stage: bool, anchored_only: bool = False) -> Extraction:
    t = x.t
    parts = sub_items(t, x.opts) if x.structure else []
    evidence: list[Evidence] = []
    dec = Decision(None, None, False)
    hi = len(t)
    for lo in [0] if (single_stage or parts) else stages(t):
        found = [_foreign_answer(x, e) if e.decisive else e for e in strong_candidates(x, lo, hi)]
        if anchored_only:
            found = [_anchored_or_none(e) for e in found]
        evidence = found + evidence if evidence else found
        if any(e.reading.kind in DECISIVE for e in found):  # (else the decision cannot have changed)
            dec = decide(evidence, t, parts)
        if (
            dec.final
            and dec.chosen is not None
            and not may_join_earlier(t, lo, dec.chosen.pos)
            and not said_before(t, lo, dec.chosen.rule, dec.chosen.pos, dec.chosen.reading.span[0])
        ):
            break
        hi = lo
    if dec.chosen is not None:
        chosen, reading = dec.chosen, dec.reading
        section = _unread_section(evidence, chosen, t)
        # ("... so C. ## Final Answer <nothing readable>"): the reasoning's C is no answer
        if section is not None:
            why = "the final-answer section commits to nothing readable; earlier letters are reasoning"
            out = explain(evidence, None) + [Candidate("robust.scope", section.reading.span, None, why)]
            return Extraction(
                None, STATUS_NO_ANSWER, "robust.scope", section.reading.span, tuple(out), message=why
            )
        if chosen.draft or patterns.REVISION_RE.search(t, chosen.end):
            ll = last_line(x)  # "Answer: B ... let me check again ... \n\nC": a corrected bare answer
            if (
                ll.decisive
                and ll.label_only
                and ll.pos > chosen.end
                and ll.reading.letter != chosen.reading.letter
            ):
                evidence.append(ll)
                chosen, reading = ll, ll.reading
        reading = _text_below(x, reading)  # type: ignore[arg-type]
        none = _none_correct_after(x, chosen.end) if reading.kind == LETTER else None
        if none is not None:  # ("Answer: A ... none of the given options is correct"): taken back
            why = "none of the options is said to be correct after the answer"
            out = explain(evidence, chosen) + [Candidate("robust.refusal", none, None, why)]
            return Extraction(None, STATUS_REFUSAL, "robust.refusal", none, tuple(out), message=why)
        return _result(chosen, reading, explain(evidence, chosen))
    out = explain(evidence, None)
    for ev in () if anchored_only else format_candidates(x, parts):
        if ev.decisive:
            ev = _foreign_answer(x, ev)
            ev = ev._replace(reading=_text_below(x, ev.reading))
        out.append(Candidate(ev.rule, ev.reading.span, ev.reading.letter, _verdict(ev.reading)))
        if ev.reading.kind in DECISIVE:
            return _result(ev, ev.reading, out)
    return Extraction(None, STATUS_NO_ANSWER, "robust.none", None, tuple(out), message="no answer found")


_REPEATABLE = frozenset(("robust.answer_anchor", "robust.final_answer", "robust.boxed", "robust.json"))


def _anchored_or_none(e: Evidence) -> Evidence:
    """Evidence as a response that was cut off reads it: an anchored statement counts, any other says nothing."""
    if e.tier == ANCHORED or not e.decisive:
        return e
    why = "not an anchored answer, in a response that was cut off"
    return e._replace(reading=Reading(NONE, None, e.reading.span, why))


def _foreign_answer(x: Text, e: Evidence) -> Evidence:
    if inline_listing_above(x.t, e.pos, x.opts):
        why = "answers the question listed inline above it, not the one asked"
        return e._replace(reading=Reading(NONE, None, e.reading.span, why))
    return e


RULE_CUT = "robust.scope"
_CUT_REASONING = "the response stopped mid-sentence while weighing its answer again: no final answer"
_CUT_LINES = "the response stopped mid-sentence: its last lines are no answer"
# the format rules that read the end of the response (the first line's rules, bare and leading_letter, read an
# answer given first, which a cut at the end does not touch)
_END_READERS = frozenset((RULE_LAST_LINE, RULE_BOLD, RULE_CLOSING_LINE, RULE_OPTION_TEXT))


def _stopped(ext: Extraction, t: str) -> Extraction:
    """A response that stops mid-sentence (the caller checked), read by what it said last: an answer read
    from its last lines (a closing line, a last label line, a bold letter, a closing option text) is a
    fragment of the reasoning it stopped in; an answer after which it took its reasoning up again (a clause
    opening with a contrast or a revision marker: "… So option A.\n\nBut the", "The closest option is (D),
    but it is missing 19. So the answer is not in") was not its final one. Either is no answer."""
    span = ext.span or (0, len(t))
    e = len(t.rstrip())
    at_cut = not t[span[1] : e].strip("*_ \t") and _unclosed_bold(t[t.rfind("\n", 0, e) + 1 : e])
    if (ext.rule in _END_READERS and not answers_first(t, span[0])) or at_cut:
        why = _CUT_LINES  # (read from the last lines, or at the cut itself, in a bold never closed: "… **B")
    elif _resumed(t, ext):
        why = _CUT_REASONING
    else:
        return ext
    cut = (span[0], len(t.rstrip()))
    note = Candidate(RULE_CUT, cut, None, why)
    return Extraction(None, STATUS_NO_ANSWER, RULE_CUT, cut, (*ext.candidates, note), message=why)


def _resumed(t: str, ext: Extraction) -> bool:
    """After the answer read, a clause opens with a revision marker ("Wait, let me check again") or a contrast
    — unless the answer is an answer line opening the response and the contrast opens a later sentence (an
    explanation: "Answer: C\n\nMars is red. However, …")."""
    if ext.letter is None or ext.span is None:
        return False
    end = ext.span[1]
    if patterns.RESUMED_REVISION_RE.search(t, end) is not None:
        return True
    m = patterns.RESUMED_CONTRAST_RE.search(t, end)
    if m is None:
        return False
    explained = ext.rule in _ANSWER_LINES and answers_first(t, ext.span[0])
    return not explained or _SENTENCE_END_RE.search(t, end, m.start() + 1) is None


# the readings of an answer given as such (an answer line, a box, a JSON field, a leading label), not of a
# conclusion drawn in the reasoning ("…, so option A.")
_ANSWER_LINES = frozenset(
    ("robust.answer_anchor", "robust.final_answer", "robust.boxed", "robust.json", RULE_LEADING, RULE_BARE)
)
_SENTENCE_END_RE = re.compile(r"[.!?。\n]")


def answers_first(t: str, pos: int) -> bool:
    """The statement at `pos` stands on the response's first line (an answer given first, then explained: a
    cut in the explanation does not touch it)."""
    lead = len(t) - len(t.lstrip())
    nl = t.find("\n", lead)
    return nl < 0 or pos < nl


def _cut_off(x: Text) -> bool:
    """The response stops mid-sentence: its last line ends with a word that cannot end a sentence, a comma or a
    colon (tokens.dangling), inside a bold stretch never closed ("Demak, **B"), or, four words long or more,
    with a word and no stop — not with a label or an option's text."""
    t = x.t
    e = len(t.rstrip())
    line = t[t.rfind("\n", 0, e) + 1 : e]
    if dangling(line) or _unclosed_bold(line):
        return True
    core = line.rstrip(" \t*_`$")
    words = core.split()
    if len(words) < 4 or not core[-1].isalnum() or core[-1] in patterns.TERMINAL_CHARS:
        return False
    if len(words[-1]) == 1 or (core[-2:-1] in " (*" and not core[-2:-1].isalnum()):
        return False  # (a label closes it)
    nc = norm(core)
    return not any(ot and nc.endswith(ot) for _, ot in x.opts.norms)


def _unclosed_bold(line: str) -> bool:
    """The line's last `**` opens a bold stretch (no letter right before it, a character right after it) that
    the line never closes ("Demak, **B"): the text was cut inside it."""
    k = line.rfind("**")
    return (
        k >= 0
        and line.count("**") % 2 == 1
        and (k == 0 or not line[k - 1].isalnum())
        and k + 2 < len(line)
        and not line[k + 2].isspace()
    )


def _text_below(x: Text, r: Reading) -> Reading:
    """A letter whose line is followed by a line holding another option's whole text ("C" / "Answer text:
    Berlin", Berlin being D): two answers."""
    if r.kind != LETTER:
        return r
    other = text_below(x.t, r.span[1], r.letter, x.opts)  # type: ignore[arg-type]
    if other is None:
        return r
    return Reading(SEVERAL, None, r.span, f"letter {r.letter} with the text of option {other} below it")


def _none_correct_after(x: Text, end: int) -> tuple[int, int] | None:
    """The span of a verdict that none of the options is correct after `end`, unless an option's text is
    itself such a verdict ("None of the above" as an option: saying so may choose it)."""
    m = patterns.NONE_CORRECT_RE.search(x.low, end)
    if m is None or any(patterns.REFUSAL_RE.search(ot) for _, ot in x.opts.norms):
        return None
    return m.span()


def said_before(t: str, lo: int, rule: str, pos: int, end: int) -> bool:
    """The deciding anchor, as written (its words from `pos` up to the letter at `end`), occurs at least
    twice before `lo`: a response that repeats its answer line, maybe with other letters — the decision
    must see them all to tell a loop (decide._cycle)."""
    if lo == 0 or rule not in _REPEATABLE:
        return False
    key = t[pos:end].strip()
    return len(key) >= 2 and t.count(key, 0, lo) >= 2


def _unread_section(evidence: list[Evidence], chosen: Evidence, t: str) -> Evidence | None:
    """A final-answer anchor opening a line after the chosen evidence ("## Final Answer", "Final answer:")
    whose payload reads as nothing: the response's answer section, which a letter of the reasoning above it
    does not outrank."""
    for e in evidence:
        if e.pos > chosen.pos and e.rule == RULE_FINAL and not e.decisive and at_line_start(t, e.pos):
            return e
    return None


def may_join_earlier(t: str, lo: int, pos: int) -> bool:
    """Could a candidate before `lo` be coordinated with the one at `pos` ("\\boxed{A} or\\n\\boxed{B}")?
    Only when the text from lo to pos could be a coordination gap and the text before lo ends with a
    conjunction, or "both"/"either" stands right before pos."""
    if lo == 0:
        return False
    gap = t[lo:pos]
    if gap.strip() and not patterns.COORDINATION_GAP_RE.fullmatch(gap):
        return False
    tail = t[max(0, lo - 40) : lo].rstrip(" \t\r\n*_$`([{").lower()
    if tail.endswith(patterns.JOINER_ENDINGS) or tail in patterns.JOINER_WORDS:
        return True
    near = t[max(0, pos - 12) : pos].lower()
    return (
        any(w in near for w in patterns.COORDINATION_OPENERS)
        and patterns.COORDINATION_OPENER_RE.search(t, max(0, pos - 12), pos) is not None
    )


def _verdict(r: Reading) -> str:
    return "accepted" if r.kind == LETTER else r.verdict


def _result(chosen: Evidence, reading: Reading, cands: list[Candidate]) -> Extraction:
    span = (min(chosen.pos, reading.span[0]), reading.span[1])
    if reading.kind == LETTER:
        return Extraction(reading.letter, STATUS_OK, chosen.rule, span, tuple(cands))
    return Extraction(None, STATUS_OF[reading.kind], chosen.rule, span, tuple(cands), message=reading.verdict)
