"""Stage 3a, scope: which question each part of the response answers.

- Follow-up boundaries: a line that starts another question or turn ("Question: ...", "Q2.", "Human:",
  "The following are multiple choice questions ..."), or a listing of options that are not this row's
  (a base model inventing the next exam question). An answer after such a line answers that question;
  the answer to the question asked is the one before the first boundary that has one.
- Sub-items: lines labelled "(a)", "(b)", "Part (c)", "(ii)" split the response into parts; answers in
  different parts that disagree are several answers, not drafts.
"""

from __future__ import annotations

import re

from ...labels import LETTERS
from . import patterns, phrases
from .options import Options, contains_words
from .text import blank_markup, line_end, norm

_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii")
_VERDICT_WORDS = ("correct", "incorrect", "wrong", "right", "true", "false", "option", "statement", "choice")
_LISTING = LETTERS[:16]  # the labels of a listing of options, in order (at most 16 counted)


def may_have_structure(t: str) -> bool:
    """A cheap necessary test for follow-up markers after the first line (a marker on the first line
    starts no boundary) and for sub-item labels (in the original text)."""
    return (
        patterns.STRUCTURE_HINT_RE.search(t) is not None
        or patterns.SUB_ITEM_START_RE.match(t) is not None
        or ("b)" in t and _may_have_inline_b(t))
        or ("econd " in t and _may_name_parts(t) and patterns.ORDINAL_PART_RE.search(t) is not None)
    )


def _may_have_inline_b(t: str) -> bool:
    """A cheap necessary test for INLINE_SUB_ITEM_RE: a "b)" or "(b)" after spaces after the end of a
    sentence, followed by a space (str.find per occurrence: "b)" is common in formulas and markup, and
    the regex without a literal to start from costs more than the rest of the stage)."""
    i = t.find("b)")
    while i >= 0:
        j = i - 1 if i > 0 and t[i - 1] == "(" else i
        k = j - 1
        while k >= 0 and t[k] in " \t":
            k -= 1
        if k < j - 1 and k >= 0 and t[k] in ".!?:" and t[i + 2 : i + 3] in (" ", "\t"):
            return True
        i = t.find("b)", i + 2)
    return False


def _may_name_parts(t: str) -> bool:
    """A cheap necessary test for parts named by ordinals: "second <part noun>" occurs ("second" alone is
    common in reasoning text and must not send every such text to the regex)."""
    i = t.find("econd ")
    while i >= 0:
        if t.startswith(phrases.PART_NOUNS, i + 6):
            return True
        i = t.find("econd ", i + 6)
    return False


def listing_right_above(t: str, pos: int) -> bool:
    """A cheap necessary test for an invented option listing answered at `pos`: the nearest non-blank
    line above the line of `pos` may be an option label."""
    j = t.rfind("\n", 0, pos)
    while j > 0 and t[j - 1] in " \t\r\n":
        j -= 1
    return j > 0 and may_be_label(t, t.rfind("\n", 0, j) + 1, j)


def follow_up_boundaries(
    t: str,
    low: str,
    opts: Options,
    before: int,
    *,
    markers: bool = True,
    headers: re.Pattern[str] | None = None,
) -> list[int]:
    """Start offsets (> 0) of the lines before `before` that begin another question or turn: a marker
    line (not a numbered answer line of the response's own, "Q2: A"; `headers`: the prompt's own question
    header, echo.question_headers), or the question line of an invented option listing right before `before`
    (the answer line)."""
    out = [m.start() + 1 for m in patterns.FOLLOW_UP_NL_RE.finditer(low, 0, before)] if markers else []
    if headers is not None:
        out += [m.start() + 1 for m in headers.finditer(low, 0, before)]
    if out:
        own = set(numbered_items(t))
        out = [b for b in out if b not in own]
    q = foreign_listing_before(t, before, opts)
    if q is not None:
        out.append(q)
    return sorted(set(out))


