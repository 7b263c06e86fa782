"""Stage 2, candidates: every place in a stretch of the response that states an answer with words — boxes,
JSON answer fields, answer anchors, commitment phrases — each as `Evidence` with its rule, position,
strength and reading. The formats that carry no words (a bare letter, a last label line) are in
`formats.py`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from . import keywords, patterns
from .evidence import (
    ANCHORED,
    DECISIVE,
    LETTER,
    NONE,
    PHRASE,
    SEVERAL,
    Evidence,
    Reading,
    letter_reading,
    none_reading,
)
from .keywords import QUALIFIED, Handler
from .options import Options
from .ordinals import ordinal_commitment
from .patterns import NOUN_ALONE_RE, VERDICT_WITH_NOUN_RE
from .payload import read_letter_list, read_payload
from .scope import may_be_label, options_listed, several_listed
from .text import at_line_start, az_run_start, box_content, line_end
from .tokens import UPPER, letter_use, word_char_before


class Text(NamedTuple):
    """The normalised response and its views (text.py), with the row's options."""

    t: str  # full-width folded
    low: str  # lower-cased, same length
    opts: Options
    ascii: bool
    last_line_start: int  # start of the last non-blank line
    structure: bool  # scope.may_have_structure(t): follow-up markers or sub-items are possible


def make_text(t: str, low: str, opts: Options, structure: bool) -> Text:
    return Text(t, low, opts, t.isascii(), t.rfind("\n", 0, len(t.rstrip())) + 1, structure)


RULE_BOXED = "robust.boxed"
RULE_FINAL = "robust.final_answer"
RULE_ANCHOR = "robust.answer_anchor"
RULE_JSON = "robust.json"
_COMMIT_RULES = {
    "choose": ("robust.commit_choose", ANCHORED),
    "option_correct": ("robust.commit_correct", ANCHORED),
    "it_is": ("robust.commit_phrase", PHRASE),
    "self_correction": ("robust.self_correction", PHRASE),
}


def strong_candidates(x: Text, lo: int, hi: int) -> list[Evidence]:
    """Boxes, JSON fields, anchors and commitment phrases whose statement starts in [lo, hi), in order."""
    t = x.t
    out: list[Evidence] = []
    if t.find("\\", lo, hi + 6) >= 0 and (
        t.find("\\boxed", lo, hi + 6) >= 0 or t.find("\\fbox", lo, hi + 5) >= 0
    ):
        out.extend(_boxes(x, lo, hi))
    if t.find("{", max(0, lo - 400), hi) >= 0 and (t.find('"', lo, hi) >= 0 or t.find("'", lo, hi) >= 0):
        out.extend(_json_fields(x, lo, hi))
    seen: set[int] = set()
    low = x.low
    for k, kw in keywords.keyword_hits(low, lo, hi, x.ascii):
        latin = x.ascii or kw[0] < "\u0250"
        if latin:
            if word_char_before(low, k):
                continue
            e = k + len(kw)  # (a Latin keyword is a whole word, maybe plural: not "note" for "no")
            if e < len(low) and low[e].isalpha():
                if low[e] != "s" or (e + 1 < len(low) and low[e + 1].isalpha()):
                    continue
        for h in keywords.handlers(kw):
            ev = _TRY[h.what](x, k, kw, h, seen)
            if ev is not None:
                out.append(ev)
    out.extend(_line_end_letters(x, lo, hi, seen))
    if len(out) > 1:
        out.sort(key=lambda e: e.pos)
    return out


# --------------------------------------------------------------------------------------------------
# Boxes and JSON
# --------------------------------------------------------------------------------------------------


def _boxes(x: Text, lo: int, hi: int) -> Iterator[Evidence]:
    for m in patterns.BOX_RE.finditer(x.t, lo, min(len(x.t), hi + 20)):
        if m.start() >= hi:
            break
        a, b = box_content(x.t, m.end())
        r = read_payload(x.t, a, b, x.opts, anchored=True)
        if r.kind in DECISIVE and example_before(x.low, m.start()):
            r = none_reading(r.span, "an example of the answer format, not an answer")
        yield Evidence(m.start(), ANCHORED, RULE_BOXED, r)


def _json_fields(x: Text, lo: int, hi: int) -> Iterator[Evidence]:
    for m in patterns.JSON_ANSWER_RE.finditer(x.t, lo, min(len(x.t), hi + 400)):
        if m.start() >= hi:
            break
        a, b = m.span("v")
        if x.t[a] in "\"'[":
            a, b = a + 1, b - 1
        r = read_payload(x.t, a, b, x.opts, anchored=True, prose=False)
        yield Evidence(m.start(), ANCHORED, RULE_JSON, r)


