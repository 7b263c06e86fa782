"""Anchored options in every language the presets cover: the phrase table, and what it says about an option.

An option is *anchored* when its meaning depends on where it stands: "all of the above" / "none of the
above" / "both" / "neither" (positional), or an option that names other options by letter ("Both A and B",
"A and C", "Only B", "以上都对" ...). `convert --shuffle` keeps anchored options, and the options they name,
in place (balance.pinned_positions).

The table (anchor_phrases.py) is data: per language, whole options that are positional (`exact`), beginnings of
positional options followed by at most a few more words (`prefixes`; counted in characters for scripts
written without spaces), and the words of a letter reference: connectors ("and", "or"), keywords ("only",
"both", "options") and verdicts ("are correct"). The option labels of other scripts (Arabic أ ب ج د ه,
Devanagari क ख ग घ and अ ब स द, Bengali ক খ গ ঘ and অ ব ড ঢ, Cyrillic А Б В Г Д, Japanese ア イ ウ エ, ...: the
package's one label table, mcqa_prep/labels.py) map to A, B, C, ... by their order.

A reference that cannot be resolved is reported, never guessed: a letter that is not one of the row's
options ("A and E" with four options), or labels that could all be Latin look-alikes and read differently
as such ("А и В": Cyrillic order says A and C, the shapes say A and B; "Б и В" shows Cyrillic labels: B and
C). Such a row keeps its option order.
Phrases were written for each language and checked against option texts of public multiple-choice data
(CMMLU, Global-MMLU, MMMLU and quiz banks in those languages) where they could be found.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from ..labels import LOOKALIKES, NATIVE, SCRIPTS, TWO_READINGS
from ..retrie import trie_alternation
from .anchor_phrases import LANGS, Language

TAIL_WORDS = 4
TAIL_CHARS = 8
_LANGS = LANGS
LANGUAGES: dict[str, Language] = {lang.code: lang for lang in _LANGS}
_EDGE = " \t\n.,;:!?。．、，；：！？\"'“”‘’«»()（）[]【】"


def normalise(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, punctuation and brackets at both ends removed."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.casefold().split()).strip(_EDGE)


@functools.cache
def _tables() -> tuple[frozenset[str], dict[str, tuple[tuple[str, bool, bool], ...]], re.Pattern[str]]:
    """(exact phrases, prefixes by their first character (longest first), the `inside` patterns)."""
    exact = frozenset(normalise(p) for lang in _LANGS for p in lang.exact)
    prefixes: dict[str, list[tuple[str, bool, bool]]] = {}
    for lang in _LANGS:
        for p in lang.prefixes:
            q = normalise(p.rstrip("*"))
            prefixes.setdefault(q[0], []).append((q, lang.spaced, p.endswith("*")))
    by_first = {k: tuple(sorted(set(v), key=lambda x: -len(x[0]))) for k, v in prefixes.items()}
    inside = re.compile("|".join(f"(?:{rx})" for lang in _LANGS for rx in lang.inside))
    return exact, by_first, inside


@functools.cache
def _inside_keys() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `inside` keys: (ASCII ones, the others)."""
    keys = {k for lang in _LANGS for k in lang.inside_keys}
    keys = {k for k in keys if not any(o != k and o in k for o in keys)}  # 'anteriores' holds 'anterior'
    return tuple(k for k in keys if k.isascii()), tuple(k for k in keys if not k.isascii())


def _maybe_inside(t: str) -> bool:
    ascii_keys, other = _inside_keys()
    # C-level scans; ASCII text can hold only the ASCII keys
    return any(map(t.__contains__, ascii_keys)) or (not t.isascii() and any(map(t.__contains__, other)))


def is_positional(text: str) -> bool:
    """'All of the above', 'Toutes les réponses ci-dessus', '以上都对', 'جميع ما سبق', ...: meaningful only in
    its place."""
    t = normalise(text)
    if not t:
        return False
    exact, by_first, inside = _tables()
    if t in exact:
        return True
    for p, spaced, stem in by_first.get(t[0], ()):
        if t.startswith(p):
            nxt = t[len(p) : len(p) + 1]
            if spaced and not stem and (nxt == "-" or nxt.isalnum()):
                continue  # 'the above' is not 'the above-ground'; a stem ('вышеперечисленн*') may go on
            rest = t[len(p) :].strip(_EDGE)
            if not rest or (len(rest.split()) <= TAIL_WORDS if spaced else len(rest) <= TAIL_CHARS):
                return True
    return _maybe_inside(t) and inside.search(t) is not None


# ------------------------------------------------------------------------------------------------ letters

UNRESOLVED = "unresolved"


def _alt(words) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


# the labels of other scripts a reference can hold: those NFKC keeps (the text is read in NFKC, where a circled
# ① is the digit 1)
_NATIVE = {c: L for c, L in NATIVE.items() if unicodedata.normalize("NFKC", c) == c}
# the letters a native option letter must not be followed by (it would be the start of a word)
_SCRIPT_LETTERS = {
    label: s.letters or "\\w" for s in SCRIPTS for run in (*s.label_runs, s.spellings) for label in run
}


def _native_letter(ch: str) -> str:
    return f"{re.escape(ch)}(?![{_SCRIPT_LETTERS[ch]}])"


@functools.cache
def _token_pattern() -> str:
    words = [w for lang in _LANGS for w in (*lang.conj, *lang.keywords, *lang.verdicts)]
    return rf"(?:(?P<L>{_letter_pattern()})|(?i:{_alt(words)})|[,;&+/、，；：:.!。·・\-–—])"


