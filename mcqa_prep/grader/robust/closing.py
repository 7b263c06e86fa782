"""Stage 2b, the closing line: a response whose last line is a short sentence naming one option letter,
with nothing said against it, commits to that letter ("E wins out.", "That narrows it to A.", "I'd
settle on B.", "Je choisis donc D.") — whatever words it commits with. A FORMAT rule (docs/robust.md):
it counts only when no anchored statement and no phrase decided, so a known phrase always wins over it.

The line must be one sentence of at most a few words around the letter, the letter closing it (maybe
followed by its option text) or opening it before a short predicate; it must hold no negation, contrast,
condition, hedge, dismissal or announcement of a check (`CLOSING_LINE_VETOES`), no question, no other
letter, no other option's text; and it must not repeat the frame of an earlier line with another letter
(the next item of a walk through the options: "Reject B; ..." after "Reject D; ..."). A last line that
only remarks on other letters, dismissed ("(For the record: C and E both fail.)"), passes the reading on
to the line before it."""

from __future__ import annotations

import re

from . import patterns as X
from . import phrases as P
from .candidates import Text, only_remarks_after
from .evidence import FORMAT, LETTER, Evidence, Reading, none_reading
from .formats import dangling
from .text import blank_markup, norm
from .payload import read_letter_list
from .tokens import after_name, letter_use

RULE_CLOSING_LINE = "robust.closing_line"
_MAX_LINE = 120
_TRAIL = " \t\r*_`$\"'”’.!。)]"
_OPEN = " \t*_`$\"'“‘([>#"
# A line that opens with an item label ("a. A", "(ii) C", "2) B") answers an item, not the question.
_ITEM_LABEL_RE = re.compile(r"[\s(\[]*(?:[a-z]|[ivx]+|\d+)[.):\]]\s")
# Words before a letter that do not make a name of it ("settle on A"); other ASCII words do ("grade A",
# "an A"); a word in another script is judged by the option texts and the response ("chọn C").
_PREPOSITIONS = frozenset(("on", "upon", "onto", "at", "for", "in", "into"))


def closing_line(x: Text) -> Evidence:
    """The closing line's letter, or a none reading saying why not."""
    t = x.t
    e = len(t.rstrip())
    s0 = t.rfind("\n", 0, e) + 1
    j, why = _line_letter(x, s0, e)
    if j < 0 and why in ("a remark on other letters", "no letter"):
        e2 = len(t[:s0].rstrip())
        s2 = t.rfind("\n", 0, e2) + 1
        if e2 > 0:
            j2, why2 = _line_letter(x, s2, e2)
            if j2 >= 0 and only_remarks_after(x, e2, _letter(t, j2)):
                j, why = j2, why2
    if j < 0:
        return Evidence(s0, FORMAT, RULE_CLOSING_LINE, none_reading((s0, e), why))
    letter = _letter(t, j)
    return Evidence(j, FORMAT, RULE_CLOSING_LINE, Reading(LETTER, letter, (j, j + 1), "closing line"))


def _letter(t: str, j: int) -> str:
    return t[j].upper()


def _line_letter(x: Text, s0: int, e: int) -> tuple[int, str]:
    """(index of the committed letter in x.t, "") or (-1, why not) for the line t[s0:e]."""
    t = x.t
    raw = t[s0:e]
    if len(raw) > _MAX_LINE or not raw.strip():
        return -1, "not a short closing line"
    s = blank_markup(raw)
    if X.BULLET_START_RE.match(raw) or _ITEM_LABEL_RE.match(s) or "|" in s or "?" in s or dangling(raw):
        return -1, "not a closing sentence"
    core = s.strip(" \t*_`$")
    if core.startswith(("(", "[")) and core.rstrip(".!").endswith((")", "]")):
        aside = True  # "(Answer to that one: A.)": an aside, not the response's commitment
    else:
        aside = False
    letters = _letter_tokens(x, s)
    if not letters:
        return -1, "no letter"
    if len({c for _, c in letters}) > 1:
        if _remark(x, s0, letters):
            return -1, "a remark on other letters"
        return -1, "several letters"
    if aside:
        return -1, "a remark on other letters" if _remark(x, s0, letters) else "an aside in parentheses"
    j, letter = letters[-1]
    if letter not in x.opts.letters:
        return -1, f"{letter} is not an option"
    low = s.lower()
    before, after = _without_option_text(x, low, j, letter)
    if X.CLOSING_LINE_VETO_RE.search(before) or X.CLOSING_LINE_VETO_RE.search(after):
        if _remark(x, s0, letters):
            return -1, "a remark on other letters"
        return -1, "said against the letter, or not a commitment"
    words_before = X.CLOSING_LINE_WORD_RE.findall(before)
    words_after = X.CLOSING_LINE_WORD_RE.findall(after)
    if not after.strip(_TRAIL):  # the letter closes the line: "That narrows it to A."
        if len(words_before) > P.CLOSING_LINE_MAX_WORDS_BEFORE or not _one_sentence(before):
            return -1, "not one short sentence"
        frame = " ".join(words_before[-3:])
        pattern = r"\b" + re.escape(frame).replace(r"\ ", r"\W+") + r"\W{0,4}([A-Z])\b" if frame else None
    elif not before.strip(_OPEN):  # the letter opens it: "E wins out."
        rest = after.lstrip(" \t*_`$")
        if rest[:1] in ":;,.-–—()]" or len(words_after) > P.CLOSING_LINE_MAX_WORDS_AFTER:
            return -1, "a label followed by a discussion"
        if not _one_sentence(rest):
            return -1, "not one short sentence"
        frame = " ".join(words_after[:3])
        pattern = r"\b([A-Z])[)\]*_\s]{1,4}" + re.escape(frame).replace(r"\ ", r"\W+") + r"\b"
    else:
        return -1, "a letter inside a sentence"
    if pattern is not None and _repeats_frame(x, s0, pattern, letter):
        return -1, "the next item of a walk through the options"
    return s0 + j, ""


