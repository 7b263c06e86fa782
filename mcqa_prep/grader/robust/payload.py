"""Read one payload (the text after an anchor, a box's content, a JSON value, a short response): an
option text, a letter, a list of letters, a refusal, or letters in prose. Order: docs/design/robust.md,
"Reading a payload"."""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import patterns, phrases
from .evidence import LETTER, OUT_OF_RANGE, REFUSAL, SEVERAL, Reading, letter_reading, none_reading
from .labels import DEFAULT_LOCAL
from .options import Options
from .patterns import (
    ALL_OF_ABOVE_RE,
    CLOSING_LINE_VETO_RE,
    CLOSING_RE,
    CONCLUSION_BEFORE_RE,
    CONDITIONAL_AFTER_RE,
    CONDITIONAL_CLAUSE_RE,
    DISMISSED_AFTER_RE,
    FILLER_RE,
    HEDGE_AFTER_RE,
    HEDGE_BEFORE_RE,
    LABEL_DELIMITER_RE,
    LIST_DISMISSED_AFTER_RE,
    LIST_SEP_RE,
    NEGATED_AFTER_RE,
    NEGATED_BEFORE_RE,
    NEGATED_PAYLOAD_RE,
    NEXT_UPPER_TOKEN_RE,
    NUMBER_LABEL_RE,
    NUMBER_WORD_RE,
    PROSE_LETTER_RE,
    PUNCT_BEFORE_RE,
    REFUSAL_RE,
    SIMPLE_PAYLOAD_RE,
    STRIP_CHARS,
)
from .text import blank_markup, line_end, norm
from .tokens import after_name, letter_use, token_letter


def read_payload(
    t: str,
    a: int,
    b: int,
    opts: Options,
    *,
    anchored: bool,
    prose: bool = True,
    equality: bool = True,
    prefix: bool = True,
    restatement: bool | None = None,
) -> Reading:
    """What t[a:b] says. `anchored`: an explicit anchor precedes it (lower-case letters count, and an
    option text inside a sentence counts); `prose`: letters inside a sentence may be read;
    `equality`/`prefix`/`restatement`: which kinds of option-text answers count (restatement defaults
    to `anchored`)."""
    s = blank_markup(t[a:b])
    m0 = SIMPLE_PAYLOAD_RE.match(s)
    if m0 is not None:  # the common "B", "(c).", "**D**": one letter and punctuation
        j = m0.start(1)
        c = s[j]
        if (
            anchored
            or c.isupper()
            or opts.labels.lower
            or (s[j - 1 : j] in "([" and s[j + 1 : j + 2] in ")]")
        ):
            # (a lower-case letter in brackets is a label too: "(b)")
            return letter_reading(c.upper(), opts.letters, a + j, "leading letter")
    n = len(s)
    i = 0
    while i < n and s[i].isspace():
        i += 1
    if i >= n:
        return none_reading((a, b), "empty payload")
    core = s[i:].strip(STRIP_CHARS)
    # 1. the whole payload is an option's text or number (before letters: "E. coli", "None of the above")
    if equality and core and len(core) <= 400 and (len(core) > 1 or core.isdigit() or not core.isascii()):
        letter = opts.equal(core)
        if letter is not None:
            if core.isdigit() and opts.labels.numbers:  # ("2": option 2, or the option whose value is 2?)
                r = number_label(s, i, a, opts, words=False)
                if r is not None and r.kind == SEVERAL:
                    return r
            return Reading(LETTER, letter, (a + i, b), "option text")
    if NEGATED_PAYLOAD_RE.match(s, i):  # ("not A" says nothing; "not B, but C" says C)
        r = read_prose_letters(s, i, a, b, opts) if prose else None
        return r if r is not None and r.kind == LETTER else none_reading((a + i, b), "negated")
    j = FILLER_RE.match(s, i).end()  # type: ignore[union-attr]  # (FILLER_RE matches the empty string)
    rest = s[j:].strip(STRIP_CHARS) if j > i else core
    if equality and rest is not core and rest and len(rest) <= 400:
        letter = opts.equal(rest)
        if letter is not None:
            return Reading(LETTER, letter, (a + j, b), "option text")
    # 2. a leading letter, or a list of letters (a number or a letter's name, where the question uses them)
    r, lead_reason = _lead(s, j, a, b, opts, anchored) if j < n else (None, None)
    if r is not None:
        return r
    # 3.-5. an option text at the start, "all of the above", a refusal, a restatement
    r = _text_answer(
        core,
        rest,
        (a + i, b),
        opts,
        prefix and (anchored or not _names_other_letters(s, i, opts)),
        anchored if restatement is None else restatement,
    )
    if r is not None:
        return r
    if not prose:
        return none_reading((a + i, b), lead_reason or "no letter at the start")
    # 6. standalone capital letters in a short prose payload ("Because Paris is the capital, B.")
    r = read_prose_letters(s, i, a, b, opts)
    if r is not None:
        return r
    # 7. exactly one option text inside an anchored payload ("Answer: The capital is Paris.")
    r = _text_inside(core, (a + i, b), opts) if anchored and core and opts.norms else None
    if r is not None:
        return r
    return none_reading((a + i, b), lead_reason or "no letter")


