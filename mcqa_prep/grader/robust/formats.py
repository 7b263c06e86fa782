"""Stage 2b, formats: answers given by the shape of the response rather than by words — a bare short
response, a last line that is a label, one bold letter, a refusal, a leading label, a closing option
text. Each is `Evidence` of strength FORMAT; they are produced in a fixed order (docs/design/robust.md) and
the first decisive one counts when nothing stronger was said."""

from __future__ import annotations

from collections.abc import Iterator

from . import patterns, phrases
from .candidates import Text
from .closing import closing_line
from .evidence import FORMAT, LETTER, NONE, REFUSAL, SEVERAL, Evidence, Reading, letter_reading, none_reading
from .options import Options, parse_number, same_value
from .payload import label_use, number_label, read_letter_list, read_payload
from .scope import labelled_answers, option_line, several_listed
from .text import at_line_start, line_end, norm
from .tokens import dangling, letter_use

RULE_BARE = "robust.bare"
RULE_LAST_LINE = "robust.last_line"
RULE_BOLD = "robust.bold"
RULE_REFUSAL = "robust.refusal"
RULE_LEADING = "robust.leading_letter"
RULE_OPTION_TEXT = "robust.option_text"
RULE_SUB_ITEMS = "robust.sub_items"


def format_candidates(x: Text, parts: list[int]) -> Iterator[Evidence]:
    """The format rules in their order of trust; the caller stops at the first decisive one. A response
    split into sub-items (a), (b), ... gets only the refusal rule: its labels and short lines answer the
    sub-items, not the question."""
    t = x.t
    if parts:
        m = patterns.REFUSAL_RE.search(t, max(0, len(t) - 400))
        if m is not None and not x.opts.is_option_phrase(m.group()):
            yield Evidence(m.start(), FORMAT, RULE_REFUSAL, Reading(REFUSAL, None, m.span(), "refusal"))
        return
    answers = labelled_answers(t)
    if answers:  # ("Q-a: A | Q-b: D"): answers to several items, none to the question as asked
        e = len(t.rstrip())
        if len(set(answers)) > 1:
            yield Evidence(
                0, FORMAT, RULE_SUB_ITEMS, Reading(SEVERAL, None, (0, e), "answers to several sub-items")
            )
        return
    stripped = t.strip()
    if len(stripped) <= 120 and stripped.count("\n") <= 1:
        yield _bare(x, stripped)
    listing = _Listing(t, x.opts)
    yield last_line(x)
    yield from _bold(x)
    m = patterns.REFUSAL_RE.search(t, max(0, len(t) - 400))
    if m is not None and not x.opts.is_option_phrase(m.group()):
        yield Evidence(m.start(), FORMAT, RULE_REFUSAL, Reading(REFUSAL, None, m.span(), "refusal"))
    e = len(t.rstrip())
    if not _article_after_colon(t, t.rfind("\n", 0, e) + 1, e):
        yield closing_line(x)
    if not listing.is_listing():
        yield _leading_letter(x)
        yield _closing_option_text(x, listing)


class _Listing:
    """The option-label lines of the response ("A) ...", "**B:** ..."), found on first use."""

    def __init__(self, t: str, opts: Options) -> None:
        self.t = t
        self.opts = opts
        self._labels: list[tuple[int, str, str]] | None = None

    @property
    def labels(self) -> list[tuple[int, str, str]]:
        """(line start, letter, shape) of every line that starts with an option label; the shape (prefix
        word and delimiter) tells the items of one listing from a differently written final choice."""
        if self._labels is None:
            t = self.t
            out = []
            first = patterns.LABEL_LINE_RE.match(t)
            start = 0 if first is None else first.end()
            matches = ([first] if first is not None else []) + list(
                patterns.LABEL_LINE_NL_RE.finditer(t, start)
            )
            for m in matches:
                pre, c, post = m.group("pre", "L", "post")
                if c.isupper() and label_use(t, m.start(2), c, self.opts) is None:
                    shape = (pre.strip().lower() if pre else "") + "|" + post.strip()
                    s0 = m.start()
                    out.append((s0 + (t[s0] == "\n"), c, shape))
            self._labels = out
        return self._labels

    def is_listing(self) -> bool:
        return len({c for _, c, _ in self.labels}) >= 2


