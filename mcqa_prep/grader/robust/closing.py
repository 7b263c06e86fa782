"""Stage 2b, the closing line: a response whose last line is a short sentence naming one option letter,
with nothing said against it, commits to that letter ("E wins out.", "That narrows it to A.", "I'd
settle on B.", "Je choisis donc D.") — whatever words it commits with. A FORMAT rule (docs/design/robust.md):
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

from ...labels import ONE_READING
from . import patterns, phrases
from .candidates import Text
from .evidence import FORMAT, LETTER, Evidence, Reading, none_reading
from .payload import read_letter_list
from .text import blank_markup, norm
from .tokens import after_name, dangling, is_word_char, letter_use

RULE_CLOSING_LINE = "robust.closing_line"
_MAX_LINE = 120
_TRAIL = " \t\r*_`$\"'”’.!。)]"
_OPEN = " \t*_`$\"'“‘([>#"
# A line that opens with an item label ("a. A", "(ii) C", "2) B") answers an item, not the question.
_ITEM_LABEL_RE = re.compile(r"[\s(\[]*(?:[a-z]|[ivx]+|\d+)[.):\]]\s")
# "C is a mineral.": a letter opening a description of what the option is, not a choice.
_DESCRIPTION_RE = re.compile(r"(?:is|are|was|were)\s+(?:a|an)\b", re.IGNORECASE)
# A label of another script (not a look-alike of a Latin one) standing alone after a colon at the end of
# the line ("الاختيار الصحيح: ج").
_LOCAL_LABEL_RE = re.compile(
    r"[:：][ \t]*[*_(\[]*(["
    + "".join(sorted(c for c in ONE_READING if len(c) == 1))
    + r"])[*_)\]]*[ \t.。]*$"
)
# One restricting adverb may stand before a letter that opens the line ("Only C holds up.").
_ONLY_RE = re.compile(r"(?:only|just|\w+ly)\s*")
# Words before a letter that do not make a name of it ("settle on A"); other ASCII words do ("grade A",
# "an A"); a word in another script is judged by the option texts and the response ("chọn C").
_PREPOSITIONS = frozenset(("on", "upon", "onto", "at", "for", "in", "into"))
_PREV_WORD_RE = re.compile(r"([^\W\d_][^\s]*)[ \t]+$")
# The last sentence of a long closing paragraph, when it opens with a first-person subject.
_LAST_FIRST_PERSON_RE = re.compile(
    r"[.!]\s+((?:I|I['’](?:m|d|ll|ve)|We|We['’](?:d|ll|re)|My|Our)\s[^.!?\n]*[.!]?\s*)$"
)
# Answer nouns of every language: a letter after one is no name ("Somit lautet die Antwort E.").
_ANSWER_WORDS = frozenset(
    (*phrases.ANSWER_NOUNS, *phrases.QUALIFIED_NOUNS, *(a.word for a in phrases.ANCHORS_OTHER_LANGUAGES))
)


def closing_line(x: Text) -> Evidence:
    """The closing line's letter, or a none reading saying why not."""
    t = x.t
    e = len(t.rstrip())
    s0 = t.rfind("\n", 0, e) + 1
    j, why = _line_letter(x, s0, e)
    # a paragraph closing with a first-person choice ("... I'm going with B.")
    if j < 0 and e - s0 > _MAX_LINE:
        m = _LAST_FIRST_PERSON_RE.search(t, max(s0, e - _MAX_LINE), e)
        if m is not None:
            j, why = _line_letter(x, m.start(1), e)
    if j < 0:
        remarked = _remark(x, s0, e)
        e2 = len(t[:s0].rstrip())
        if remarked is not None and e2 > 0:
            s2 = t.rfind("\n", 0, e2) + 1
            j2, _ = _line_letter(x, s2, e2)
            if j2 >= 0 and _letter(t, j2, x) not in remarked:
                j = j2
    if j < 0:
        return Evidence(s0, FORMAT, RULE_CLOSING_LINE, none_reading((s0, e), why))
    letter = _letter(t, j, x)
    if _next_listing_label(t, s0, e, letter):
        return Evidence(s0, FORMAT, RULE_CLOSING_LINE, none_reading((s0, e), "the next label of a listing"))
    return Evidence(j, FORMAT, RULE_CLOSING_LINE, Reading(LETTER, letter, (j, j + 1), "closing line"))


_LABEL_ONLY_RE = re.compile(r"[ \t>*_-]*\(?(?P<L>[A-Z])[).:]?[ \t*_]*")