def _text_inside(core: str, span: tuple[int, int], opts: Options) -> Reading | None:
    """Exactly one option text inside the payload, and no hedge or negation around it ("Answer: The
    capital is Paris.", but not "This ... is less likely, as pollution ...")."""
    nc = norm(core)
    inside = opts.inside(nc)
    if len(inside) != 1:
        return None
    letter = inside.pop()
    if CLOSING_LINE_VETO_RE.search(nc.replace(dict(opts.norms)[letter], " ")) is not None:
        return None
    return Reading(LETTER, letter, span, "option text in the payload")


def _lead(s: str, j: int, a: int, b: int, opts: Options, anchored: bool) -> tuple[Reading | None, str | None]:
    """Step 2 of read_payload: the reading of the token at s[j] when it is a label, or why it is not."""
    labels = opts.labels
    if anchored and (labels.numbers or not s.isascii()):
        r = _other_label(s, j, a, b, opts)
        if r is not None:
            return r, None
    letter = token_letter(s, j, anchored or labels.lower, labels.local)
    if letter is None:
        return None, None
    reason = label_use(s, j, letter, opts)
    if reason is not None:
        return None, reason
    if s[j] == "a":
        m_art = NEXT_UPPER_TOKEN_RE.match(s, j + 1)
        if m_art:  # "é a B", "is a B": an article before the letter
            j = m_art.end() - 1
            letter = s[j]
    r = _leading(s, j, a, letter, opts, anchored)
    if (
        r.kind == LETTER
        and patterns.COORDINATION_OPENER_IN_RE.search(s, 0, j)
        and _another_letter(s, j, letter, opts)
    ):
        return Reading(SEVERAL, None, (a + j, b), "either one letter or another"), None
    return r, None


def _another_letter(s: str, j: int, letter: str, opts: Options) -> bool:
    """Another option letter stands in s after j ("either (A) sky or (D) countryside")."""
    for m in PROSE_LETTER_RE.finditer(s, j + 1):
        c = s[m.start()]
        if c != letter and c in opts.letters and letter_use(s, m.start()) is None:
            return True
    return False


def _other_label(s: str, j: int, a: int, b: int, opts: Options) -> Reading | None:
    """After an anchor: the name of a Latin letter in another script (`"এ"`, the whole payload), or a number
    naming an option when the question numbers them (`1`, `(2)`, `3번`; a list of numbers is several)."""
    core = s[j:].strip(STRIP_CHARS + "*_`$ ")
    letter = phrases.LETTER_NAMES.get(core)
    if letter is not None:
        return letter_reading(letter, opts.letters, a + j, "the name of a letter")
    if not opts.labels.numbers:
        return None
    return number_label(s, j, a, opts, words=True)