def _bare(x: Text, stripped: str) -> Evidence:
    """The whole (short) response is the answer: "**C**", ": B", "b. 4", "C and D", "I don't know"."""
    t = x.t
    a = t.find(stripped[:1]) if stripped else 0
    only = stripped.strip(patterns.STRIP_CHARS + "*_$`")
    if len(only) == 1 and only.isascii() and only.isalpha():
        j = t.find(only)
        return Evidence(j, FORMAT, RULE_BARE, letter_reading(only.upper(), x.opts.letters, j, "bare letter"))
    r = _lower_label(x, a, len(t))
    if r is None and x.opts.labels.numbers:  # ("(3)", "2) Hard to say", " 1": a number label alone)
        k = a + 1 if t[a : a + 1] in "([" else a
        r = number_label(t, a, 0, x.opts, words=False) if t[k : k + 1].isdigit() else None
    if r is None:
        r = read_payload(t, a, len(t), x.opts, anchored=False, restatement=True)
        if r.kind == LETTER and listing_in(t):
            r = none_reading(r.span, "the options echoed, not an answer")
        elif r.kind == LETTER and r.verdict == "leading letter" and (dangling(t) or _discusses(t, r.span[1])):
            r = none_reading(r.span, "a label opening a discussion of the option, not an answer")
        elif r.kind == LETTER and dangling(t):
            r = none_reading(r.span, "cut off mid-sentence")
        elif r.kind == LETTER:
            # "E and A both work here.": a list that does not end the response is still several letters
            letters, end = read_letter_list(t, r.span[0], r.letter, False)  # type: ignore[arg-type]
            if len(set(letters)) > 1:
                r = Reading(SEVERAL, None, (r.span[0], end), "several letters: " + "/".join(letters))
    return Evidence(r.span[0], FORMAT, RULE_BARE, r)


def listing_in(s: str) -> bool:
    """Two or more different labels ("A:", "B：", "C)") stand in `s`: a listing of options (echoed or
    invented: "A:紧急避险…;B:意外事件…", "…F:… G:…"), not an answer."""
    found = set()
    for m in patterns.INLINE_LABEL_RE.finditer(s):
        found.add(m.group(1))
        if len(found) >= 2:
            return True
    return False


def _lower_label(x: Text, a: int, b: int) -> Reading | None:
    """A lower-case label whose text is that option's ("b. 4", "c) Berlin"): the text confirms it."""
    t = x.t
    s = t[a:b]
    k = 1 if s[:1] in "([" else 0
    if len(s) < k + 3 or not ("a" <= s[k] <= "z") or s[k + 1 : k + 2] not in (")", ".", ":", "]"):
        return None
    if k and s[k + 1] not in ")]":
        return None
    letter = s[k].upper()
    if letter not in x.opts.letters:
        return None
    rest = s[k + 2 :].strip(patterns.STRIP_CHARS + "*_")
    if rest and _names_option(x, rest) == letter:
        return Reading(LETTER, letter, (a + k, a + k + 1), "lower-case label confirmed by its option text")
    return None


def _names_option(x: Text, rest: str) -> str | None:
    nc = norm(rest)
    return x.opts.equal(rest) or x.opts.starts_with(nc) or x.opts.restated(nc)


def _discusses(t: str, pos: int) -> bool:
    """The words right after a leading label talk about the option ("A: The first option suggests")."""
    e = line_end(t, pos)
    sentence = t[pos : min(e, pos + 80)]
    return patterns.DISCUSSION_RE.search(sentence) is not None