def _letter_tokens(x: Text, s: str) -> list[tuple[int, str]]:
    """Standalone capital letters of the line (and a lower-case label named by its noun: "option (c)")."""
    out = []
    for m in X.PROSE_LETTER_RE.finditer(s):
        j = m.start()
        if letter_use(s, j) is not None:
            continue
        if after_name(s, j) and _name_like(x, s, j):
            continue
        found, _ = read_letter_list(s, j, s[j], False)  # ("C and A both work": A is no article here)
        out.extend((j, c) for c in found)
    for m in X.CLOSING_LINE_LOWER_RE.finditer(s.lower()):
        j = m.start(1)
        if s[j].islower():
            out.append((j, s[j].upper()))
    out.sort()
    return out


def _name_like(x: Text, s: str, j: int) -> bool:
    """The word before the letter makes a name of it ("Vitamin C", "type A"): a capitalised word, or a
    word that forms that name in an option's text or earlier in the response."""
    m = X.PREV_WORD_RE.search(s, max(0, j - 40), j)
    if m is None:
        return False
    word = m.group(1)
    if word[:1].isupper() or (word.isascii() and word.lower() not in _PREPOSITIONS):
        return True
    phrase = word.lower().rstrip(".") + " " + s[j].lower()
    if any(re.search(r"\b" + re.escape(phrase) + r"\b", ot) for _, ot in x.opts.norms):
        return True
    return re.search(r"\b" + re.escape(word) + r"\s+" + s[j] + r"\b", x.t[: max(0, len(x.t) - len(s))]) is not None


def _remark(x: Text, s0: int, letters: list[tuple[int, str]]) -> bool:
    """The line from s0 on only remarks on option letters, each dismissed ("C and E both fail.")."""
    return all(c in x.opts.letters for _, c in letters) and only_remarks_after(x, s0, "")


def _without_option_text(x: Text, low: str, j: int, letter: str) -> tuple[str, str]:
    """The line before and after the letter, without that option's own text next to it ("C (Adrenal
    gland)", "the Maillard reaction — B"): the words left are the ones that commit, or not."""
    own = dict(x.opts.norms).get(letter, "")
    before, after = low[:j], low[j + 1 :]
    if own:
        m = re.match(r"[\s)\]*_]*(?:\(([^()\n]{1,100})\)|[:\-–—]\s*([^\n]{1,100}?))(?=[\s.!*_]*$)", after)
        if m is not None and norm(m.group(1) or m.group(2) or "") == own:
            after = after[m.end() :]
        b = before.rstrip(" \t*_([-–—:,")
        if b.endswith(own) and len(b) < len(before):
            before = before[: len(b) - len(own)]
    return before, after


def _one_sentence(s: str) -> bool:
    """No sentence break inside s (a colon only at its end: "Left standing: B.")."""
    core = s.strip(_TRAIL + _OPEN)
    if re.search(r"[.;!](?:\s|$)", core):
        return False
    k = core.find(":")
    return k < 0 or not core[k + 1 :].strip(" \t*_")


def _repeats_frame(x: Text, s0: int, pattern: str, letter: str) -> bool:
    """An earlier line says the same words about another letter: the closing line is one more item."""
    for m in re.finditer(pattern, x.t[:s0], re.IGNORECASE):
        if m.group(1).upper() != letter:
            return True
    return False