def _next_listing_label(t: str, s0: int, e: int, letter: str) -> bool:
    """A last line holding only a label right after a line that opens with the label before it ("B. Treaty
    of Versailles" / "C."): a listing of the options cut off (a model echoing them), not an answer."""
    m = _LABEL_ONLY_RE.fullmatch(t, s0, e)
    if m is None or m.group("L") != letter or letter == "A":
        return False
    e2 = len(t[:s0].rstrip())
    s2 = t.rfind("\n", 0, e2) + 1
    prev = t[s2:e2].lstrip(" \t>*_-(")
    if not (prev[:1] == chr(ord(letter) - 1) and prev[1:2] in (".", ")", ":") and len(prev) > 3):
        return False
    return patterns.LISTING_VERDICT_RE.search(prev) is None  # "B. is wrong" / "C.": a walk that ends on C


def _remark(x: Text, s0: int, e: int) -> set[str] | None:
    """The option letters a last line only remarks on, dismissing them ("(For the record: C and E both
    fail.)", "A common slip is choosing C."; none in "Hope this helps!"), or None when it says more:
    a revision, a hedge, a contrast, a letter not dismissed, or over 200 characters."""
    raw = x.t[s0:e]
    low = raw.lower()
    if len(raw) > 200 or patterns.REVISION_RE.search(raw) or patterns.HEDGE_WORDS_RE.search(low):
        return None
    if dangling(raw):  # ("... As anatomy of A.\n\nThe": the response was cut off, not closed by a remark)
        return None
    if patterns.CLOSING_REMARK_CONTRAST_RE.search(low):
        return None
    s = blank_markup(raw)
    letters = set()
    for m in patterns.PROSE_LETTER_RE.finditer(s):  # (inclusive: "C and A both fail" names A too)
        j = m.start()
        if not s[j + 1 : j + 2].isalpha() and letter_use(s, j) in (None, "article, not a letter"):
            letters.add(s[j])
    if letters and (
        not letters <= set(x.opts.letters) or patterns.CLOSING_REMARK_DISMISSAL_RE.search(low) is None
    ):
        return None
    return letters


def _letter(t: str, j: int, x: Text) -> str:
    return x.opts.labels.local.get(t[j]) or t[j].upper()


def _line_letter(x: Text, s0: int, e: int) -> tuple[int, str]:
    """(index of the committed letter in x.t, "") or (-1, why not) for the line t[s0:e]."""
    t = x.t
    raw = t[s0:e]
    if len(raw) > _MAX_LINE or not raw.strip():
        return -1, "not a short closing line"
    s = blank_markup(raw)
    if (
        patterns.BULLET_START_RE.match(raw)
        or _ITEM_LABEL_RE.match(s)
        or "|" in s
        or "?" in s
        or dangling(raw)
    ):
        return -1, "not a closing sentence"
    core = s.strip(" \t*_`$")
    if core.startswith(("(", "[")) and core.rstrip(".!").endswith((")", "]")):
        return -1, "an aside in parentheses"  # ("(Answer to that one: A.)": not the commitment)
    letters = _letter_tokens(x, s, s0)
    if not letters:
        return -1, "no letter"
    if len({c for _, c in letters}) > 1:
        return -1, "several letters"
    j, letter = letters[-1]
    if letter not in x.opts.letters:
        return -1, f"{letter or 'the article A'} is not an option"
    low = s.lower()
    before, after = _without_option_text(x, low, j, letter)
    if patterns.CLOSING_LINE_VETO_RE.search(before) or patterns.CLOSING_LINE_VETO_RE.search(after):
        return -1, "said against the letter, or not a commitment"
    if _names_other_option(x, before + " " + after, letter):
        return -1, "another option's text stands in the line"
    words_before = patterns.CLOSING_LINE_WORD_RE.findall(before)
    words_after = patterns.CLOSING_LINE_WORD_RE.findall(after)
    # it closes the line: "That narrows it to A."
    if not after.strip(_TRAIL) or patterns.CLOSING_RE.match(after):
        if len(words_before) > phrases.CLOSING_LINE_MAX_WORDS_BEFORE or not _one_sentence(before):
            return -1, "not one short sentence"
        frame = " ".join(words_before[-3:])
        pattern = r"\b" + re.escape(frame).replace(r"\ ", r"\W+") + r"\W{0,4}([A-Z])\b" if frame else None
    elif not before.strip(_OPEN) or _ONLY_RE.fullmatch(before.strip(_OPEN)):  # it opens it: "E wins out."
        rest = after.lstrip(" \t*_`$")
        if rest[:1] in ":;,.-–—()]" or len(words_after) > phrases.CLOSING_LINE_MAX_WORDS_AFTER:
            return -1, "a label followed by a discussion"
        if _DESCRIPTION_RE.match(rest):
            return -1, "a description of the option"
        if not _one_sentence(rest):
            return -1, "not one short sentence"
        frame = " ".join(words_after[:3])
        pattern = r"\b([A-Z])[)\]*_\s]{1,4}" + re.escape(frame).replace(r"\ ", r"\W+") + r"\b"
    else:
        return -1, "a letter inside a sentence"
    if pattern is not None and _repeats_frame(x, s0, pattern, letter):
        return -1, "the next item of a walk through the options"
    return s0 + j, ""


