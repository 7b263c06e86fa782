"""Is this character an option letter? A letter counts only as a standalone token: never inside a word
(`Answer`, `I'm`), a name (`Vitamin C`), an abbreviation (`E. coli`), a compound (`X-ray`), a formula
(`A = πr²`), or as the article/pronoun (`A polygenic score`, `I think`)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from ...labels import LETTER_SET, LETTERS
from . import phrases
from .labels import DEFAULT_LOCAL
from .patterns import LIST_SEP_RE, NEXT_WORD_RE, PREV_WORD_RE, WORD_AFTER_RE

UPPER = LETTER_SET
ASCII_LETTERS = UPPER | frozenset(LETTERS.lower())
# ASCII letters and digits: `ch in WORD_ASCII or (ch > "\x7f" and is_word_char(ch))` is is_word_char(ch)
# without a call in the common (ASCII) case.
WORD_ASCII = ASCII_LETTERS | frozenset("0123456789")
_FORMULA_OPS = frozenset(phrases.FORMULA_OPERATORS)
_APOSTROPHES = frozenset("'’‘")  # ("O‘zbekiston": Uzbek writes o‘ and g‘)
# Neighbours of a letter that can make it part of a word, an abbreviation, a compound or a formula.
_NEIGHBOUR_TRIGGERS = frozenset("'’‘.-\\^_")
_PRE_OK = frozenset(phrases.FUNCTION_WORDS_BEFORE_LETTER)
_AFTER_LETTER_I = frozenset(phrases.WORDS_AFTER_OPTION_LETTER)
_AFTER_LETTER_A = _AFTER_LETTER_I | frozenset(phrases.WORDS_AFTER_OPTION_A)
_AFTER_PERIOD_OK = frozenset(phrases.WORDS_AFTER_LETTER_PERIOD)
_ONE_LETTER_WORDS = frozenset(phrases.ONE_LETTER_WORDS)


def is_word_char(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum()
    return ch.isdigit() or (("\u00aa" <= ch <= "\u052f" or "\u1e00" <= ch <= "\u1fff") and ch.isalpha())


def word_char_before(s: str, k: int) -> bool:
    """A letter or digit right before position k (Latin, Greek, Cyrillic or digits)."""
    if k <= 0:
        return False
    ch = s[k - 1]
    return ch in WORD_ASCII or (ch > "\x7f" and is_word_char(ch))


def letter_use(s: str, j: int) -> str | None:
    """Why the letter at s[j] is not an option letter (inside a word, an abbreviation, ...), or None."""
    n = len(s)
    c = s[j]
    prev = s[j - 1] if j > 0 else " "
    nxt = s[j + 1] if j + 1 < n else " "
    if c not in ASCII_LETTERS:  # a label of another script: no letter of its own script next to it
        if _glued(prev, c) or _glued(nxt, c):
            return "inside a word"
        if c in _ONE_LETTER_WORDS and _word_of_its_language(s, j):
            return "a word of its language, not a letter"
        return "inside a formula" if _in_formula(s, j) else None
    if (
        prev in WORD_ASCII
        or nxt in WORD_ASCII
        or (prev > "\x7f" and is_word_char(prev))
        or (nxt > "\x7f" and is_word_char(nxt))
    ):
        return "inside a word"
    if prev in _NEIGHBOUR_TRIGGERS or nxt in _NEIGHBOUR_TRIGGERS:
        reason = _neighbour_reason(s, j, prev, nxt)
        if reason is not None:
            return reason
    if _in_formula(s, j):
        return "inside a formula"
    if nxt == " " or nxt == "\t":
        m = NEXT_WORD_RE.match(s, j + 1)
        if m:
            word = m.group(1)
            if (
                c in "Aa"
                and word not in _AFTER_LETTER_A
                and (
                    not word.startswith(phrases.OPTION_WORD_STEMS_AFTER_LETTER) or _letter_follows(s, m.end())
                )
                and not _list_follows(s, j)
            ):
                return "article, not a letter"
            if c == "I" and word not in _AFTER_LETTER_I:
                return "pronoun, not a letter"
        if c in _ONE_LETTER_WORDS and _word_of_its_language(s, j):
            return "a word of its language, not a letter"
    elif nxt == ".":
        m = NEXT_WORD_RE.match(s, j + 2)
        if m and m.group(1) not in _AFTER_PERIOD_OK and not m.group(1).startswith("'"):
            return "abbreviation"
    return None


def _glued(ch: str, label: str) -> bool:
    """`ch` next to a label of another script makes it part of a word: any letter or combining mark (a vowel
    sign: "बात", "খানা"), except that a katakana label stands alone between hiragana or kanji ("答えはイです")."""
    if not ch.isalpha() and not (ch > "\u02ff" and unicodedata.category(ch)[0] == "M"):
        return False
    if "\u30a0" <= label <= "\u30ff":
        return "\u30a0" <= ch <= "\u30ff"
    return True


def _in_formula(s: str, j: int) -> bool:
    """An operator stands right after the letter at s[j], or right before it on its line ("A = πr²", "Δ = 4ac",
    "x + B"); an arrow alone before it ("=> C") points at it."""
    after = s[j + 1 : j + 9].lstrip(" \t")  # (the next and the previous non-blank character)
    if after and (after[0] in _FORMULA_OPS or after.startswith("->")):
        return True
    before = s[max(0, j - 8) : j]
    before = before[before.rfind("\n") + 1 :].rstrip(" \t")  # (on the letter's line)
    return bool(
        before and (before[-1] in _FORMULA_OPS or before.endswith("->")) and before.strip(" \t=<>-→⇒")
    )


def _word_of_its_language(s: str, j: int) -> bool:
    """The capital at s[j] (one of ONE_LETTER_WORDS) is followed by a space and a lower-case word that is no
    predicate about an option letter ("V prírode", "В этом случае", "Η σωστή"): a word of its language."""
    m = WORD_AFTER_RE.match(s, j + 1)
    return m is not None and m.group(1)[0].islower() and m.group(1) not in _AFTER_LETTER_I


def _letter_follows(s: str, k: int) -> bool:
    """Another capital letter standing alone follows before the sentence ends ("A opção correta é a C"): the
    option noun after an "A" names that letter, and the "A" is the article."""
    e = len(s)
    for stop in ".!?\n":
        f = s.find(stop, k, min(e, k + 80))
        if f >= 0:
            e = f
    e = min(e, k + 80)
    for i in range(k, e):
        if s[i] in UPPER and not word_char_before(s, i) and (i + 1 >= len(s) or not is_word_char(s[i + 1])):
            return True
    return False


def _list_follows(s: str, j: int) -> bool:
    """ "A together with C": a list separator and another capital letter standing alone follow the A."""
    m = LIST_SEP_RE.match(s, j + 1)
    k = m.end() if m is not None else -1
    return 0 < k < len(s) and s[k] in UPPER and not s[k + 1 : k + 2].isalnum()


def _neighbour_reason(s: str, j: int, prev: str, nxt: str) -> str | None:
    n = len(s)
    nxt2 = s[j + 2] if j + 2 < n else " "
    prev2 = s[j - 2] if j > 1 else " "
    if nxt in _APOSTROPHES and nxt2.isalpha():
        return "inside a word"
    if prev in _APOSTROPHES and prev2.isalpha():
        return "inside a word"
    if nxt == "." and is_word_char(nxt2):
        return "abbreviation"
    if prev == "." and is_word_char(prev2):
        return "abbreviation"
    if nxt == "-" and is_word_char(nxt2):
        return "compound word"
    if prev == "-" and is_word_char(prev2):
        return "compound word"
    if prev in "\\^_":
        return "formula"
    return None


def after_name(s: str, j: int) -> bool:
    """True when the letter at s[j] directly follows a word that makes it part of a name."""
    m = PREV_WORD_RE.search(s, max(0, j - 40), j)
    if not m:
        return False
    return m.group(1).lower().rstrip(".") not in _PRE_OK


def token_letter(s: str, j: int, allow_lower: bool, local: Mapping[str, str] = DEFAULT_LOCAL) -> str | None:
    """The option letter the character s[j] stands for (upper case), or None; `local` maps the labels of
    other scripts (labels.py)."""
    c = s[j]
    if c in ASCII_LETTERS:
        if c.islower() and not allow_lower:
            return None
        return c.upper()
    return local.get(c)


def dangling(text: str) -> bool:
    """The text stops mid-sentence: it ends with a word that cannot end one ("... the crust, but"), a
    comma, a colon, a dash or an ellipsis."""
    s = text.rstrip(" \t\r\n*_")
    if not s:
        return False
    if s[-1] in ",:;-–—(" or s.endswith(("...", "…")):
        return True
    k = len(s)
    while k > 0 and s[k - 1].isalpha():
        k -= 1
    word = s[k:]
    return not (len(word) == 1 and word.isupper()) and word.lower() in phrases.DANGLING_WORDS