def last_line(x: Text) -> Evidence:
    """The last line is a label: "(B)", "**B) Paris**", "Option B", "c) Berlin" — the label alone, or
    followed by that option's own text. Not the next item of an alphabetical listing (a truncated walk
    through the options), not a table row, not a line that was cut off."""
    t = x.t
    e = len(t.rstrip())
    s0 = t.rfind("\n", 0, e) + 1
    line = t[s0:e]
    rule = RULE_LAST_LINE
    if len(line) > 160 or line.lstrip().startswith("|") or not line.strip():
        return Evidence(s0, FORMAT, rule, none_reading((s0, e), "not a label line"))
    r = _lower_label(x, s0 + len(line) - len(line.lstrip()), e)
    if r is None:
        r = read_payload(t, s0, e, x.opts, anchored=False, prose=False, prefix=False, restatement=False)
    if r.kind != LETTER:
        return Evidence(s0, FORMAT, rule, r if r.kind != NONE else none_reading(r.span, "not a label line"))
    if listing_in(line):
        return Evidence(s0, FORMAT, rule, none_reading(r.span, "a listing of options, not an answer"))
    after = t[r.span[1] : e]
    m = patterns.LABEL_DELIMITER_RE.match(after)
    rest = after[m.end() :] if m else after
    rest_clean = rest.strip(patterns.STRIP_CHARS + "*_`$ \t")
    label_only = not rest_clean
    if not label_only and r.verdict != "option text":
        if (
            dangling(line)
            or patterns.BULLET_START_RE.match(line)
            or not _option_text_then_aside(x, r.letter, rest_clean)  # type: ignore[arg-type]  # a LETTER reading
        ):
            return Evidence(s0, FORMAT, rule, none_reading(r.span, "a label followed by a discussion"))
        aside = x.opts.equal(rest_clean) != r.letter  # (more than the option's own text)
        if aside and line.rstrip(" \t*_`$")[-1:] not in patterns.TERMINAL_CHARS:
            # an aside after the option text, with no end to its sentence: the line was cut off
            return Evidence(s0, FORMAT, rule, none_reading(r.span, "a label line cut off"))
        if aside and _walk_above(x, s0, r.letter):
            return Evidence(
                s0, FORMAT, rule, none_reading(r.span, "one more item of a walk through the options")
            )
    if label_only and _article_after_colon(t, s0, e):
        return Evidence(
            s0, FORMAT, rule, none_reading(r.span, "the article opening an announced step, cut off")
        )
    if r.letter == next(iter(x.opts.letters), None) and patterns.WALK_ANNOUNCEMENT_RE.search(
        t, max(0, s0 - 300), s0
    ):
        return Evidence(
            s0, FORMAT, rule, none_reading(r.span, "the first item of a walk through the options")
        )
    letter = r.letter or ""  # (a LETTER reading)
    listed = _listed_above(x, s0) + [letter] if option_line(t, s0, e, x.opts) == letter else []
    why = several_listed(listed, x.opts)
    if why is not None:  # ("A) …\nB) …\nD) …": several options, each with its text, listed one per line)
        kind = SEVERAL if why.startswith("several") else NONE
        return Evidence(s0, FORMAT, rule, Reading(kind, None, r.span, why))
    if patterns.BULLET_LETTER_LINE_RE.match(t, s0):  # ("* E" after "* D -> ...", or a walk cut off at "* E")
        return Evidence(s0, FORMAT, rule, none_reading(r.span, "an item of a bulleted list, not an answer"))
    w0 = (
        t.rfind("\n", 0, max(0, s0 - 600)) + 1
    )  # (the listing it may continue starts in the 600 characters before)
    labels = _Listing(t[w0:e], x.opts).labels
    mine = [shape for pos, _, shape in labels if pos + w0 == s0]
    before = [(c, shape) for pos, c, shape in labels if pos + w0 < s0]
    if (
        before
        and ord(before[-1][0]) == ord(r.letter) - 1  # type: ignore[arg-type]  # a LETTER reading
        and (not mine or before[-1][1] == mine[0])
    ):
        return Evidence(s0, FORMAT, rule, none_reading(r.span, "label of an option listing"))
    return Evidence(s0, FORMAT, rule, r, label_only=label_only)