def number_label(s: str, j: int, a: int, opts: Options, *, words: bool) -> Reading | None:
    """The option a number at s[j] names, when the question numbers its options: alone or as a label
    (NUMBER_LABEL_RE); with `words`, also before a word when no option is a quantity ("la opción 2 y ...").
    A list of numbers is several answers; a number that is one option's label and another option's value
    (options 1. "0.5" 2. "1" 3. "2": "2") is ambiguous."""
    m = NUMBER_LABEL_RE.match(s, j)
    if m is None and words and not opts.table.numbers:
        m = NUMBER_WORD_RE.match(s, j)
    if m is None:
        return None
    order = opts.labels.order
    found = [int(d) for d in m.group("n").replace(",", " ").replace("/", " ").split() if d.isdigit()]
    if len(set(found)) > 1:
        return Reading(SEVERAL, None, (a + j, a + m.end()), "several numbers: " + "/".join(map(str, found)))
    k = found[0]
    span = (a + m.start("n"), a + m.end("n"))
    if not 1 <= k <= len(order):
        return Reading(OUT_OF_RANGE, None, span, f"{k} is not an option number")
    valued = {lt for lt, (v, _) in opts.table.numbers if v == k}
    if valued and valued != {order[k - 1]}:
        return Reading(SEVERAL, None, span, f"{k} is one option's number and another option's value")
    opened = s[m.start()] in "([" or s[m.start() - 1 : m.start()] in ("(", "[")
    if m.groupdict().get("close") in (")", "]") and not opened:
        # "1) What is ...": the item of a numbered list, unless what follows is (the start of) its option's text
        e = s.find("\n", m.end())
        rest = norm(s[m.end() : len(s) if e < 0 else e]).strip(STRIP_CHARS + "*_")
        own = dict(opts.norms).get(order[k - 1], "")
        if rest and not (own and (rest.startswith(own) or own.startswith(rest))):
            return None
    return Reading(LETTER, order[k - 1], span, "option number")


def _names_other_letters(s: str, i: int, opts: Options) -> bool:
    """Some option letter stands in s[i:] as a token ("Mitochondria (A) make ATP and lysosomes (D)
    ..."): without an anchor, a sentence that opens with an option's text is then a discussion."""
    for m in PROSE_LETTER_RE.finditer(s, i):
        j = m.start()
        if s[j] in opts.letters and letter_use(s, j) is None and not after_name(s, j):
            return True
    return False


def _text_answer(
    core: str, rest: str, span: tuple[int, int], opts: Options, prefix: bool, restatement: bool
) -> Reading | None:
    """3. the payload starts with an option's text ("Paris, because ..."); 4. "all of the above" and
    refusals that are not themselves options; 5. a near-verbatim restatement of one option."""
    if rest and prefix:
        letter = opts.starts_with(norm(rest))
        if letter is not None:
            return Reading(LETTER, letter, span, "option text")
    m_all = ALL_OF_ABOVE_RE.search(core)
    if m_all is not None and not opts.is_option_phrase(m_all.group()):
        return Reading(SEVERAL, None, span, "all of the options")
    m_ref = REFUSAL_RE.search(core)
    if m_ref is not None and not opts.is_option_phrase(m_ref.group()):
        return Reading(REFUSAL, None, span, "refusal")
    if restatement and rest:
        letter = opts.restated(norm(rest))
        if letter is not None:
            return Reading(LETTER, letter, span, "restates the option text")
    return None


def _leading(s: str, j: int, a: int, letter: str, opts: Options, anchored: bool) -> Reading:
    """The payload's first token is a letter: dismissed, conditional, a list, a label whose text is
    another option's, out of range, or the answer."""
    if DISMISSED_AFTER_RE.match(s, j + 1) or _negated_after(s, j, letter, opts):
        return none_reading((a + j, a + j + 1), "letter dismissed, not chosen")
    if CONDITIONAL_AFTER_RE.match(s, j + 1):
        return none_reading((a + j, a + j + 1), "conditional, not a commitment")
    if _label_and_own_text(s, j, letter, opts):  # ("B) C,Na,Mg": the option's text, not a list B/C)
        return letter_reading(letter, opts.letters, a + j, "leading letter")
    found, end = read_letter_list(s, j, letter, anchored and s[j].islower(), opts.labels.local)
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1 and LIST_DISMISSED_AFTER_RE.match(s, end):
        return none_reading((a + j, a + end), "letters dismissed, not chosen")
    if len(distinct) > 1:
        return Reading(SEVERAL, None, (a + j, a + end), "several letters: " + "/".join(distinct))
    if j > 0 and s[j - 1] in "([" and _next_label_follows(s, j):
        return Reading(SEVERAL, None, (a + j, a + len(s)), "answers to several sub-items")
    if letter in opts.letters and opts.norms:
        m = LABEL_DELIMITER_RE.match(s, j + 1)
        if m is not None and m.end() < len(s):
            other = opts.equal(s[m.end() :].strip(STRIP_CHARS))
            if other is not None and other != letter:
                return Reading(
                    SEVERAL, None, (a + j, a + len(s)), f"label {letter} with the text of option {other}"
                )
    return letter_reading(letter, opts.letters, a + j, "leading letter")


