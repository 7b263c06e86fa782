"""Property tests: the grader never raises on any input shape, and the fast paths equal their references."""

from __future__ import annotations

import re
import unicodedata

import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcqa_prep.grader import OVERRIDE_MODES, grade_text
from mcqa_prep.grader.answer_colon import (
    _COLON,
    _MD,
    COLON_REFERENCE,
    MD_REFERENCE,
    _iter_answer_matches,
    _md_payloads,
    _Suffixes,
    choice_letter,
    extract_answer_colon_md,
)
from mcqa_prep.grader.boxed import extract_strict
from mcqa_prep.grader.custom_regex import _digit_differs, _entry, _word_differs
from mcqa_prep.grader.letters import allowed_letters

MODES = [m for m in OVERRIDE_MODES if m != "robust"]  # robust is owned and tested elsewhere

# Pieces that exercise the rules: anchors, markup, boxes, letters in several scripts, separators, and the
# characters on which re and regex (or str.lower and re IGNORECASE) disagree.
_PIECES = [
    "answer",
    "Answer",
    "ANSWER",
    "aNsWeR",  # mixed case, and the word in parts: answer_colon finds candidates from their `w`/`W`
    "ans",
    "ANS",
    "wer",
    "Wer",
    "WER:",
    "answer:",
    "Answer: ",
    "**Answer:** ",
    "__Answer__:",
    "Final Choice:",
    "final choice:",
    ":",
    "*",
    "_",
    "**",
    " ",
    "  ",
    "\n",
    "\t",
    "\xa0",
    "\u202f",
    "\x1c",
    "\\boxed{",
    "{",
    "}",
    "\\text{",
    "$",
    "(",
    ")",
    "[",
    "]",
    ".",
    ",",
    "/",
    "|",
    "&",
    ";",
    " or ",
    " and ",
    "A",
    "B",
    "C",
    "D",
    "E",
    "J",
    "Z",
    "a",
    "b",
    "c",
    "i",
    "I",
    "Ｂ",
    "Ａｎｓｗｅｒ",
    "：",
    "ب",
    "د",
    "ব",
    "ſ",
    "İ",
    "ı",
    "é",
    "e\u0301",
    "²",
    "٣",
    "答えは",
    "Réponse :",
    "optA",
    "optB",
    "Ribosome",
    "DNA ligase",
    "I think",
    "because",
    "K",
]
texts = st.lists(st.sampled_from(_PIECES), max_size=25).map("".join) | st.text(max_size=60)

_key = st.one_of(st.sampled_from(list("ABCDEFGHIJabcZ")), st.text(max_size=3), st.integers(), st.none())
_value = st.one_of(
    st.none(),
    st.sampled_from(["optA", "optB", "Ribosome", "DNA ligase", "", " "]),
    st.text(max_size=8),
    st.integers(),
)
_option = st.one_of(
    st.dictionaries(_key, _value, max_size=3),
    st.none(),
    st.text(max_size=3),
    st.integers(),
    st.lists(st.none(), max_size=2),
)
options_st = st.one_of(
    st.none(),
    st.lists(_option, max_size=11),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2),
)
_patterns = st.sampled_from(
    [
        r"Answer:\s*([A-Za-z])",
        r"(Answer):\s*([A-D])",
        "([",
        r"Final Choice:\s*(.+)",
        r"(\w+)",
        r"\b[A-D]\b",
        r"(?<=Answer:\s*)[A-D]",
        "",
        r"(.*)",
        r"Answer:\s*(\S)",
    ]
)
_regex_value = st.one_of(
    st.none(), _patterns, st.lists(st.one_of(_patterns, st.none(), st.integers()), max_size=3), st.integers()
)
template_st = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.fixed_dictionaries(
        {},
        optional={
            "output_regex": _regex_value,
            "answer_prefix": st.one_of(
                st.none(), st.sampled_from(["Final Choice:", "答えは", "answer is", " "]), st.integers()
            ),
        },
    ),
)
mode_st = st.one_of(st.none(), st.sampled_from(MODES), st.text(max_size=5))
gold_st = st.one_of(st.none(), st.sampled_from(["A", "b", " C ", ""]), st.integers())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    options=options_st,
    gold=gold_st,
    row_mode=mode_st,
    tm=template_st,
    override=st.sampled_from([None, *MODES]),
)
def test_grade_text_never_raises_and_letters_are_allowed(text, options, gold, row_mode, tm, override):
    got = grade_text(text, options, gold, row_mode, tm, override=override)
    assert got.reward in (0.0, 1.0)
    if got.extracted_answer is None:
        return
    letters = allowed_letters(options)
    if got.extracted_answer in letters:
        return
    # the one documented exception: a custom regex on a row without usable options
    assert not letters and got.mode == "output_regex", (got, letters)


