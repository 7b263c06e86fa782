"""The fast path of `robust` returns exactly what the general path returns (property tests).

`fast_extract` recognises common closing lines and skips the general scans under preconditions it
checks itself (robust/fastpath.py). Here texts are generated around those closing lines — with
earlier drafts, boxes, conditions, conjunctions, sub-item labels, follow-up questions, option
listings, revision words, non-ASCII text — and both paths must agree on the whole Extraction
(letter, status, rule, span, candidates, message). Whenever the fast path answers.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcqa_prep.grader.robust import extract_robust, general_extract
from mcqa_prep.grader.robust import fastpath as F
from mcqa_prep.grader.robust import phrases as P
from mcqa_prep.grader.robust.fastpath import fast_extract

OPTION_TEXTS = [
    "Paris",
    "London",
    "9.8 m/s",
    "19.6 m/s",
    "None of the above",
    "Vitamin C",
    "0.5",
    "Iron",
    "the ribosome",
]
SENTENCES = [
    "Let's think step by step about the forces involved.",
    "Option B is tempting, but it ignores friction.",
    "A can be ruled out because the units do not match.",
    "If it were C, energy would not be conserved.",
    "The answer is D.",
    "Answer: A",
    "\\boxed{B}",
    "B is the correct answer.",
    "Wait, let me check that again.",
    "Therefore, C.",
    "It might be A, or it could be D.",
    "Both A and",
    "either B or",
    "We consider the answer choices and the question carefully, one at a time, before deciding.",
    '{"answer": "C"}',
    "最终答案是 B。",
    "Hepatitis C and Vitamin C are names, not letters.",
    "I think the answer is",
]
LINES = [
    "Question: Which planet is red?",
    "Q: what next?",
    "Human: another one",
    "(a) first part",
    "(b) second part",
    "Part (b): the second part",
    "A. Venus",
    "B. Mars",
    "C. Jupiter",
    "D. Saturn",
    "- Option C: Jupiter is large.",
    "The following are multiple choice questions (with answers).",
    "(ii) and so on",
    "## Final Answer",
    "</think>",
    "<think>",
    "◁/think▷",
]
CLOSINGS = [
    "Answer: {L}",
    "**Answer: {L}**",
    "ANSWER: {l}",
    "**Answer:** {L}",
    "The answer is ({L}).",
    "the answer is {l}.",
    "Therefore, the correct answer is {L}.",
    "So the best choice is **{L}**.",
    "Thus the final answer: {L}",
    "**Final Answer:** \\boxed{{\\text{{{L}}}}}",
    "Final answer: \\boxed{{{l}}}",
    "\\[\n\\boxed{{{L}}}\n\\]",
    "$\\boxed{{{L}}}$",
    "Option {L} is correct.",
    "**Choice {L} is correct**",
    "答案：{L}",
    "**答案**：（{L}）",
    "Antwort: {L}",
    "Final answer: {T}",
    "The correct answer is {T}",
    "Final answer: {T} because it fits",
    "Answer: {T}, not {L}",
    "The best answer is {L} if we ignore drag",
    "Answer: {L} or {M}",
    "answer: I don't know",
]


@st.composite
def table_closing(draw):
    """A closing written with any words of the fast path's tables (all from phrases.py)."""
    lead = draw(st.sampled_from(["", *(w.capitalize() + ", " for w in F._LEADS)]))
    q = draw(st.sampled_from(["", *(q + " " for q in P.QUALIFIERS)]))
    kw = draw(st.sampled_from(F._NOUNS + F._FOREIGN))
    conn = draw(st.sampled_from([": ", " is ", "**: ", ":** "]))
    head = f"{lead}{'the ' if lead or q else ''}{q}{kw}{conn}"
    if draw(st.booleans()):
        return head + "{L}"
    return draw(st.sampled_from(P.OPTION_NOUNS)).capitalize() + " {L} is correct."


@st.composite
def texts(draw):
    n_letters = draw(st.sampled_from([2, 4, 5, 10]))
    letters = {c: draw(st.sampled_from(OPTION_TEXTS)) for c in "ABCDEFGHIJ"[:n_letters]}
    clean = draw(st.integers(min_value=0, max_value=2)) > 0  # (two texts in three hold no traps)
    pool = SENTENCES[:3] + SENTENCES[13:14] if clean else SENTENCES + LINES
    chunks = draw(st.lists(st.sampled_from(pool), min_size=0, max_size=12))
    seps = draw(st.lists(st.sampled_from([" ", "\n", "\n\n"]), min_size=len(chunks), max_size=len(chunks)))
    body = "".join(c + s for c, s in zip(chunks, seps, strict=True))
    pad = draw(st.integers(min_value=5 if clean else 0, max_value=8))
    body = ("We reason about the problem and weigh the evidence for each choice. " * pad) + body
    letter = draw(st.sampled_from("ABCDEFGHIJK"))
    other = draw(st.sampled_from("ABCD"))
    text_of = draw(st.sampled_from(OPTION_TEXTS))
    closings = CLOSINGS[:20] if clean else CLOSINGS  # (the first twenty are shapes the fast path knows)
    shape = draw(table_closing()) if draw(st.integers(0, 3)) == 0 else draw(st.sampled_from(closings))
    closing = shape.format(L=letter, l=letter.lower(), M=other, T=text_of)
    end_sep = draw(st.sampled_from(["\n\n", "\n", "\n\n\n"]))
    return body + end_sep + closing + draw(st.sampled_from(["", "\n", " "])), letters


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts())
def test_fast_path_equals_general_path(case):
    text, letters = case
    fast = fast_extract(text, letters)
    event("fast path" if fast is not None else "general path")
    if fast is not None:
        assert fast == general_extract(text, letters)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts())
def test_entry_point_equals_general_path(case):
    text, letters = case
    assert extract_robust(text, letters, None) == general_extract(text, letters)


def test_generated_texts_reach_the_fast_path():
    """The property above is not vacuous: a good share of the generated texts take the fast path."""
    hits = []

    @settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(texts())
    def collect(case):
        hits.append(fast_extract(*case) is not None)

    collect()
    assert sum(hits) >= 0.25 * len(hits), (sum(hits), len(hits))


def test_fast_path_covers_the_common_closings():
    reasoning = "We reason about the problem and weigh the evidence for each choice. " * 6
    letters = {"A": "Paris", "B": "London", "C": "Rome", "D": "Berlin"}
    for closing in (
        "Answer: C",
        "**Final Answer:** \\boxed{\\text{C}}",
        "The answer is (C).",
        "Option C is correct.",
        "\\[\n\\boxed{C}\n\\]",
        "Final answer: Rome",
        "答案：C",
        "Therefore, the correct answer is C.",
    ):
        text = reasoning + "\n\n" + closing
        fast = fast_extract(text, letters)
        assert fast is not None, closing
        assert fast.letter == "C" and fast == general_extract(text, letters)
