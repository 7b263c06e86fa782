"""Stage 0, the answer region: where a careful reader looks for the answer (docs/design/robust.md, "Structure").

A response that marks its reasoning (`<think> ... </think>`, `◁think▷ ... ◁/think▷`, `<|im_start|>think ...
<|im_start|>answer`, `<|begin_of_thought|> ... <|end_of_thought|>`, ...: phrases.REASONING_MARKERS) is
answered after its last closing marker; the reasoning is not read. When an opening marker comes after the
last closing one, the response stopped while reasoning: it has no answer region, hence no answer (NeMo
Gym's rule for an unclosed `<think>`). A response without markers is read whole (None).

(A final-answer section without markers, "## Final Answer", is the decision's business: extract.py.)

One left-to-right pass: str.find for the markers' first characters (memchr speed), a match attempt at each.
"""

from __future__ import annotations

from typing import NamedTuple

from . import patterns


class Region(NamedTuple):
    start: int  # where the answer region starts in the response
    why_none: str | None  # why the response has no answer region (then `start` is where reasoning opens)
    marker: str  # the marker the region starts after


def answer_region(text: str) -> Region | None:
    """The answer region of `text`, or None when the whole text is read."""
    last_open = last_close = None
    match = patterns.REASONING_MARKER_RE.match
    for c in patterns.REASONING_FIRST_CHARS:
        k = text.find(c)
        while k >= 0:
            m = match(text, k)
            if m is not None:
                if m.group("c") is not None:
                    if last_close is None or k > last_close.start():
                        last_close = m
                elif last_open is None or k > last_open.start():
                    last_open = m
            k = text.find(c, k + 1)
    if last_open is not None and (last_close is None or last_open.start() > last_close.start()):
        why = f"stops inside its reasoning ({last_open.group()} never closes): no final answer"
        return Region(last_open.start(), why, last_open.group())
    if last_close is None:
        return None
    start = last_close.end()
    if not text[start:].strip():
        return Region(start, "nothing follows its reasoning: no final answer", last_close.group())
    return Region(start, None, last_close.group())


def blank_special_tokens(s: str) -> str:
    """Special tokens that carry no words (`<|im_end|>`, `<|end_of_solution|>`, ...) as spaces, one for one."""
    if "<" not in s:
        return s
    return patterns.SPECIAL_TOKEN_RE.sub(lambda m: " " * (m.end() - m.start()), s)