def _ref_md_payloads(nt: str, prefix: str | None) -> list[tuple[int, str]]:
    found = [(m.start(), m.group(1)) for m in MD_REFERENCE.finditer(nt)]
    if prefix:
        p = unicodedata.normalize("NFKC", prefix)
        for m in re.compile(re.escape(p) + r"\s*", re.IGNORECASE).finditer(nt):
            end = nt.find("\n", m.end())
            found.append((m.start(), nt[m.end() : end if end >= 0 else len(nt)]))
    found.sort(key=lambda t: t[0])
    return found


@settings(max_examples=800, deadline=None)
@given(
    text=texts,
    prefix=st.one_of(
        st.none(), st.sampled_from(["Final Choice:", "答えは", "answer is", "Ans.:", "aa", " "])
    ),
)
def test_md_payloads_equal_reference(text, prefix):
    nt = unicodedata.normalize("NFKC", text)
    got = [(start, payload) for start, _rule, _p, payload in _md_payloads(nt, prefix)]
    assert got == _ref_md_payloads(nt, prefix)


# lines of multilingual prose that NFKC changes (full-width punctuation and letters, vowel signs, compatibility
# forms), with answers and colons spread over lines, blank lines between them
_LINE_PIECES = [
    "答案是，",
    "。",
    "\u3000",
    "मान लीजिए",
    "ﬁnal",
    "①",
    "Ａ",
    "Ｂ",
    "ｂ",
    "ａｎｓｗｅｒ",
    "Ａｎｓｗｅｒ：",
    "anſwer",
    "answer\u0301",
    "Answer",
    "**Answer**",
    "answer:",
    ":",
    "：",
    " B",
    "C",
    " or ",
    "\r",
    "\u2028",
    "  ",
    "*",
    "Final Choice:",
    "Fınal Choıce:",
    "Ｆｉｎａｌ Ｃｈｏｉｃｅ：",
    "choice is",
    "İ:",
]
md_texts = st.lists(st.lists(st.sampled_from(_LINE_PIECES), max_size=3).map("".join), max_size=8).map(
    "\n".join
)


@settings(max_examples=2000, deadline=None)
@given(
    text=md_texts | texts,
    prefix=st.sampled_from([None, None, "Final Choice:", "choice is", "i:", "答えは", "x\ny"]),
)
@example("Answer\n：\nＢ 答案是，", None)  # the payload on the line after the colon's line
@example("ａｎｓｗｅｒ\n\u3000\n：\n\nＣ。", None)  # blank lines before the colon, two newlines after it
@example("答案是，\nanſwer: Ｄ\n①", None)
@example("答案是，\nFınal Choıce:\u3000\n\nＢ", "Final Choice:")  # re takes ı for i
@example("答案是，\nＦｉｎａｌ Ｃｈｏｉｃｅ： Ｃ", "Final Choice:")
def test_md_reads_the_same_payloads_when_only_the_lines_near_an_answer_are_normalised(text, prefix):
    """md_text normalises only the lines an `answer` or answer_prefix match can touch; the payloads (and so
    the grade) are those of the whole text normalised, and spans are given only when NFKC leaves the text
    unchanged."""
    from mcqa_prep.grader.answer_colon import extract_answer_colon_md, md_text

    full = unicodedata.normalize("NFKC", text)
    assert "\n".join(unicodedata.normalize("NFKC", x) for x in text.split("\n")) == full  # the premise
    lazy, same = md_text(text, prefix)
    assert same == (full == text)
    want = [(rule, payload) for _s, rule, _p, payload in _md_payloads(full, prefix)]
    assert [(rule, payload) for _s, rule, _p, payload in _md_payloads(lazy, prefix)] == want
    letters = {L: L for L in "ABCDJ"}
    tm = {"answer_prefix": prefix} if prefix else None
    got, ref = extract_answer_colon_md(text, letters, tm), None
    import mcqa_prep.grader.answer_colon as ac

    real = ac.md_text
    ac.md_text = lambda t, p: real(t, p, lazy=False)
    try:
        ref = extract_answer_colon_md(text, letters, tm)
    finally:
        ac.md_text = real
    assert got == ref