def _negated_after(s: str, j: int, letter: str, opts: Options) -> bool:
    """A negating copula that comes last follows the letter at s[j], with nothing between but markup and
    maybe the option's own text ("A) I, III, II değildir", "ب نیست"): the letter is denied."""
    own = dict(opts.norms).get(letter, "")
    m = NEGATED_AFTER_RE.search(s, j + 1, min(len(s), j + 1 + len(own) + 16))
    if m is None:
        return False
    between = norm(s[j + 1 : m.start()]).strip(STRIP_CHARS + "*_-–—:： ")
    return not between or between == own


def label_use(s: str, j: int, letter: str, opts: Options) -> str | None:
    """Why the letter at s[j] is not an option label (tokens.letter_use), except that a label whose line goes
    on with its own option's text is no abbreviation: "B. rabbits" when option B is "rabbits", "A. f/8 — ..."
    when A is "f/8"; "E. coli" names no option and stays an abbreviation."""
    reason = letter_use(s, j)
    if reason == "abbreviation" and _label_and_own_text(s[: line_end(s, j)], j, letter, opts):
        return None
    return reason


def _label_and_own_text(s: str, j: int, letter: str, opts: Options) -> bool:
    """The letter is a label ("B)", "C:") followed by its own option's text."""
    m = LABEL_DELIMITER_RE.match(s, j + 1)
    if m is None or m.end() == j + 1 or letter not in opts.letters or not opts.norms:
        return False
    rest = norm(s[m.end() :]).strip(STRIP_CHARS)
    return bool(rest) and (opts.equal(rest) == letter or opts.starts_with(rest) == letter)


def _next_label_follows(s: str, j: int) -> bool:
    """ "(a) 2 m/s (b) 4 m/s": the parenthesised label is followed by the next one."""
    c = s[j]
    nxt = chr(ord(c) + 1)
    return ("(" + nxt + ")") in s[j + 1 :] or ("[" + nxt + "]") in s[j + 1 :]


# The rest of a sentence that is a question ("... or is it D?").
_QUESTION_AFTER_RE = re.compile(r"[^.!?\n]*\?")

# The first characters of every list separator (LIST_SEP_RE) and of a next letter: a cheap necessary test.
_LIST_START = frozenset(
    {s[0] for s in phrases.LIST_SEPARATOR_SYMBOLS} | {w[0] for w in phrases.LIST_SEPARATOR_WORDS}
    | set(", ([")  # (the comma rule of LIST_SEP_RE, a space before a letter, an opening bracket)
    | set("abcdefghijklmnopqrstuvwxyz")  # (a next letter, or a separator word)
)  # fmt: skip


def read_letter_list(
    s: str, j: int, first: str, allow_lower: bool, local: Mapping[str, str] = DEFAULT_LOCAL
) -> tuple[list[str], int]:
    """The letters of a list starting at s[j] ("A/B", "A or B", "A, B, and C", "A B C D"), and the end
    of the last one."""
    found = [first]
    end = k = j + 1
    n = len(s)
    ahead = s[k : k + 4].lstrip(" \t)]}'\"”’")  # (a cheap test first: what follows can separate a list)
    if not ahead or ahead[0].lower() not in _LIST_START:
        return found, end
    while True:
        m = LIST_SEP_RE.match(s, k)
        if not m or m.end() >= n or m.end() == k:
            break
        k2 = m.end()
        nxt = token_letter(s, k2, allow_lower, local)
        use = letter_use(s, k2) if nxt is not None else "no letter"
        # right after a letter and a joiner word or mark, "A" is a letter, not the article ("E and A both
        # work here."); after mere spacing it stays the article ("D) A fall in interest rates")
        joined = m.group().strip(" \t)]}'\"”’") != ""
        if use is not None and not (use == "article, not a letter" and nxt == "A" and joined):
            break
        found.append(nxt)  # type: ignore[arg-type]  # (a None letter is "no letter": the loop broke)
        end = k = k2 + 1
    return found, end


def _coordinated(s: str, j: int, opts: Options) -> bool:
    """The letter at s[j] starts a list of option letters ("accept C or A"): a letter, not a name's end."""
    found, _ = read_letter_list(s, j, s[j], False)
    return len(set(found)) > 1 and all(c in opts.letters for c in found)