def _listed_above(x: Text, s0: int) -> list[str]:
    """The letters of the option lines right above the line at s0 (no blank line between), in order."""
    t = x.t
    out: list[str] = []
    k = s0 - 1
    while k > 0 and len(out) < 26:
        a = t.rfind("\n", 0, k) + 1
        letter = option_line(t, a, k, x.opts)
        if letter is None:
            break
        out.append(letter)
        k = a - 1
    out.reverse()
    return out


def _article_after_colon(t: str, s0: int, e: int) -> bool:
    """The last line is a bare "A" (no bracket, bold or stop) right below a line that ends with a colon
    ("Now we solve for Ajay's present age:\n\nA"): the article opening what the colon announced, cut off
    (an answer anchor before the colon would have read it as the answer)."""
    if t[s0:e].strip() != "A":
        return False
    e2 = len(t[:s0].rstrip())
    return e2 > 0 and t[e2 - 1] in ":："


def _walk_above(x: Text, s0: int, letter: str | None) -> bool:
    """At least two lines right above the line at s0 (no blank line between) open with other option
    letters ("- C is ruled out (...)", "A (Lungs) misses the mark — ..."): a walk through the options, of
    which a last line with a label, its text and an aside is one more item."""
    t = x.t
    k = s0 - 1
    n = 0
    for _ in range(8):
        a = t.rfind("\n", 0, max(k, 0)) + 1
        if k <= 0 or not t[a:k].strip():
            break
        m = patterns.LINE_OPENING_LETTER_RE.match(t, a, k)
        if (
            m is not None
            and m.group(1) != letter
            and m.group(1) in x.opts.letters
            and letter_use(t, m.start(1)) is None
        ):
            n += 1
        k = a - 1
    return n >= 2


def _option_text_then_aside(x: Text, letter: str, rest: str) -> bool:
    """The text after a label is that option's text, maybe followed by an aside ("Paris – the capital")
    that neither discusses the option ("Paris - this option") nor dismisses it ("(36 ohm) is out")."""
    nc = norm(rest)
    for lt, ot in x.opts.norms:
        if lt == letter and (nc == ot or (nc.startswith(ot) and not nc[len(ot) : len(ot) + 1].isalnum())):
            aside = nc[len(ot) :]
            return (
                patterns.DISCUSSION_RE.search(aside) is None
                and patterns.DISMISSED_AFTER_RE.match(aside) is None
                and patterns.CLOSING_DISMISSAL_RE.search(aside)
                is None  # ("D (Iodine) gets crossed out, since ...")
            )
    return x.opts.equal(rest) == letter or x.opts.restated(nc) == letter


def _bold(x: Text) -> Iterator[Evidence]:
    """Exactly one distinct bold letter in the last paragraph that is not a line label."""
    t = x.t
    e = len(t.rstrip())
    para = t.rfind("\n\n", 0, e)
    pstart = 0 if para < 0 else para + 2
    found: dict[str, tuple[int, int]] = {}
    for m in patterns.BOLD_RE.finditer(t, pstart):
        g = 1 if m.group(1) is not None else 2
        if at_line_start(t, m.start()):
            continue
        r = read_payload(t, m.start(g), m.end(g), x.opts, anchored=False, prose=False, equality=False)
        if r.kind == LETTER:
            found[r.letter] = r.span  # type: ignore[index]
    if len(found) == 1:
        letter, span = next(iter(found.items()))
        yield Evidence(span[0], FORMAT, RULE_BOLD, Reading(LETTER, letter, span, "bold letter"))
    elif found:
        for letter, span in found.items():
            yield Evidence(span[0], FORMAT, RULE_BOLD, none_reading(span, f"several bold letters ({letter})"))