@settings(max_examples=800, deadline=None)
@given(text=texts)
def test_answer_colon_first_match_equals_reference(text):
    m = next(_iter_answer_matches(text, _COLON), None)
    r = COLON_REFERENCE.search(text)
    assert (m.span(), m.group(1)) == (r.span(), r.group(1)) if r else m is None
    assert [x.span() for x in _iter_answer_matches(text, _MD)] == [x.span() for x in _MD.finditer(text)]


ORDINARY = [
    r"Answer:\s*([A-Za-z])",
    r"Final Choice:\s*([A-J])\s*",
    r"Option Selected:\s*([A-Za-z])",
    r"ANSWER IS\s*([A-Za-z])",
    r"Answer\s*:\s*(?!Answer)\s*([A-Za-z])\s*",
    r"\b([A-D])\b",
    r"(\w+)",
    r"(\d)",
    r"\(([A-J])\)",
    r"答えは\s*\(?([A-J])\)?",
    r"Answer:\s*(\S+)",
    r"(?:answer|choice)\W+([a-j])",
    r"\\boxed\{([A-J])\}",
    r"[A-D](?=\))",
    r"(.*)",
]


# patterns where the dotted/dotless i matter: classes and ranges around I, negations, Latin-1 ranges,
# backreferences (which compare matched texts: never run on the mapped text), code points named by escape
DOTTED_I = [
    r"([^i])",
    r"[h-j]+",
    r"([A-Z]+)",
    r"[^A-Z]",
    r"(\w)\1",
    r"(?P<x>.)(?P=x)",
    r"[\x80-\xff]|I",
    r"\u0131(.)",
    r"[\u0100-\u017f]",
    r"ı(.)",
    r"(?i:s)",
    "ſ+",
    "K",
    r"Cevabınız:\s*([A-J])",
    r"[ğ-ı]",
    r"\bi\w*",
]
_I_TEXTS = st.lists(
    st.sampled_from(
        [
            "İ",
            "ı",
            "I",
            "i",
            "ii",
            "İı",
            " ",
            "ş",
            "ğ",
            "Answer: ",
            "B",
            "x",
            "\u0307",
            "K",
            "ſ",
            "k",
            "s",
            "Cevabiniz: ",
            "Cevabınız: ",
        ]
    ),
    max_size=20,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=texts | _I_TEXTS)
def test_custom_regex_engine_agrees_with_re(text):
    """The engine and text engine_for picks find what re finds on the text itself: the same spans, and the
    same captured text once read back from the text at those spans."""
    for p in ORDINARY + DOTTED_I:
        e = _entry(p)
        engine, subject = e.engine_for(text)
        got = [(m.span(), m.span(m.re.groups and 1)) for m in engine.finditer(subject)]
        want = [(m.span(), m.span(m.re.groups and 1)) for m in e.re.finditer(text)]
        assert got == want, p


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(
        alphabet=st.characters(max_codepoint=127, exclude_characters="\x1c\x1d\x1e\x1f"), max_size=80
    )
    | st.lists(st.sampled_from(_PIECES[:40]), max_size=20).map("".join)
)
def test_regex_v0_equals_re_on_ascii_for_ordinary_patterns(text):
    """The premise of running user patterns on `regex`: VERSION0 + IGNORECASE behaves as `re` does."""
    if not text.isascii() or re.search("[\x1c-\x1f]", text):
        return
    for p in ORDINARY:
        assert regex.findall(p, text, flags=regex.IGNORECASE | regex.V0) == re.findall(
            p, text, re.IGNORECASE
        ), p


_KEYS = st.one_of(st.sampled_from(list("ABCDEJQZabcÄİß")), st.text(max_size=2), st.integers(0, 3))
_VALUES = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["x", "y", ""]), st.integers(0, 2))
_OPTION = st.one_of(
    st.dictionaries(_KEYS, _VALUES, max_size=3),
    st.builds(lambda k, v: {k: v}, st.sampled_from(list("ABCDEFGHIJ")), st.text(max_size=5)),
    st.text(max_size=3),
    st.none(),
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_OPTION, max_size=11))
def test_allowed_letters_fast_path_equals_the_general_definition(options):
    from mcqa_prep.grader.letters import _allowed_general, allowed_letters

    got = allowed_letters(options)
    want = _allowed_general(options)
    assert got == want and list(got) == list(want)