def foreign_listing_before(t: str, pos: int, opts: Options) -> int | None:
    """The start of the question line of "question / A. .. / B. .. / C. .." when that listing ends right
    above the line of `pos` (blank lines may sit between) and its items are not this
    row's options: an invented next question, which the answer at `pos` answers."""
    if not listing_right_above(t, pos):
        return None
    k = t.rfind("\n", 0, pos) + 1  # start of the line below the one examined
    items: list[tuple[int, str]] = []
    for _ in range(16):
        if k <= 0:
            break
        above = t.rfind("\n", 0, k - 1) + 1
        m = patterns.LABEL_LINE_BODY_RE.match(t, above, k - 1) if may_be_label(t, above, k - 1) else None
        if m is not None and m.group("L").isupper():
            if items and ord(m.group("L")) != ord(items[-1][1]) - 1:
                return None  # (walking upwards, the letters of a listing count down to A)
            items.append((above, m.group("L")))
            if m.group("L") == "A":
                break
        elif items or t[above : k - 1].strip():
            break  # (only blank lines may separate the listing from the answer line)
        k = above
    items.reverse()
    letters = "".join(c for _, c in items)
    if len(items) < 3 or not _LISTING.startswith(letters) or not _items_are_foreign(t, items, opts):
        return None
    q_end = items[0][0] - 1
    q_start = t.rfind("\n", 0, max(0, q_end)) + 1
    return q_start if 0 < q_start < q_end and t[q_start:q_end].strip() else None


_LABEL_MARKS = frozenset("([*_>-+•0123456789")
_AFTER_LABEL = frozenset(".):：-–— *]")


def may_be_label(t: str, a: int, b: int) -> bool:
    """A cheap necessary test for LABEL_LINE_BODY_RE at a line: a mark or "X" followed by a delimiter."""
    line = t[a : min(b, a + 12)].lstrip(" \t")
    if not line:
        return False
    c = line[0]
    return (
        c in _LABEL_MARKS
        or line[:6].lower() in ("option", "choice")
        or (c.isupper() and line[1:2] in _AFTER_LABEL)
        or len(line) == 1
    )


def _items_are_foreign(t: str, run: list[tuple[int, str]], opts: Options) -> bool:
    """Short items without verdicts, most of which are not this row's option texts."""
    own = 0
    for pos, _ in run:
        e = t.find("\n", pos)
        item = norm(t[pos : len(t) if e < 0 else e])
        if len(item) > 120 or any(w in item for w in _VERDICT_WORDS):
            return False
        body = item[3:].strip(" .)") if len(item) > 3 else item
        if body and any(contains_words(body, ot) or contains_words(ot, body) for _, ot in opts.norms):
            own += 1
    return 2 * own < len(run)


def inline_listing_above(t: str, pos: int, opts: Options) -> bool:
    """Three or more items listed inline, labelled A, B, C, ... in order ("…?A:无过错责任;B:过错推定责任;C:公平责任;D:…"),
    most of which are not this row's option texts, stand right before the answer at `pos` — on its own line
    before it ("…;D:…。[正确答案]B": an echoed one-shot example, an invented next question written on one
    line) or on the nearest non-blank line above: the answer answers that question, not the one asked."""
    lo = max(0, pos - 2000)  # (bounded, so that many answers on one long line stay linear)
    s0 = t.rfind("\n", lo, pos) + 1
    if s0 == 0 and lo > 0:
        s0 = lo
    if _inline_listing(t[s0:pos], opts, same_line=True):
        return True
    j = s0 - 1
    while j > lo and t[j - 1] in " \t\r\n":
        j -= 1
    k = t.rfind("\n", lo, j)
    if j <= lo or (k < 0 and lo > 0):  # (no line above, or it starts beyond the window)
        return False
    return _inline_listing(t[k + 1 : j], opts, same_line=False)


def _inline_listing(line: str, opts: Options, *, same_line: bool) -> bool:
    """`line` lists three or more items inline, A, B, C, ... in order, mostly not this row's options; on
    the answer's own line, the last such run (the items of an earlier question on that line aside)."""
    if line.count(":") + line.count("：") + line.count(")") < 3:  # (a cheap necessary test)
        return False
    labels = list((patterns.INLINE_LABEL_CJK_RE if same_line else patterns.INLINE_LABEL_RE).finditer(line))
    if same_line:  # (the last run A, B, C, ... on the line)
        first = max((k for k, m in enumerate(labels) if m.group(1) == "A"), default=None)
        labels = labels[first:] if first is not None else []
    if len(labels) < 3 or "".join(m.group(1) for m in labels) != _LISTING[: len(labels)]:
        return False  # (a listing counts A, B, C, ... in order)
    low = line[labels[0].start() :].lower() if same_line else line.lower()
    if patterns.LISTING_VERDICT_RE.search(low) or patterns.CLOSING_DISMISSAL_RE.search(low):
        return False  # ("I can drop A: this is correct. I can drop B: ...": a walk through the options)
    own = 0
    for m, nxt in zip(labels, labels[1:] + [None], strict=True):
        item = norm(line[m.end() : nxt.start() if nxt is not None else len(line)]).strip(" .;,。；")
        if item and any(item == ot or contains_words(item, ot) for _, ot in opts.norms):
            own += 1
    return 2 * own < len(labels)