def _letter_tokens(x: Text, s: str, s0: int) -> list[tuple[int, str]]:
    """Standalone capital letters of the line (and a lower-case label named by its noun: "option (c)")."""
    out = []
    for m in patterns.PROSE_LETTER_RE.finditer(s):
        j = m.start()
        if is_word_char(s[j + 1 : j + 2] or " "):  # ("Vậy": a word in another script; not "Aです")
            continue
        use = letter_use(s, j)
        if use == "article, not a letter" and not _a_before_verb(x, s, j, s0):
            out.append((j, ""))  # ("From A to B.", "A lot depends on C.": maybe a letter, so no commitment)
            continue
        if use is not None and use != "article, not a letter":
            continue
        if after_name(s, j) and _name_like(x, s, j, s0):
            continue
        found, _ = read_letter_list(s, j, s[j], False)  # ("C and A both work": A is no article here)
        out.extend((j, c) for c in found)
    for m in patterns.CLOSING_LINE_LOWER_RE.finditer(s.lower()):
        j = m.start(1)
        if s[j].islower():
            out.append((j, s[j].upper()))
    lm = _LOCAL_LABEL_RE.search(s) if not s.isascii() else None
    if lm is not None:  # ("الاختيار الصحيح: ج": an Arabic or Bengali label after a colon, closing the line)
        out.append((lm.start(1), x.opts.labels.local.get(lm.group(1), "")))
    out.sort()
    return out


def _a_before_verb(x: Text, s: str, j: int, s0: int) -> bool:
    """ "A wins out.": an opening "A" before a short predicate whose first word is a verb in -s (not the
    start of option A's text) is the letter, when the response names other option letters before."""
    if s[j] != "A" or s[:j].strip(_OPEN) or letter_use(s, j) != "article, not a letter":
        return False
    words = patterns.CLOSING_LINE_WORD_RE.findall(s[j + 1 :])
    if (
        not words
        or len(words) > phrases.CLOSING_LINE_MAX_WORDS_AFTER
        or not re.fullmatch(r"[a-z]+[^s]s", words[0])
    ):
        return False
    if dict(x.opts.norms).get("A", "").startswith(words[0]):
        return False
    return any(
        c in x.opts.letters and c != "A" and letter_use(x.t, m.start()) is None
        for m in patterns.PROSE_LETTER_RE.finditer(x.t, 0, s0)
        for c in x.t[m.start()]
    )


def _name_like(x: Text, s: str, j: int, s0: int) -> bool:
    """The word before the letter makes a name of it ("Vitamin C", "type A"): a capitalised word, or a
    word that forms that name in an option's text or earlier in the response."""
    m = _PREV_WORD_RE.search(s, max(0, j - 40), j)
    if m is None:
        return False
    word = m.group(1).rstrip(".,:;")
    if word.lower() in _ANSWER_WORDS:  # ("lautet die Antwort E")
        return False
    if word[:1].isupper() or (word.isascii() and word.lower() not in _PREPOSITIONS):
        return True
    phrase = word.lower().rstrip(".") + " " + s[j].lower()
    if any(re.search(r"\b" + re.escape(phrase) + r"\b", ot) for _, ot in x.opts.norms):
        return True
    return re.search(r"\b" + re.escape(word) + r"\s+" + s[j] + r"\b", x.t[:s0]) is not None


def _without_option_text(x: Text, low: str, j: int, letter: str) -> tuple[str, str]:
    """The line before and after the letter, without that option's own text next to it ("C (Adrenal
    gland)", "the Maillard reaction — B"): the words left are the ones that commit, or not."""
    own = dict(x.opts.norms).get(letter, "")
    before, after = low[:j], low[j + 1 :]
    if own:
        m = re.match(r"[\s)\]*_]*(?:\(([^()\n]{1,100})\)|[:\-–—]\s*([^\n]{1,100}?))(?=[\s.!*_]*$)", after)
        if (
            m is not None
            and x.opts.equal((m.group(1) or m.group(2) or "").strip(patterns.STRIP_CHARS)) == letter
        ):
            after = after[m.end() :]
        b = before.rstrip(" \t*_([-–—:,")
        if b.endswith(own) and len(b) < len(before):
            before = before[: len(b) - len(own)]
    return before, after


def _names_other_option(x: Text, words: str, letter: str) -> bool:
    """Another option's text (of four characters or more) stands in the line: "Vitamin C, so B." is no
    commitment to B alone."""
    texts = dict(x.opts.norms)
    return any(lt != letter and len(texts.get(lt, "")) >= 4 for lt in x.opts.inside(norm(words)))


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