@functools.cache
def _reference() -> re.Pattern[str]:
    return re.compile(rf"\s*(?:{_token_pattern()}\s*)+")


@functools.cache
def _token() -> re.Pattern[str]:
    return re.compile(_token_pattern())


@functools.cache
def _letter_pattern() -> str:
    natives = sorted(_NATIVE, key=len, reverse=True)
    latin = rf"(?<![{_LATIN}])[A-Z](?![{_LATIN}])"  # not a letter of a word, accented ones included ('Cả')
    return "|".join([r"\(\s*[A-Za-z]\s*\)", latin, *map(_native_letter, natives)])


@functools.cache
def _has_letter() -> re.Pattern[str]:
    return re.compile(_letter_pattern())


@functools.cache
def _keywords() -> re.Pattern[str]:
    return re.compile(rf"(?i:{_alt(w for lang in _LANGS for w in lang.keywords)})")


_ROMAN = frozenset("IVX")
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"  # Latin letters, accented ones included


def letter_refs(text: str, n: int | None = None) -> list[str] | str | None:
    """The option letters an option text names ("Both A and B" -> [A, B], "أ و ب" -> [A, B], "只有C" -> [C]),
    None when it names none, UNRESOLVED when it names letters that cannot be told for sure (a letter that is
    not one of the n options, Cyrillic look-alikes of Latin letters). A bare letter is not a reference ("C"
    may be an answer in its own right, e.g. a vitamin)."""
    s = unicodedata.normalize("NFKC", text).strip()
    if not s or len(s) > 60 or _has_letter().search(s) is None:
        return None
    first = _token().match(s)
    if first is None or not (first.group("L") or _keywords().match(s)) or _reference().fullmatch(s) is None:
        return None  # a reference starts with a letter or a keyword ('Both A and B', '只有C', 'فقط أ')
    raw = [m.group("L") for m in _token().finditer(s) if m.group("L")]
    if not raw or (len(raw) == 1 and _keywords().search(s) is None):
        return None
    native = _NATIVE
    labels = [c for c in raw if c in native]
    if labels and all(c in LOOKALIKES for c in labels) and any(c in TWO_READINGS for c in labels):
        return UNRESOLVED  # 'А и В': Cyrillic order (A, C) or Latin look-alikes (A, B)?
    letters = [r.strip("() \t").upper() if r.startswith("(") else native.get(r, r) for r in raw]
    if n is not None and any(ord(L) - 65 >= n for L in letters):
        if set(letters) <= _ROMAN:
            return None  # 'I only', 'I and V': statements numbered in roman numerals, not options
        return UNRESOLVED
    return letters


# a cheap pre-test: can any option of a row be anchored? (most rows: a few C-level scans and set look-ups)
@functools.cache
def _maybe() -> tuple[frozenset[str], frozenset[str], re.Pattern[str]]:
    """(word keys: a phrase's first word, or its first two when the first is a short word such as 'the';
    character keys of the unspaced scripts: a phrase's first one or two characters; the letter pre-test)."""
    words: set[str] = set()
    chars: set[str] = set()
    for lang in _LANGS:
        for phrase in (*lang.exact, *lang.prefixes, *lang.keywords):
            t = normalise(phrase.rstrip("*"))
            if not t:
                continue
            if not lang.spaced:
                chars.add(t[:2])
                continue
            ws = t.split(" ")
            short = len(ws) > 1 and len(ws[0]) <= 3 and not (len(ws) == 2 and phrase.endswith("*"))
            words.add(ws[0] + " " + ws[1] if short else ws[0])  # a stem's second word goes on: key its first
    native = "".join(sorted(c for c in _NATIVE if len(c) == 1))
    letters = re.compile(rf"\n(?:\(|[A-Z](?![{_LATIN}])|[{re.escape(native)}])")
    return frozenset(words), frozenset(chars), letters


@functools.cache
def _line_starts() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The line test of may_anchor as one scan of "\\n" + the lower-cased text: a line whose start, past edge
    characters and whitespace, begins with a word key (its two words apart by any whitespace) or a character
    key. It matches every line the per-line reading (first word, first two words, first one or two
    characters of the stripped line) finds, and may match more (a key that is only the start of the first
    word): a superset is safe, the pre-test only lets scan_pins skip rows. The leading newline gives the
    engine a literal to look for (a `^` in multi-line mode is tried at every position). Two patterns: every
    key, and the ASCII keys alone for ASCII text (no other key can match it; a third of the alternatives)."""
    words, chars, _ = _maybe()
    keys = [[r"\s+" if ch == " " else re.escape(ch) for ch in w] for w in words]
    keys += [[re.escape(ch) for ch in c] for c in chars]
    edge = rf"\n[{re.escape(_EDGE)}\s]*"
    ascii_keys = [k for k in keys if all(piece.isascii() for piece in k)]
    return (
        re.compile(edge + trie_alternation(keys, prefix_only=True)),
        re.compile(edge + trie_alternation(ascii_keys, prefix_only=True)),
    )


def may_anchor(choices: Sequence[str]) -> bool:
    """False only when no option can be anchored: none starts with a letter or '(' (a letter reference starts
    with a letter or a keyword), none starts with the first word(s) of a phrase or keyword of the table, none
    holds an `inside` phrase."""
    joined = "\n".join(choices)
    if _maybe()[2].search("\n" + joined) is not None:
        return True
    every, ascii_only = _line_starts()
    if joined.isascii():
        low, starts = joined.lower(), ascii_only
    else:
        low, starts = unicodedata.normalize("NFKC", joined).casefold(), every
    if _maybe_inside(low) and _tables()[2].search(low) is not None:
        return True
    return starts.search("\n" + low) is not None