def numbered_items(t: str) -> list[int]:
    """Start offsets of numbered answer lines ("Q1: D" / "Q2: A"): the label and a short answer (at most
    60 characters, not a question), numbered 1, 2, ... in order, one after the other (blank lines
    between), at least two; else []."""
    out: list[int] = []
    end = 0
    for m in patterns.NUMBERED_ITEM_RE.finditer(t):
        rest = m.group("rest").strip()
        if int(m.group("n")) != len(out) + 1 or not rest or len(rest) > 60 or rest.endswith("?"):
            break
        start = m.start() + (t[m.start()] == "\n")
        if out and t[end:start].strip():
            break
        out.append(start)
        end = m.end()
    return out if len(out) >= 2 else []


def sub_items(t: str, opts: Options) -> list[int]:
    """Start offsets of sub-question parts ((a), (b), ... or (i), (ii), ... in order, at least two; or
    numbered answer lines), or [] when the response has none. Lower-case labels followed by that option's
    text are an option listing."""
    numbered = numbered_items(t)
    if numbered:
        return numbered
    found = []
    first = patterns.SUB_ITEM_START_RE.match(t)
    matches = ([first] if first is not None else []) + list(patterns.SUB_ITEM_NL_RE.finditer(t))
    for m in matches:
        lab = m.group("lab")
        pos = m.start() + (t[m.start()] == "\n")
        e = t.find("\n", m.end())
        body = norm(t[m.end() : len(t) if e < 0 else e])
        ot = dict(opts.norms).get(lab.upper()) if len(lab) == 1 else None
        if ot is not None and body.startswith(ot):
            return []  # an option listing written in lower case
        found.append((pos, lab))
    seq = _in_order(found)
    if len(seq) < 2 and ("b)" in t or _may_name_parts(t)):
        seq = _with_inline_items(t, opts, found)
    return [pos for pos, _ in seq] if len(seq) >= 2 else []