# --------------------------------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------------------------------


def _anchor(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    found = anchor_at(x.t, x.low, k, kw, h, x.ascii or kw[0] < "\u0250")
    if found is None:
        return None
    start, end, final, hedged = found
    a, b = anchor_payload(x.t, end)
    r = read_payload(x.t, a, b, x.opts, anchored=True)
    if r.kind == LETTER and (why := several_listed(options_listed(x.t, a, x.opts), x.opts)) is not None:
        # ("Final Answer:\nA. …\nD. …", "Options:\nA. …\nB. …"): a listing of options, not one answer
        r = Reading(SEVERAL if why.startswith("several") else NONE, None, r.span, why)
    elif r.kind in DECISIVE and conditional_before(x.low, max(0, start - 80), start):
        r = none_reading(r.span, "conditional, not a commitment")
    elif r.kind in DECISIVE and example_before(x.low, start):
        r = none_reading(r.span, "an example of the answer format, not an answer")
    draft = not final and _draft_before(x.low, start)
    return Evidence(start, ANCHORED, RULE_FINAL if final else RULE_ANCHOR, r, hedged=hedged, draft=draft)


def example_before(low: str, k: int) -> bool:
    """An example marker ("e.g.", "例如") stands on the line within 16 characters before k."""
    a = max(0, k - 16)  # (bounded: a scan back to the line start would be quadratic on one long line)
    return patterns.EXAMPLE_BEFORE_RE.search(low, max(low.rfind("\n", a, k) + 1, a), k) is not None


def _draft_before(low: str, k: int) -> bool:
    """The word right before an anchor makes it a draft ("Initial answer: C", "tentative answer")."""
    if k == 0 or low[k - 1] not in " \t":
        return False
    j = k - 1
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    return low[az_run_start(low, j) : j] in patterns.DRAFT_QUALIFIERS


def anchor_at(
    t: str, low: str, k: int, kw: str, h: Handler, latin: bool
) -> tuple[int, int, bool, bool] | None:
    """(start, payload start, is final, is hedged) when an anchor starts with the keyword at k."""
    if (
        latin
        and k > 1
        and low[k - 1] == " "
        and low[az_run_start(low, k - 1) : k - 1] in patterns.ANCHOR_DEMONSTRATIVES
    ):
        return None  # ("This answer choice is less likely": a mention of an option)
    q = None
    heading = False  # "Choice: B" opening a line: the noun is a label of the answer, no qualifier needed
    if h.kind == QUALIFIED:  # (cheap test first: a qualified noun needs a qualifier or "selected" after it)
        q = qualifier_before(low, k) if latin else None
        if q is None and low.find("selected", k, k + 30) < 0 and low.find("chosen", k, k + 30) < 0:
            heading = (
                kw in patterns.HEADING_NOUNS
                and low[k + len(kw) : k + len(kw) + 5].lstrip("s*_ \t")[:1] in (":", "：")
                and at_line_start(t, k)
            )
            if not heading:
                return None
    m = h.tail.match(low, k)  # type: ignore[union-attr]
    if m is None or m.end() == k:
        return None
    start, final = k, False
    if h.kind == keywords.OTHER:
        if h.before is not None:
            b = h.before.search(low, max(0, k - 8), k)
            if b is None:
                return None
        elif (
            len(kw) == 1
            and "\uac00" <= kw <= "\ud7a3"
            and patterns.HANGUL_BEFORE_RE.search(low, max(0, k - 1), k)
        ):
            return None
        if low[max(0, k - 2) : k] in patterns.FINAL_BEFORE_CJK:  # ("最终答案")
            start, final = k - 2, True
    elif h.kind == keywords.CHOSEN:
        c = patterns.CHOSEN_BEFORE_RE.search(low, max(0, k - 20), k)
        if c is None:
            return None
        start = c.start()
    else:
        if h.kind != QUALIFIED:
            q = qualifier_before(low, k) if latin else None
        if q is not None:
            start, final = q
        elif h.kind == QUALIFIED and not heading and not patterns.AFTER_NOUN_CHOSEN_RE.match(low, m.end()):
            return None
    if "eol" in m.re.groupindex and m.group("eol") is not None and not at_line_start(t, start):
        return None
    hedged = "hedge" in m.re.groupindex and m.group("hedge") is not None
    return start, m.end(), final, hedged


def qualifier_before(low: str, k: int) -> tuple[int, bool] | None:
    """(start, is_final) when the word(s) right before k qualify an answer noun: "final", "correct",
    "most likely", "least accurate", "only correct"."""
    if k == 0 or (low[k - 1] != " " and low[k - 1] != "\t"):
        return None
    j = k - 1
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    i = az_run_start(low, j)
    word = low[i:j]
    if not word:
        return None
    h = i
    while h > 0 and low[h - 1] in " \t":
        h -= 1
    g = az_run_start(low, h)
    prev = low[g:h]
    if prev in patterns.DEGREE_WORDS or (prev == "only" and word == "correct"):
        return g, False
    if word in patterns.QUALIFIERS:
        return i, word == "final"
    return None


def anchor_payload(t: str, pos: int) -> tuple[int, int]:
    """The rest of the line after an anchor, or the next non-empty line when that rest is only markup."""
    e = line_end(t, pos)
    rest = t[pos:e]
    if rest.strip(" \t\r*_:：#$\\[]()`") and not patterns.ONLY_MARKUP_RE.fullmatch(rest):
        return pos, min(e, pos + 400)
    n = len(t)
    k = e + 1
    for _ in range(4):
        if k >= n:
            break
        e2 = line_end(t, k)
        line = t[k:e2]
        if line.strip(" \t\r*_:#$\\[]()`-—") and not patterns.ONLY_MARKUP_RE.fullmatch(line):
            return k, min(e2, k + 400)
        k = e2 + 1
    return pos, e


def conditional_before(low: str, a: int, b: int) -> bool:
    """A condition ("if it were A, ...") between the last sentence break before b and b. A cheap
    necessary test first: one of the condition words occurs after the last "." or newline."""
    e = b - 1 if b > a and low[b - 1] == "\n" else b
    c = max(a, low.rfind(".", a, e) + 1, low.rfind("\n", a, e) + 1)
    if patterns.CONDITION_HINT_RE.search(low, c, e) is not None:
        return patterns.CONDITIONAL_BEFORE_RE.search(low, a, b) is not None
    return False


# --------------------------------------------------------------------------------------------------
# Commitment phrases
# --------------------------------------------------------------------------------------------------


def _letters_at(x: Text, j: int, kind: str, start: int) -> Reading:
    """The reading of a commitment's letter slot at t[j] (with any list that follows it)."""
    t = x.t
    letter = t[j]
    if letter not in UPPER:
        # an explicit commitment to a parenthesised label takes it in lower case too: "I pick (a).",
        # and so does "option c is correct" (the noun names the letter)
        explicit = kind == "option_correct" or (t[j - 1 : j] == "(" and t[j + 1 : j + 2] == ")")
        if kind not in ("choose", "option_correct") or not explicit or not letter.isalpha():
            return none_reading((j, j + 1), "lower-case letter without an anchor")
        letter = letter.upper()
    reason = letter_use(t, j)
    if reason is None and kind in ("it_is", "verdict_alone", "conclusion", "closing"):
        if conditional_before(x.low, max(0, start - 60), start):
            reason = "conditional, not a commitment"
        elif kind == "it_is" and patterns.RETRACTED_BEFORE_RE.search(t, max(0, start - 40), start):
            reason = "doubted, not a commitment"  # ("I'm no longer sure it's B")
    if (
        reason is None
        and kind != "self_correction"
        and patterns.CONDITION_AFTER_HINT_RE.search(x.low, j + 1, j + 24)
    ):
        if patterns.CONDITIONAL_AFTER_RE.match(t, j + 1):
            reason = "conditional, not a commitment"
    if reason is not None:
        return none_reading((j, j + 1), reason)
    found, end = read_letter_list(t, j, letter, t[j].islower())
    if len(found) > 1:
        distinct = list(dict.fromkeys(found))
        if len(distinct) > 1:
            return Reading(SEVERAL, None, (j, end), "several letters: " + "/".join(distinct))
    if letter in x.opts.letters:
        return Reading(LETTER, letter, (j, j + 1), "commitment")
    return letter_reading(letter, x.opts.letters, j, "commitment")


def _commit(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    m = h.tail.match(x.low, k)  # type: ignore[union-attr]
    if m is None:
        if h.kind != "it_is":
            return None
        return _letter_it_is(x, k, seen) or _it_is_text(x, k)
    start = k
    if h.before is not None:
        q = h.before.search(x.low, max(0, k - 20), k)
        if q is None:
            return None
        start = q.start()
    j = m.start("L")
    if j in seen:
        return None
    seen.add(j)
    rule, tier = _COMMIT_RULES[h.kind]
    r = _letters_at(x, j, h.kind, start)
    if h.kind == "option_correct" and m.group("more") and r.kind == LETTER:
        more = [c.upper() for c in patterns.LONE_LETTER_RE.findall(m.group("more"))]
        if any(c != r.letter for c in more):
            r = Reading(
                SEVERAL,
                None,
                (j, m.end("more")),
                "several letters: " + "/".join([r.letter, *more]),  # type: ignore[list-item]  # a LETTER reading
            )
    draft = h.kind == "choose" and _draft_before(x.low, start)  # ("Initially I'd pick B")
    return Evidence(start, tier, rule, r, revision=h.kind == "self_correction", draft=draft)


def _letter_it_is(x: Text, k: int, seen: set[int]) -> Evidence | None:
    """ "D it is.": a capital letter opening its line, then "it is" closing the sentence."""
    if not patterns.IT_IS_AFTER_LETTER_RE.match(x.low, k):
        return None
    q = patterns.LETTER_BEFORE_IT_IS_RE.search(x.t, max(0, k - 24), k)
    if q is None or q.start("L") in seen:
        return None
    j = q.start("L")
    seen.add(j)
    return Evidence(j, PHRASE, "robust.commit_phrase", _letters_at(x, j, "it_is", j))


def _label_sentence(x: Text, k: int, kw: str, seen: set[int]) -> Evidence | None:
    """ "D) Trajan is the answer.", "So (A) New York City is the best answer.": a label (opening the line,
    or in brackets anywhere), its own option text, then "is the answer" / "is the best answer"."""
    ls = x.t.rfind("\n", 0, k) + 1
    noun = NOUN_ALONE_RE.match(x.low, k) if kw == "answer" else VERDICT_WITH_NOUN_RE.match(x.low, k)
    if noun is None:
        return None
    q = None
    if k - ls <= 140 and may_be_label(x.t, ls, k):  # (cheap tests first: a label opens the line, or "(X) ")
        q = patterns.LABEL_SENTENCE_BEFORE_RE.search(x.t, max(0, k - 140), k)
    if q is None and x.t.find(") ", max(ls, k - 140), k) >= 0:
        q = patterns.PAREN_LABEL_SENTENCE_BEFORE_RE.search(x.t, max(ls, k - 140), k)
    if q is None or q.start("L") in seen:
        return None
    j = q.start("L")
    letter = x.t[j]
    if letter not in x.opts.letters or x.opts.equal(x.t[q.start("T") : q.end("T")]) != letter:
        return None
    seen.add(j)
    return Evidence(
        q.start("L"), ANCHORED, "robust.commit_correct", Reading(LETTER, letter, (j, j + 1), "commitment")
    )


def _it_is_text(x: Text, k: int) -> Evidence | None:
    """ "It is Bach.", "so it must be None of these": an it-is phrase and a whole option text closing the
    line commit to that option."""
    e = x.t.find("\n", k, k + 161)  # (not the whole line: one scan per phrase on a long line is quadratic)
    if e < 0:
        e = len(x.t)
    if e - k > 160:  # (cheap tests first: a short rest of the line, starting like a name or a number)
        return None
    m = patterns.IT_IS_TEXT_RE.match(x.low, k, e)
    if m is None or not (x.t[m.start("T")].isupper() or x.t[m.start("T")].isdigit()):
        return None
    if conditional_before(x.low, max(0, k - 60), k):
        return None
    a, b = m.span("T")
    letter = x.opts.equal(x.t[a:b])
    if letter is None:
        return None
    return Evidence(k, PHRASE, "robust.commit_phrase", Reading(LETTER, letter, (a, b), "option text"))


def _verdict(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    """ "B is the correct answer", "C is the least accurate statement", "A and C are right", "B is the
    answer": a letter and a verdict on it, found from the verdict word backwards."""
    low = x.low
    if kw == "best" and patterns.STATEMENT_END_RE.match(low, k + 4):
        f = patterns.FITS_BEST_BEFORE_RE.search(x.t, max(0, k - 24), k)
        if f is not None and f.start("L") not in seen:
            seen.add(f.start("L"))
            r = _letters_at(x, f.start("L"), "verdict_alone", f.start())
            return Evidence(f.start(), PHRASE, "robust.commit_correct", r, verdict_of_letter=True)
    if not copula_before(low, k):
        return _as_the_answer(x, k, seen) if kw == "answer" else None
    q = patterns.VERDICT_BEFORE_RE.search(x.t, max(0, k - 40), k)
    if q is None:
        return _label_sentence(x, k, kw, seen)
    j = q.start("L")
    if j in seen:
        return None
    more = [c for c in q.group("more") if c.isupper()]
    if kw in patterns.VERDICT_NOUNS_ALONE:
        words = low[q.start() : k].split()
        if words and words[-1] in patterns.VERDICT_FINAL_WORDS:
            words.pop()
        if not words or words[-1] not in patterns.VERDICT_DETERMINERS or not NOUN_ALONE_RE.match(low, k):
            return None
        tier, kind = ANCHORED, "verdict_noun"
    elif VERDICT_WITH_NOUN_RE.match(low, k):
        tier, kind = ANCHORED, "verdict_noun"
    elif patterns.VERDICT_ALONE_RE.match(low, k) or (more and patterns.PLURAL_VERDICT_RE.match(low, k)):
        tier, kind = PHRASE, "verdict_alone"
    else:
        return None
    if not more and kw in patterns.PLURAL_ONLY_VERDICTS:
        return None
    seen.add(j)
    if patterns.LIST_BEFORE_RE.search(low, max(0, j - 30), j):
        r = none_reading((j, j + 1), "one of several letters, not a commitment")
    else:
        r = _letters_at(x, j, kind, q.start())
        if more and r.kind == LETTER and any(c != r.letter for c in more):
            r = Reading(
                SEVERAL,
                None,
                (j, q.end("more")),
                "several letters: " + "/".join([r.letter, *more]),  # type: ignore[list-item]  # a LETTER reading
            )
    also = any(w in patterns.ALSO_WORDS for w in low[q.start() : k].split())
    return Evidence(
        q.start(), tier, "robust.commit_correct", r, verdict_of_letter=kind == "verdict_alone", also=also
    )


def _as_the_answer(x: Text, k: int, seen: set[int]) -> Evidence | None:
    """ "So we get D as the answer.": a letter taken as the answer, closing its line."""
    if k < 8 or x.low[k - 1] != " " or not patterns.LINE_CLOSES_RE.match(x.low, k + 6):
        return None
    q = patterns.AS_THE_ANSWER_BEFORE_RE.search(x.t, max(0, k - 40), k)
    if q is None or q.start("L") in seen:
        return None
    j = q.start("L")
    c = max(x.low.rfind(p, max(0, j - 80), j) for p in ".;!?\n:") + 1  # (the clause before the letter)
    if not patterns.AS_THE_ANSWER_LEAD_RE.fullmatch(x.low, max(c, j - 80), j):
        return None
    seen.add(j)
    return Evidence(q.start(), PHRASE, "robust.conclusion", _letters_at(x, j, "conclusion", q.start()))


def copula_before(low: str, k: int) -> bool:
    """A cheap necessary test for VERDICT_BEFORE_RE ending at k: the words before k end with "is"/"are",
    maybe followed by "both"/"all", "the"/"my"/"our" and "only"."""
    if k == 0 or not low[k - 1].isspace():
        return False
    words = low[max(0, k - 24) : k].split()
    while words and words[-1] in patterns.VERDICT_AFTER_COPULA:
        words.pop()
    return bool(words) and words[-1] in patterns.VERDICT_COPULAS


def _cjk_verdict(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    """ "选项B正确", "B是正确的": a letter right before a Chinese verdict word."""
    q = patterns.CJK_VERDICT_BEFORE_RE.search(x.t, max(0, k - 12), k)
    if q is None or q.start("L") in seen:
        return None
    if patterns.CJK_VERDICT_NEGATED_AFTER_RE.match(x.t, k + len(kw)):
        return None  # ("5번은 정답이 아닙니다", "Cは正解ではない": a verdict against the letter)
    j = q.start("L")
    seen.add(j)
    return Evidence(
        q.start(), ANCHORED, "robust.commit_correct", _letters_at(x, j, "verdict_noun", q.start())
    )


def _elimination(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    """ "rules out A and B, leaving C", "which leaves B", "only D remains"."""
    m = patterns.ELIMINATION_BEFORE_RE.match(x.low, k)
    if m is not None:
        j = m.start("L")
        start = k
    else:
        if kw not in patterns.ELIMINATION_AFTER_KEYWORDS:
            return None
        q = patterns.ELIMINATION_AFTER_RE.search(x.low, max(0, k - 40), k + len(kw))
        if q is None or patterns.STATEMENT_END_RE.match(x.low, k + len(kw)) is None:
            return None
        j = q.start("L")
        start = q.start()
    if j in seen:
        return None
    seen.add(j)
    return Evidence(start, PHRASE, "robust.elimination", _letters_at(x, j, "elimination", start))


def _ordinal(x: Text, k: int, kw: str, h: Handler, seen: set[int]) -> Evidence | None:
    """ "That's the second option." (ordinals.py), unless under a condition."""
    ev = ordinal_commitment(x.t, x.low, k, kw, x.opts.letters)
    if ev is not None and ev.decisive and conditional_before(x.low, max(0, ev.pos - 60), ev.pos):
        return ev._replace(reading=none_reading(ev.reading.span, "conditional, not a commitment"))
    return ev


# What each kind of keyword handler tries (keywords.py): all take (text, position, keyword, handler, seen).
_TRY = {
    keywords.ANCHOR: _anchor,
    keywords.COMMIT: _commit,
    keywords.VERDICT: _verdict,
    keywords.CJK_VERDICT: _cjk_verdict,
    keywords.ELIMINATION: _elimination,
    keywords.ORDINAL: _ordinal,
}


def _line_end_letters(x: Text, lo: int, hi: int, seen: set[int]) -> Iterator[Evidence]:
    """Lines ending in a capital letter, whose end is in [lo, hi) (or the text end when hi is the end):
    "Therefore, B." (a conclusion) and, on the last line, "The vitamin in question is (D)." (a copula
    closing the response). Lines are walked with str.find; the detailed patterns run only where the
    line's last word is a capital letter after a plausible word."""
    t, low = x.t, x.low
    n = len(t)
    last_line_start = x.last_line_start
    ls = t.rfind("\n", 0, lo) + 1
    while ls <= hi:
        e = t.find("\n", ls, hi)
        if e < 0:
            if hi < n:
                break
            e = hi
        k = e
        while k > ls and t[k - 1] in patterns.LINE_END_TRAIL:
            k -= 1
        k -= 1
        line_start, ls = ls, e + 1
        if k < line_start or not ("A" <= t[k] <= "Z") or word_char_before(t, k):
            continue
        a = max(line_start, k - 60)
        w = low[a:k].rstrip("([*")
        if not w or not w[-1].isspace():
            continue
        if w.rstrip().endswith(patterns.CONCLUSION_ENDINGS):
            m = patterns.CONCLUSION_RE.search(low, a, e)
            if m is not None and m.start("L") not in seen:
                seen.add(m.start("L"))
                yield Evidence(
                    m.start(),
                    PHRASE,
                    "robust.conclusion",
                    _letters_at(x, m.start("L"), "conclusion", m.start()),
                )
                continue
        closing = line_start == last_line_start or (t[k - 1] == "(" and t[k + 1 : k + 2] == ")")
        if closing or (e < n and t[k] in x.opts.letters):
            m = patterns.CLOSING_COPULA_RE.search(low, a, e)
            if m is None or m.start("L") in seen or t[m.start("L")] not in x.opts.letters:
                continue
            if closing or only_remarks_after(x, e, t[k]):
                seen.add(m.start("L"))
                r = _letters_at(x, m.start("L"), "closing", m.start())
                yield Evidence(m.start(), PHRASE, "robust.closing_statement", r)


def only_remarks_after(x: Text, e: int, letter: str) -> bool:
    """What follows position e is a short closing remark ("(D and C do not fit.)", "Hope this helps!"):
    at most 200 characters in at most 3 lines, no revision or hedge, and every option letter in it is
    another letter than `letter`, dismissed."""
    rest = x.t[e:]
    if len(rest) > 200 or rest.strip().count("\n") > 2 or patterns.REVISION_RE.search(rest):
        return False
    if patterns.HEDGE_WORDS_RE.search(x.low, e):
        return False
    for m in patterns.PROSE_LETTER_RE.finditer(rest):
        j = m.start()
        c = rest[j]
        if c not in x.opts.letters or letter_use(rest, j) is not None:
            continue
        if c == letter:
            return False
        found, end = read_letter_list(rest, j, c, False)
        if not (
            patterns.NEGATED_BEFORE_RE.search(rest, max(0, j - 20), j)
            or patterns.DISMISSED_AFTER_RE.match(rest, end)
        ):
            return False
    return True