def _leading_letter(x: Text) -> Evidence:
    """The response opens with a letter ("D. it can't be A or B", "B。不是 A") that answers rather than
    opens a discussion of option A."""
    t = x.t
    s1 = line_end(t, 0)
    r = read_payload(
        t, 0, min(s1, 200), x.opts, anchored=False, prose=False, equality=False, restatement=False
    )
    if r.kind == LETTER and r.span[0] <= 6:
        if listing_in(t[:s1]):
            return Evidence(
                0, FORMAT, RULE_LEADING, none_reading(r.span, "a listing of options, not an answer")
            )
        if _article_before_name(x, r.span[0]):
            return Evidence(0, FORMAT, RULE_LEADING, none_reading(r.span, "article, not a letter"))
        if dangling(t) or _discusses(t, r.span[1]):
            return Evidence(
                0, FORMAT, RULE_LEADING, none_reading(r.span, "a label opening a discussion of the option")
            )
        return Evidence(0, FORMAT, RULE_LEADING, r)
    return Evidence(0, FORMAT, RULE_LEADING, none_reading(r.span, "no leading letter"))


_AFTER_A = frozenset(phrases.WORDS_AFTER_OPTION_LETTER) | frozenset(phrases.WORDS_AFTER_OPTION_A)


def _article_before_name(x: Text, j: int) -> bool:
    """ "A Type I error is ...", "A Carnot engine ...": an opening "A" before a capitalised word that
    neither follows an option letter nor starts option A's text is the article."""
    m = patterns.NEXT_CAP_WORD_RE.match(x.t, j + 1) if x.t[j] == "A" else None
    if m is None or m.group(1).lower() in _AFTER_A:
        return False
    text_a = dict(x.opts.norms).get("A", "")
    return not text_a.startswith(m.group(1).lower())


def _closing_option_text(x: Text, listing: _Listing) -> Evidence:
    """A complete response that mentions exactly one option text and ends with it ("... caused by a lack
    of Vitamin C.", "... works out to 8 m/s.")."""
    t = x.t
    e = len(t.rstrip())
    para = t.rfind("\n\n", 0, e)
    pstart = 0 if para < 0 else para + 2
    if not x.opts.norms or t[:e][-1:] not in patterns.TERMINAL_CHARS:
        return Evidence(pstart, FORMAT, RULE_OPTION_TEXT, none_reading((pstart, e), "no closing option text"))
    whole = norm(t)
    ending = whole.rstrip(patterns.STRIP_CHARS + "*_`$")
    mentioned = [(lt, ot) for lt, ot in x.opts.norms if len(ot) >= 3 and _contains(whole, ot)]
    if len(mentioned) == 1:
        letter, ot = mentioned[0]
        k = ending.rfind(ot)
        c = max(ending.rfind(p, 0, k) for p in ".!?\n") + 1  # (the sentence that ends with it)
        if (
            k >= 0
            and len(ending) - (k + len(ot)) <= 3
            and not patterns.CLOSING_TEXT_VETO_RE.search(ending, c, k)
        ):
            return Evidence(
                pstart,
                FORMAT,
                RULE_OPTION_TEXT,
                Reading(LETTER, letter, (pstart, e), "ends with the only option text"),
            )
    if not mentioned and x.opts.table.numbers:
        valued = _closing_value(x, ending)
        if valued is not None:
            return Evidence(
                pstart,
                FORMAT,
                RULE_OPTION_TEXT,
                Reading(LETTER, valued, (pstart, e), "ends with an option's value"),
            )
    return Evidence(pstart, FORMAT, RULE_OPTION_TEXT, none_reading((pstart, e), "no closing option text"))


def _closing_value(x: Text, ending: str) -> str | None:
    """The option whose value the response ends with, when no other option's value occurs in it."""
    values: set[str] = set()
    last = None
    for m in patterns.NUMBER_RE.finditer(ending):
        parsed = parse_number(m.group())
        if parsed is not None:
            values.update(lt for lt, (v, _) in x.opts.table.numbers if same_value(v, parsed[0]))
        last = m
    if last is None or len(ending) - last.end() > 12:
        return None
    letter = x.opts.same_number(ending[last.start() :])
    return letter if letter is not None and values == {letter} else None


def _contains(hay: str, needle: str) -> bool:
    from .options import contains_words

    return contains_words(hay, needle)