def _with_inline_items(t: str, opts: Options, found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The labels at line starts together with those after a sentence end inside a paragraph ("... is (C).
    (b) ..."), in text order, counted from the first (a); [] when an inline label is followed by that
    option's text (an option listing in lower case)."""
    for m in patterns.INLINE_SUB_ITEM_RE.finditer(t):
        lab = m.group("lab")
        ot = dict(opts.norms).get(lab.upper())
        if ot is not None and norm(t[m.end() : m.end() + len(ot) + 4]).strip().startswith(ot):
            return []
        found.append((m.start("open") if m.group("open") else m.start("lab"), lab))
    if _may_name_parts(t):
        for m in patterns.ORDINAL_PART_RE.finditer(t):
            found.append((m.start(), "abcde"[phrases.PART_ORDINALS.index(m.group("ord").lower())]))
    found.sort()
    first_a = next((k for k, (_, lab) in enumerate(found) if lab == "a"), None)
    return _in_order(found[first_a:]) if first_a is not None else []


def _in_order(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The longest prefix of `found` that counts a, b, c, ... or i, ii, iii, ..."""
    if not found:
        return []
    order = _ROMAN if found[0][1] == "i" and (len(found) < 2 or found[1][1] == "ii") else "abcdefgh"
    out = []
    for k, (pos, lab) in enumerate(found):
        if k >= len(order) or lab != order[k]:
            break
        out.append((pos, lab))
    return out


def part_of(pos: int, parts: list[int]) -> int:
    """Index of the sub-item part holding `pos` (-1 before the first)."""
    k = -1
    for i, start in enumerate(parts):
        if start <= pos:
            k = i
    return k


_INDEX_ORDERS = (
    tuple(str(k) for k in range(1, 21)),
    tuple("abcdefgh"),
    _ROMAN,
    phrases.INDEX_NUMBER_WORDS,
    phrases.INDEX_ORDINAL_WORDS,
)
_SEGMENT_SPLIT_RE = re.compile(r"[|;]")


def labelled_answers(t: str) -> list[str]:
    """The letters of the labelled answers the response closes with ("Sub-question 1: D\\nSub-question 2:
    B", "Q-a: A | Q-b: D", "i. D\\nii. A\\niii. B"): at least two segments (lines, or parts of a line split
    by "|" or ";"), one label word for all, indexes in order from the first (1, a or i). [] otherwise."""
    e = len(t.rstrip(" \t\r\n.*_)]"))
    if e == 0 or not t[e - 1].isupper():
        return []
    found: list[tuple[str, str, str]] = []  # (label word, index, letter), last first
    k = e
    for _ in range(12):  # (blank lines may stand between the lines of the run)
        s0 = t.rfind("\n", 0, k) + 1
        if t[s0:k].strip():
            segs = [
                patterns.LABELLED_ANSWER_RE.fullmatch(g.rstrip()) for g in _SEGMENT_SPLIT_RE.split(t[s0:k])
            ]
            if any(m is None for m in segs):
                break
            for m in reversed(segs):
                pre = (m.group("pre") or "").strip(" \t-").lower()  # type: ignore[union-attr]
                found.append((pre, m.group("n"), m.group("L")))  # type: ignore[union-attr]
        if s0 == 0:
            break
        k = s0 - 1
    found.reverse()
    if len(found) < 2 or len({pre for pre, _, _ in found}) > 1:
        return []
    idx = tuple(n if n.islower() or n.isdigit() else n.lower() for _, n, _ in found)
    if not any(order[: len(idx)] == idx for order in _INDEX_ORDERS):
        return []
    return [c for _, _, c in found]


# An option line's text is its option's own text, with markup and spacing around it: a line longer than this
# (characters per character of the option's normalised text, plus room) is none. The bound keeps a response of
# one long line from being normalised again from every anchor on it (quadratic work).
OPTION_LINE_SLACK = 8
OPTION_LINE_ROOM = 256


def option_line(t: str, a: int, e: int, opts: Options) -> str | None:
    """The letter of the line t[a:e] when it is an option line: a label and that option's own text (or, on the
    response's last line, the beginning of it: the text was cut there), nothing else."""
    m = patterns.LABEL_LINE_BODY_RE.match(t, a, e)
    if m is None or not m.group("L").isupper() or m.group("L") not in opts.letters:
        return None
    letter = m.group("L")
    ot = dict(opts.norms).get(letter)
    if not ot or e - m.end() > OPTION_LINE_SLACK * len(ot) + OPTION_LINE_ROOM:
        return None  # far longer than the option's text: no option line (and no normalising a long line)
    nc = norm(blank_markup(t[m.end() : e])).strip(patterns.STRIP_CHARS + "*_")
    if not ot or not nc:
        return None
    if nc == ot or (not t[e:].strip() and len(nc) >= 2 and ot.startswith(nc)):
        return letter
    return None


def options_listed(t: str, a: int, opts: Options) -> list[str]:
    """The letters of the run of option lines that starts with the line at `a` (at most one blank line between
    two of them), in order; [] when that line is none."""
    out: list[str] = []
    k = a
    n = len(t)
    while k < n and len(out) < 26:
        e = line_end(t, k)
        letter = option_line(t, k, e, opts)
        if letter is None:
            break
        out.append(letter)
        k = e + 1
        if k < n and not t[k : line_end(t, k)].strip():  # (one blank line)
            k = line_end(t, k) + 1
    return out


def several_listed(letters: list[str], opts: Options) -> str | None:
    """Why a run of option lines gives no single answer: the options listed in order from the first (an echo
    of the listing), or several of them; None for one."""
    if len(set(letters)) < 2:
        return None
    order = "".join(opts.letters)
    if len(letters) >= 3 and order.startswith("".join(letters)):
        return "the options listed, not an answer"
    return "several options listed: " + "/".join(dict.fromkeys(letters))