def read_prose_letters(s: str, i: int, a: int, b: int, opts: Options) -> Reading | None:
    """Letters inside a sentence. Each is dismissed ("not A", "A is wrong"), hedged ("might be B",
    "C is possible"), committed (it closes the payload, or follows a conclusion word) or only mentioned.
    One letter that closes or concludes commits; hedges between several letters give several answers;
    anything else is a mention (None when there is no letter at all)."""
    hits: list[tuple[int, str, bool, bool, bool]] = []  # (index, letter, hedged, tentative, concluded)
    for m in PROSE_LETTER_RE.finditer(s, i):
        j = m.start()
        letter = s[j]
        if letter not in opts.letters or letter_use(s, j) is not None:
            continue
        if after_name(s, j) and not _coordinated(s, j, opts):
            continue
        lo = max(i, j - 25)
        tentative = HEDGE_BEFORE_RE.search(s, lo, j) is not None
        hedged = tentative or HEDGE_AFTER_RE.match(s, j + 1) is not None
        if not hedged and "?" in s and _QUESTION_AFTER_RE.match(s, j + 1):  # ("or is it D?": asked, not said)
            hedged = True
        if not hedged and (
            NEGATED_BEFORE_RE.search(s, max(i, j - 20), j) or DISMISSED_AFTER_RE.match(s, j + 1)
        ):
            continue
        concluded = not hedged and (
            CONCLUSION_BEFORE_RE.search(s, lo, j) is not None
            or (PUNCT_BEFORE_RE.search(s, lo, j) is not None and CLOSING_RE.match(s, j + 1) is not None)
        )
        if CONDITIONAL_CLAUSE_RE.search(s, i, j):  # "if inelastic, C": under a condition, not a commitment
            hedged, tentative, concluded = True, False, False
        hits.append((j, letter, hedged, tentative, concluded))
    if not hits:
        return None
    distinct = {h[1] for h in hits}
    hedged_letters = {h[1] for h in hits if h[2]}
    j, letter, hedged, tentative, concluded = hits[-1]
    span = (a + j, a + j + 1)
    if len(hits) > 1 and hits[-2][1] != letter and LIST_SEP_RE.fullmatch(s, hits[-2][0] + 1, j):
        return Reading(
            SEVERAL, None, (a + hits[-2][0], a + j + 1), f"several letters: {hits[-2][1]}/{letter}"
        )
    if len(hedged_letters) > 1:
        return Reading(SEVERAL, None, (a + i, b), "hedged between " + "/".join(sorted(hedged_letters)))
    closes = not hedged and CLOSING_RE.match(s, j + 1) is not None
    if len(distinct) == 1 and (closes or concluded or tentative):
        return Reading(LETTER, letter, span, "letter closing the payload")
    if concluded:
        return Reading(LETTER, letter, span, "last letter after a conclusion")
    return none_reading((a + i, b), "letters mentioned in prose, none committed")


# A field of an answer written on its own line: "Answer text: Berlin", "Option text - Berlin".
_FIELD_RE = re.compile(r"[ \t*_]*([^\W\d_][^:：\n]{0,30}?)[ \t*_]*[:：\-–—][ \t]*(.+)")


def text_below(t: str, pos: int, letter: str, opts: Options) -> str | None:
    """The other option named by the line right below the letter that ends at `pos` (nothing else after it on
    its line): a field holding an option's whole text ("C" / "Answer text: Berlin", Berlin being D) or that
    text alone — a letter and another option's text, two answers. None when the line names no option, or
    names the letter's own."""
    e = line_end(t, pos)
    if not opts.norms or t[pos:e].strip(STRIP_CHARS + "*_`$"):
        return None
    k = e + 1
    if t[k : line_end(t, k)].strip() == "" and k < len(t):  # (one blank line between)
        k = line_end(t, k) + 1
    line = t[k : line_end(t, k)].strip()
    if not line or len(line) > 400:
        return None
    m = _FIELD_RE.fullmatch(line)
    body = m.group(2) if m is not None and len(m.group(1).strip()) > 1 else line
    other = opts.equal(blank_markup(body).strip(STRIP_CHARS + "*_`"))
    return other if other is not None and other != letter else None
