"""robust's patterns rewritten for linear time match as their earlier forms did.

Each rewritten pattern had two runs of the same characters side by side (`[ \\t]*[*_]{0,3}[ \\t]*`, `\\s*,?`
before `\\s+`): on a long run of spaces the engine tried every split of it before failing (cubic). The new
forms accept the same strings with the same preferred match; here each is compared with its earlier form
(the reference) at position 0 of generated strings made of the characters those runs and their neighbours
read. tests/hostile/test_hostile_bounds.py measures the growth itself."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcqa_prep.grader.robust import patterns as X
from mcqa_prep.grader.robust import phrases as P

PIECES = [
    " ", "  ", "\t", "\n", "\r\n", "*", "**", "_", "#", ",", ", ", ":", "：", "=", "==", "-", "--", "—",
    "→", "(", "(a)", "a)", "b", " is", "is", " are not", " not", "might", " be", "be", " to be", "seems",
    "therefore", " then", "thus,", "would", "lies in", "x", "?", ".", "!", "then", "it is", " also", " equally",
]  # fmt: skip

strings = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)

# the earlier forms (mcqa_prep/grader/robust/patterns.py before the rewrite)
LINE_CLOSES_REFERENCE = re.compile(r"[ \t*_]*[.!]?[ \t*_]*(?=\r?\n|$)")
IT_IS_AFTER_LETTER_REFERENCE = re.compile(
    X._alt(P.IT_IS_AFTER_LETTER) + r"[ \t]*(?:then)?[ \t*_]*[.!]?[ \t*_]*(?=\n|$)"
)
CONN = re.compile(X.EN_CONN)
CONN_REFERENCE = re.compile(X.EN_CONN_REFERENCE)


def _result(m: re.Match[str] | None):
    return None if m is None else (m.end(), m.groupdict())


@settings(max_examples=800, deadline=None)
@given(s=strings)
@example("  ** therefore , is")
@example(" , then is")
@example("\t*\t might be")
@example("   \n")
@example("** :")
@example(" might also be")
def test_the_anchor_link_matches_as_before(s):
    assert _result(CONN.match(s)) == _result(CONN_REFERENCE.match(s))
    for noun in ("answer", "selected"):
        tail = X.ANSWER_TAIL_RE if noun == "answer" else X.CHOSEN_TAIL_RES[noun]
        ref = re.compile(tail.pattern.replace(X.EN_CONN, X.EN_CONN_REFERENCE))
        assert _result(tail.match(noun + s)) == _result(ref.match(noun + s))


@settings(max_examples=400, deadline=None)
@given(s=strings)
def test_the_line_closing_patterns_match_as_before(s):
    assert _result(X.LINE_CLOSES_RE.match(s)) == _result(LINE_CLOSES_REFERENCE.match(s))
    for phrase in P.IT_IS_AFTER_LETTER:
        t = phrase + s
        assert _result(X.IT_IS_AFTER_LETTER_RE.match(t)) == _result(IT_IS_AFTER_LETTER_REFERENCE.match(t))


OTHER_PIECES = [" ", "\n", " \n", "\t", "*", "**", "_", ":", "：", "ঃ", "-", "—", "x", "A", "?"]


@settings(max_examples=300, deadline=None)
@given(
    anchor=st.sampled_from(P.ANCHORS_OTHER_LANGUAGES),
    parts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_the_anchors_in_other_languages_match_as_before(anchor, parts):
    words = [*OTHER_PIECES, *anchor.after, *anchor.links, *(" " + w for w in (*anchor.after, *anchor.links))]
    t = anchor.word + "".join(words[i % len(words)] for i in parts)
    new = X._other_anchor(anchor)[1]
    ref = X._other_anchor(anchor, reference=True)[1]
    assert _result(new.match(t)) == _result(ref.match(t)), t


# the option label at a line start, before the rewrite (three runs of spaces side by side: cubic on a line of
# spaces, which a blanked echo of the prompt is)
LABEL_LINE_BODY_REFERENCE = re.compile(
    r"[ \t>]*(?:[-*+•]|\d+[.)])?[ \t]*(?:\*\*|__)?[ \t]*(?P<pre>option\s+|choice\s+)?[\(\[]?(?P<L>[A-Z])"
    r"(?P<post>(?:[\)\]]|\*\*)?[ \t]*(?:[.):：\-–—]|\*\*|$))",
    re.IGNORECASE,
)
LABEL_PIECES = [" ", "  ", "\t", ">", "-", "*", "**", "__", "1.", "2)", "(", "[", "A", "b", ")", "]", ".", ":", "—",
                "option ", "choice  ", "x"]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(s=st.lists(st.sampled_from(LABEL_PIECES), max_size=10).map("".join))
@example("  - ** (B) ")
@example("> 2) __option C.")
def test_the_label_line_matches_as_before(s):
    assert _result(X.LABEL_LINE_BODY_RE.match(s)) == _result(LABEL_LINE_BODY_REFERENCE.match(s))
