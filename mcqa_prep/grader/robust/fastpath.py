"""The fast path: the result of the general path for the most common closing lines, without its scans.

Most responses end with one of a few shapes: `Answer: B`, `**Final Answer:** \\boxed{B}`, `Therefore, the
correct answer is (B).`, `Final answer: <option text>`, `Option B is correct.`, `\\boxed{B}`, `答案：B`.
`fast_extract` recognises them on the closing line and returns exactly what `general_extract` returns
(letter, status, rule, span, candidates, message), or None (the general path runs) when any
precondition fails:

- the closing line is the general path's first stage (text longer than 300 characters, the line starts
  at a line start, it is the last line with words), so stage 1 holds exactly the shape's candidates;
- the words of the line are the shape's own: a free payload holds no keyword, no quote, no backslash
  and no capital letter closing the line, so no other candidate can appear in it;
- nothing before the line can change the decision: no sub-items in the text, no follow-up question
  before the answer, no conjunction joining it to an earlier answer, no condition before the anchor —
  each checked with the general path's own functions.

The property tests (tests/test_robust_fastpath.py) compare both paths on generated texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...records import STATUS_OK, Candidate
from ..base import Extraction
from . import keywords, patterns, phrases
from .candidates import anchor_at, anchor_payload, conditional_before, copula_before
from .evidence import DECISIVE, LETTER, Reading, letter_reading
from .extract import STATUS_OF, first_stage_start, may_join_earlier, said_before
from .options import Options
from .payload import read_payload
from .region import answer_region
from .scope import listing_right_above, may_be_label, may_have_structure
from .text import fold_width
from .tokens import UPPER, letter_use

# The shapes' words, all from phrases.py: a conclusion word that may open the line, a qualifier, an answer
# noun (a qualified noun only with its qualifier), an answer word of another language written like
# "Answer:" (only with a colon, opening the line), the nouns of "Option B is correct".
_LEADS = tuple(w for w in phrases.CONCLUSION_WORDS if w.isalpha())
_NOUNS = phrases.ANSWER_NOUNS + tuple(n for n in phrases.HEADING_NOUNS if n not in phrases.QUALIFIERS)
_FOREIGN = tuple(
    dict.fromkeys(
        a.word
        for a in phrases.ANCHORS_OTHER_LANGUAGES
        if a.word.isascii()
        and a.word.isalpha()
        and a.link_required
        and not (a.after_required or a.before_required)
    )
)
_FOREIGN_SET = frozenset(_FOREIGN)
_LETTER = r"[(*]*(?P<L>[a-z])[)*.]*"
_BOX = r"\$?(?P<bx>\\boxed)\{(?:\\text\{(?P<BL>[a-z])\}|(?P<BL2>[a-z]))\}\$?\.?"
_HEAD = (
    r"(?:\*\*)?(?:(?:"
    + "|".join(_LEADS)
    + r"),? )?(?:the )?(?:(?P<q>"
    + "|".join(phrases.QUALIFIERS)
    + ") )?"
    r"(?P<kw>" + "|".join(_NOUNS + _FOREIGN) + r")(?P<conn>(?:\*\*)?:(?:\*\*)?| is) "
)
ANCHOR_RE = re.compile(_HEAD + "(?:" + _LETTER + "|" + _BOX + ")")
HEAD_RE = re.compile(_HEAD)
COMMIT_RE = re.compile(
    r"(?:\*\*)?(?P<kw>" + "|".join(phrases.OPTION_NOUNS) + r") (?P<L>[a-z]) is correct\.?(?:\*\*)?"
)
BOX_LINE_RE = re.compile(
    r"(?:\\\[ ?|\$\$? ?)?(?P<bx>\\boxed)\{(?:\\text\{(?P<BL>[a-z])\}|(?P<BL2>[a-z]))\}(?: ?\\\]| ?\$\$?)?\.?"
    r"(?:\n(?:\\\]|\$\$))?"
)
CJK_RE = re.compile(r"(?:\*\*)?(?P<kw>答案)(?:\*\*)?:(?:\*\*)? ?" + _LETTER)
# The first characters of the shapes above (the closing line must start with one).
_FIRST = frozenset(
    "*\\$"
    + "".join(
        w[0] + w[0].upper()
        for w in (*_LEADS, "the", *phrases.QUALIFIERS, *_NOUNS, *_FOREIGN, *phrases.OPTION_NOUNS)
    )
)

RULE_ANCHOR, RULE_FINAL, RULE_BOXED, RULE_COMMIT = (
    "robust.answer_anchor",
    "robust.final_answer",
    "robust.boxed",
    "robust.commit_correct",
)


def fast_extract(text: str, letters: Mapping[str, Any]) -> Extraction | None:
    """general_extract(text, letters) when the closing line is a known shape, else None."""
    if answer_region(text) is not None:
        return None
    return fast_region(text, letters)


def fast_region(text: str, letters: Mapping[str, Any]) -> Extraction | None:
    """read_text(text, letters) when the closing line is a known shape, else None (`text` is all answer
    region)."""
    n = len(text)
    if n <= 300:
        return None
    if not text.isascii():
        return _cjk(text, letters)
    lo1 = first_stage_start(text, n)
    if text[lo1 - 1] != "\n" or text[lo1] not in _FIRST:
        return None
    w0 = lo1 - 100
    # (ASCII: the same characters as the whole text lower-cased; trailing whitespace left out)
    end = n
    while text[end - 1] in " \t\r\n":  # (lo1 < n holds a word character, so this stops)
        end -= 1
    low = text[w0:end].lower()
    r = lo1 - w0
    m = ANCHOR_RE.fullmatch(low, r)
    if m is not None:
        return _anchor_shape(text, letters, m, low, w0)
    m = HEAD_RE.match(low, r)
    if m is not None:
        return _free_anchor(text, letters, m, low, w0, lo1)
    m = COMMIT_RE.fullmatch(low, r)
    if m is not None:
        return _commit_shape(text, letters, m, w0)
    m = BOX_LINE_RE.fullmatch(low, r)
    if m is not None:
        j, bx = _box_letter(text, m, w0)
        if j < 0:
            return None
        p = letter_reading(text[j].upper(), letters, j, "leading letter")
        return _finish(
            text, letters, lo1, RULE_BOXED, bx, p, [Candidate(RULE_BOXED, p.span, p.letter, _accepted(p))]
        )
    return None


def _anchor_shape(
    text: str, letters: Mapping[str, Any], m: re.Match[str], low: str, w0: int
) -> Extraction | None:
    kw, q = m.group("kw", "q")
    k = m.start("kw")
    r = m.start()
    if q is None:
        if kw not in phrases.ANSWER_NOUNS and kw not in _FOREIGN_SET:  # (a qualified noun without one)
            return None
        if kw in _FOREIGN_SET and (k - r > 2 or m.group("conn") == " is"):
            return None
        start = k
        rule = RULE_ANCHOR
    else:
        if kw in _FOREIGN_SET:
            return None
        start = m.start("q")
        rule = RULE_FINAL if q == "final" else RULE_ANCHOR
    lo1 = m.start() + w0
    plain = _plain_above(text, lo1)
    if not plain and (
        _verdict_before(text, w0 + k)
        or (q is not None and q != "final" and _verdict_before(text, w0 + m.start("q")))
    ):
        return None
    conditional = patterns.CONDITION_HINT_RE.search(
        low, max(0, start - 80), start
    ) is not None and conditional_before(low, start - 80, start)
    start += w0
    j = m.start("L")
    if j >= 0:
        if conditional:
            return None
        j += w0
        letter = text[j].upper()
        if letter in letters:
            p = Reading(LETTER, letter, (j, j + 1), "leading letter")
            cands = [Candidate(rule, p.span, letter, "accepted")]
        else:
            p = letter_reading(letter, letters, j, "leading letter")
            cands = [Candidate(rule, p.span, p.letter, _accepted(p))]
        if (
            m.group("conn") == " is"
            and text[j] in UPPER
            and text[j] in letters
            and _closing_copula(low, m, w0, text)
        ):
            cands.append(
                Candidate(
                    "robust.closing_statement", p.span, p.letter, "same answer as the deciding candidate"
                )
            )
        return _finish(text, letters, lo1, rule, start, p, cands, plain)
    j, bx = _box_letter(text, m, w0)
    if j < 0:
        return None
    p = letter_reading(text[j].upper(), letters, j, "leading letter")
    if conditional:
        first = Candidate(rule, p.span, None, "conditional, not a commitment")
    else:
        first = Candidate(rule, p.span, p.letter, "same answer as the deciding candidate")
    box = Candidate(RULE_BOXED, p.span, p.letter, _accepted(p))
    return _finish(text, letters, lo1, RULE_BOXED, bx, p, [first, box], plain)


def _closing_copula(low: str, m: re.Match[str], w0: int, text: str) -> bool:
    """The general path also lists "... is (B)." closing the last line as a closing statement."""
    j = m.start("L")
    e = m.end()
    return (
        patterns.CLOSING_COPULA_RE.search(low, max(m.start(), j - 60), e) is not None
        and not text[j - 1 + w0].isalnum()
    )


def _free_anchor(
    text: str, letters: Mapping[str, Any], m: re.Match[str], low: str, w0: int, lo1: int
) -> Extraction | None:
    """An anchor with any payload on the closing line, read with the general functions, when nothing else
    in the line can be a candidate."""
    end = w0 + len(low)
    if (
        text.find("\n", lo1, end) >= 0
        or text.find("\\", lo1) >= 0
        or text.find('"', lo1) >= 0
        or text.find("'", lo1) >= 0
    ):
        return None
    rest = low[m.end() :]
    kw, q = m.group("kw", "q")
    if (
        kw in rest
        or (q is not None and q in rest)
        or keywords.words_present(rest)
        or patterns.LINE_END_CAPITAL_RE.search(text, lo1) is not None
    ):
        return None
    k = m.start("kw")
    if _verdict_before(text, w0 + k) or (
        q is not None and q != "final" and _verdict_before(text, w0 + m.start("q"))
    ):
        return None
    handlers = keywords.handlers(kw)
    if any(h.what == keywords.COMMIT and h.tail.match(low, k) for h in handlers):  # type: ignore[union-attr]
        return None
    full = text.lower()
    found = anchor_at(text, full, k + w0, kw, handlers[0], True)
    if found is None:
        return None
    start, end, final, hedged = found
    a, b = anchor_payload(text, end)
    p = read_payload(text, a, b, Options(letters), anchored=True)
    if hedged or p.kind not in DECISIVE or conditional_before(full, max(0, start - 80), start):
        return None
    rule = RULE_FINAL if final else RULE_ANCHOR
    return _finish(text, letters, lo1, rule, start, p, [Candidate(rule, p.span, p.letter, _accepted(p))])


def _verdict_before(text: str, k: int) -> bool:
    """A letter and "is" right before a verdict keyword: the general path would also try "B is the ..."."""
    a = max(0, k - 30)
    return (
        copula_before(text[a:k].lower(), k - a)
        and patterns.VERDICT_BEFORE_RE.search(text, max(0, k - 40), k) is not None
    )


def _commit_shape(text: str, letters: Mapping[str, Any], m: re.Match[str], w0: int) -> Extraction | None:
    j = m.start("L") + w0
    if text[j] not in UPPER or letter_use(text, j) is not None:
        return None
    p = letter_reading(text[j], letters, j, "commitment")
    return _finish(
        text,
        letters,
        m.start() + w0,
        RULE_COMMIT,
        m.start("kw") + w0,
        p,
        [Candidate(RULE_COMMIT, p.span, p.letter, _accepted(p))],
    )


def _box_letter(text: str, m: re.Match[str], w0: int) -> tuple[int, int]:
    """(letter index, box start) of the box matched on the lower-cased text, or (-1, -1) when the commands
    are not written in lower case (boxes and markup are matched case-sensitively)."""
    bx = m.start("bx") + w0
    j = m.start("BL")
    if j < 0:
        j = m.start("BL2")
        if not text.startswith("\\boxed", bx):
            return -1, -1
    elif not text.startswith("\\boxed{\\text", bx):
        return -1, -1
    return j + w0, bx


def _cjk(text: str, letters: Mapping[str, Any]) -> Extraction | None:
    """The last line is `答案：B` and everything before it is ASCII: the general path's first stage is that
    line, its only keyword "答案" (not "答"), with no "最终" before it (it starts the line)."""
    n = len(text)
    while n > 0 and text[n - 1] in " \t\r\n\u3000":
        n -= 1
    s0 = text.rfind("\n", 0, n) + 1
    if s0 < n - 200 or s0 == 0 or not text[:s0].isascii():
        return None
    line = fold_width(text[s0:n])
    m = CJK_RE.fullmatch(line.lower())
    if m is None:
        return None
    k = m.start("kw")
    window = text[max(0, s0 + k - 81) : s0].lower() + line.lower()[:k]
    if conditional_before(window, max(0, len(window) - 80), len(window)):
        return None
    j = m.start("L")
    p = letter_reading(line[j].upper(), letters, s0 + j, "leading letter")
    rule = RULE_ANCHOR
    t = text[:s0] + line + fold_width(text[n:])  # (the general path's text: the ASCII part folds to itself)
    cands = [Candidate(rule, p.span, p.letter, _accepted(p))]
    return _finish(t, letters, s0, rule, s0 + k, p, cands, _plain_above(t, s0))


def _accepted(p: Reading) -> str:
    return "accepted" if p.kind == LETTER else p.verdict


# How a line ends when it may join the closing line's answer to another, or start a verdict on it.
_VERDICT_LEAD_WORDS = tuple(patterns.VERDICT_COPULAS | patterns.VERDICT_AFTER_COPULA)
_ABOVE_ENDINGS = patterns.JOINER_ENDINGS + tuple(" " + w for w in _VERDICT_LEAD_WORDS)
_ABOVE_WORDS = patterns.JOINER_WORDS | frozenset(_VERDICT_LEAD_WORDS)


def _plain_above(t: str, lo1: int) -> bool:
    """The previous non-blank line can neither join the closing line's answer to another ('A or'), nor
    start a verdict on it ('B is'), nor be an option label (an invented listing right above): then the
    checks for those are skipped (a cheap sufficient test; otherwise the exact checks run)."""
    j = lo1 - 1
    while j > 0 and t[j - 1] in " \t\r\n":
        j -= 1
    if j <= 0:
        return True
    tail = t[j - 16 if j > 16 else 0 : j].rstrip(" \t*_$`([{#>").lower()
    if not tail or tail.endswith(_ABOVE_ENDINGS) or tail in _ABOVE_WORDS:
        return False
    return not may_be_label(t, t.rfind("\n", 0, j) + 1, j)


def _finish(
    t: str,
    letters: Mapping[str, Any],
    lo1: int,
    rule: str,
    pos: int,
    p: Reading,
    cands: list[Candidate],
    plain: bool = False,
) -> Extraction | None:
    """The result, when nothing before the closing line can change it (cheap necessary tests: any
    possible coordination, sub-item, follow-up marker or invented listing sends the text to the general
    path, which handles them)."""
    span = (pos if pos < p.span[0] else p.span[0], p.span[1])
    if not plain and (may_join_earlier(t, lo1, pos) or listing_right_above(t, span[0])):
        return None
    if may_have_structure(t):
        return None
    if said_before(t, lo1, rule, pos, p.span[0]):
        return None  # (the anchor repeats: the general path reads every one)
    if p.kind == LETTER:
        return Extraction(p.letter, STATUS_OK, rule, span, tuple(cands))
    return Extraction(None, STATUS_OF[p.kind], rule, span, tuple(cands), message=p.verdict)