def test_the_characters_ignorecase_takes_for_ascii_letters_are_listed():
    """The ASCII-prefix fast path in answer_colon relies on the full list (checked over every code point)."""
    from mcqa_prep.grader.answer_colon import FOLDS_TO_ASCII

    ascii_letter = re.compile("[a-z]", re.IGNORECASE)
    found = {
        chr(cp)
        for cp in range(0x80, 0x110000)
        if ascii_letter.match(chr(cp)) or any(c.isascii() and c.isalpha() for c in chr(cp).lower())
    }
    assert found == set(FOLDS_TO_ASCII)


# Pieces of one line for the suffix reader: letters (in and out of the options, glued to others), the
# separators of an ambiguous list, what a payload is stripped of, whitespace that is not stripped by it,
# localised letters (translated to two characters), combining marks and Hangul jamo (normalisation at the
# cut), digits and word characters next to capitals.
_SUFFIX_PIECES = [
    "A", "B", "b", "x", "Ab", "E", "Z", "AB", "1", "_", " ", "  ", "\u3000", "\t", "\x0b", ".", ",", "*",
    "`", ":", ";", "/", "|", "&", " or ", " and ", "(", ")", "\u0623", "\u09ac", "\u0301", "e\u0301",
    "\u00df", "\u1100", "\u1161", "\u11a8", "\uac00", "Final:", "final: ",
]  # fmt: skip
_LETTERS = {L: L for L in "ABCD"}


@settings(max_examples=1500, deadline=None)
@given(
    line=st.lists(st.sampled_from(_SUFFIX_PIECES), max_size=14).map(
        lambda p: unicodedata.normalize("NFKC", "".join(p))
    )
)
@example("xA B")
@example("\u0623\u0628 . A")
@example("A or B")
def test_the_suffix_reader_reads_every_suffix_as_choice_letter(line):
    nt = "before\n" + line
    b = len(nt)
    reader = _Suffixes()
    for a in range(b, 6, -1):  # last payload first, as the md rule reads them
        assert reader.choice(nt, a, b, _LETTERS) == choice_letter(nt[a:b], _LETTERS), (nt[a:b], a)


def _md_reference(text: str, prefix: str | None):
    """lenient_answer_colon_md read payload by payload (quadratic on a line repeating the prefix):
    (letter, status, rule)."""
    nt = unicodedata.normalize("NFKC", text)
    worst = "no_answer"
    for _s, rule, _a, payload in reversed(_md_payloads(nt, prefix)):
        letter, status = choice_letter(payload, _LETTERS)
        if letter is not None:
            return letter, "ok", rule
        if status == "ambiguous" or (status == "out_of_range" and worst == "no_answer"):
            worst = status
    boxed = extract_strict(text, _LETTERS)
    if boxed.letter is not None:
        return boxed.letter, boxed.status, boxed.rule
    return None, worst, "answer_colon_md"


@settings(max_examples=800, deadline=None)
@given(
    text=st.lists(st.sampled_from([*_SUFFIX_PIECES, "\n", "Final: ", "Final:Final: "]), max_size=16).map(
        "".join
    ),
    prefix=st.sampled_from(["Final:", "final", "x", ":", " or "]),
)
def test_md_with_a_repeated_prefix_grades_as_payload_by_payload(text, prefix):
    got = extract_answer_colon_md(text, _LETTERS, {"answer_prefix": prefix})
    assert (got.letter, got.status, got.rule) == _md_reference(text, prefix)


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=60) | _I_TEXTS)
@example(text="cafe\u0301")  # a combining mark: \w for regex, not for re
@example(text="x\u00b2")  # a superscript digit
@example(text="plain ascii 123")
def test_per_character_engine_check_equals_comparing_the_whole_text(text):
    """engine_for's memoised per-character check says the engines differ on `\\w` / `\\d` exactly when removing
    each engine's matches from the whole text gives different strings (the definition)."""
    for check, rx, rex in (
        (_word_differs, regex.compile(r"\w", regex.V0), re.compile(r"\w")),
        (_digit_differs, regex.compile(r"\d", regex.V0), re.compile(r"\d")),
    ):
        assert check(text) == (rx.sub("", text) != rex.sub("", text)), (check.__name__, text)
        assert check(text) == (rx.sub("", text) != rex.sub("", text))  # memoised: the same answer again
