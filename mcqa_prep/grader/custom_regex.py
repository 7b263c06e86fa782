"""Custom answer regexes from `template_metadata.output_regex` (grading.md, "Custom regex").

Patterns come from datasets, so they are untrusted: one call (all of a row's patterns together) runs under
one time bound, so a catastrophic pattern costs a `regex_timeout` status instead of a hung run, in every
command and for every caller of the grader. Patterns run on the third-party `regex` engine with its
`timeout=`. NeMo Gym runs them on Python's `re`; `regex` (VERSION0) agrees with `re` except on a few
documented points, and where one of those can change the result for a given pattern and text, that call runs
on `re` instead (see `CompiledPattern.engine_for`), under the same bound (`bounded.last_match_re`). Which
patterns compile at all is decided by `re`, as in NeMo Gym.

Each distinct pattern is compiled once and kept in a bounded cache.
"""

from __future__ import annotations

import re
import time
import unicodedata
import warnings
from collections.abc import Mapping
from typing import Any

import regex

from ..records import (
    STATUS_INVALID_REGEX,
    STATUS_NO_ANSWER,
    STATUS_OK,
    STATUS_OUT_OF_RANGE,
    STATUS_REGEX_TIMEOUT,
    Candidate,
)
from .base import Extraction
from .bounded import Spans, last_match_re
from .letters import LOCALISED, letter_for_text

RULE = "output_regex"
CACHE_MAX = 4096

# Localised letters -> " A".."D", space-prefixed as NeMo Gym does (it matters when the letter is glued to
# a word, e.g. in Arabic script). Full-width A-D need no entry: NFKC has already mapped them.
LOCALISED_SPACED = str.maketrans({k: " " + v for k, v in LOCALISED.items()})

# Where `regex` VERSION0 and `re` disagree (checked over every code point with this regex release):
#  * \s: re also matches U+001C..U+001F;
#  * \w / \b / \d: Unicode tables differ (combining marks, superscript digits, newer scripts);
#  * IGNORECASE: re lets ASCII letters and classes such as [A-J] match U+0130/U+0131 (dotted capital I,
#    dotless i), regex does not (the only two code points where single letters/classes differ);
#  * syntax re reads literally but regex does not: POSIX classes `[[:alpha:]]`, fuzzy `{e<=1}`.


def _has_separator_controls(text: str) -> bool:
    # four memchr scans are ~50x faster than a character-class search with re
    return "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text


_RE_WORD = re.compile(r"\w")
_RX_WORD = regex.compile(r"\w", regex.V0)
_RE_DIGIT = re.compile(r"\d")
_RX_DIGIT = regex.compile(r"\d", regex.V0)

# The code points that `\w` (resp. `\d`) classifies differently in the two engines, found on first use in a
# process (both engines run over every non-ASCII code point once, in blocks, ~0.1 s; ASCII never differs). Both
# classes are single code points, so the engines agree on a text exactly when the text holds none of them:
# one C-level search of a class of the differing BMP code points (re keeps a BMP class as a bitmap), plus a
# set lookup of the text's astral characters, instead of two substitutions over the whole text per call.
_DIFFERING: dict[str, tuple[re.Pattern[str], frozenset[str]]] = {}
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _differing(kind: str, rx: Any, rex: re.Pattern[str]) -> tuple[re.Pattern[str], frozenset[str]]:
    hit = _DIFFERING.get(kind)
    if hit is None:
        differ: list[str] = []
        for lo in (*range(0x80, 0xD800, 0x800), *range(0xE000, 0x110000, 0x800)):
            block = "".join(map(chr, range(lo, min(lo + 0x800, 0xD800 if lo < 0xD800 else 0x110000))))
            a, b = rx.sub("\0", block), rex.sub("\0", block)
            if a != b:  # most blocks agree whole: compared at C speed
                differ += [ch for ch, x, y in zip(block, a, b, strict=True) if x != y]
        bmp = "".join(f"\\u{ord(ch):04x}" for ch in differ if ch < "\U00010000")
        hit = (
            re.compile(f"[{bmp}]" if bmp else "(?!)"),
            frozenset(ch for ch in differ if ch >= "\U00010000"),
        )
        _DIFFERING[kind] = hit
    return hit


def _differs(text: str, tables: tuple[re.Pattern[str], frozenset[str]]) -> bool:
    bmp, astral = tables
    if bmp.search(text) is not None:
        return True
    return bool(astral) and any(ch in astral for ch in _ASTRAL.findall(text))


def _word_differs(text: str) -> bool:
    r"""Whether `\w` (and so `\b`) reads some character of `text` differently in `regex` and `re`."""
    return _differs(text, _differing("w", _RX_WORD, _RE_WORD))


def _digit_differs(text: str) -> bool:
    r"""Whether `\d` reads some character of `text` differently in `regex` and `re`."""
    return _differs(text, _differing("d", _RX_DIGIT, _RE_DIGIT))


_HAS_I = re.compile("[iI\u0130\u0131]")
_WIDE_ESCAPE = re.compile(r"\\[uUN]")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def _may_name_dotted_i(source: str) -> bool:
    """Whether a pattern may name U+0130 or U+0131 (conservatively: a range with a non-ASCII bound may)."""
    if "\u0130" in source or "\u0131" in source or _WIDE_ESCAPE.search(source) is not None:
        return True
    return not source.isascii() and "[" in source and "-" in source


_REGEX_ONLY_SYNTAX = re.compile(r"\[:\^?[a-z]+:\]|\{[\d\s+*eids]*[eids][\d\s+*eids<=>,]*\}")


class CompiledPattern:
    """One cached pattern: the engines it may run on and which engine differences it can hit."""

    __slots__ = (
        "source",
        "rx",
        "re",
        "groups",
        "error",
        "word",
        "digit",
        "space",
        "names_dotted_i",
        "backref",
        "dotted_i_as_i",
    )

    def __init__(self, source: Any) -> None:
        self.source = source
        self.rx: Any = None
        self.re: re.Pattern[str] | None = None
        self.groups = 0
        self.error: str | None = None
        self.word = self.digit = self.space = False
        self.names_dotted_i = self.backref = self.dotted_i_as_i = False
        if not isinstance(source, str):
            self.error = f"output_regex pattern must be a string, got {type(source).__name__}"
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.re = re.compile(source, re.IGNORECASE)
        except Exception as exc:  # re.error, but also ValueError (e.g. the LOCALE flag), RecursionError
            self.error = f"pattern {source!r} does not compile: {exc}"
            return
        self.groups = self.re.groups
        if not _REGEX_ONLY_SYNTAX.search(source):
            try:
                self.rx = regex.compile(source, regex.IGNORECASE | regex.V0)
            except Exception:
                self.rx = None  # re compiles it but regex cannot: run it on re
        escapes = set(re.findall(r"\\(.)", source, re.DOTALL))
        self.word = bool(escapes & {"w", "W", "b", "B"})
        self.digit = bool(escapes & {"d", "D"})
        self.space = bool(escapes & {"s", "S"})
        # Under IGNORECASE, re takes U+0130 and U+0131 for I and i, both ways, and regex does not. A pattern
        # that may name either (literally, by a \u/\U/\N escape, or in a range of non-ASCII bounds) runs on
        # re wherever the text has an i in any form. A pattern that cannot name them and compares no two
        # matched texts (no backreference) can tell U+0130 from I and U+0131 from i in no other way, so on
        # the text with those two mapped to I and i, regex answers as re does on the text itself, at the
        # same offsets (one code point for one).
        self.names_dotted_i = _may_name_dotted_i(source)
        # a backreference compares two matched texts, and the engines fold some pairs differently there
        # (S and U+017F): on non-ASCII text such a pattern runs on re
        self.backref = _BACKREF.search(source) is not None
        self.dotted_i_as_i = not self.names_dotted_i and not self.backref

    def engine_for(self, text: str) -> tuple[Any, str]:
        """(the compiled object to run, the text to run it on): `regex` unless `re` would answer
        differently; for `regex`, the text with U+0130/U+0131 mapped to I/i when `dotted_i_as_i` allows."""
        rx = self.rx
        if rx is None or (self.names_dotted_i and _HAS_I.search(text) is not None):
            return self.re, text
        if text.isascii():
            if self.space and _has_separator_controls(text):
                return self.re, text
            return rx, text
        if self.backref:
            return self.re, text
        if self.dotted_i_as_i:
            # str.replace returns the string itself when the character is absent: each call is one pass that
            # looks for it and maps it where present (str.translate: 20x slower)
            subject = text.replace("\u0131", "i").replace("\u0130", "I")
        elif "\u0130" in text or "\u0131" in text:
            return self.re, text
        else:
            subject = text
        if self.space and _has_separator_controls(text):
            return self.re, text
        if self.word and _word_differs(text):
            return self.re, text
        if self.digit and _digit_differs(text):
            return self.re, text
        return rx, subject

    def last_match(self, text: str, seconds: float | None) -> Spans | None:
        """The last match in `text` (NeMo Gym takes the last findall item) as (span of the capture group, or of
        the match without a group; span of the match), None without a match. With `seconds`, a TimeoutError
        past it on either engine: `regex` by its own timeout, `re` by `bounded.last_match_re`."""
        group = 1 if self.groups == 1 else 0
        if seconds is not None and seconds <= 0:
            raise TimeoutError
        engine, subject = self.engine_for(text)
        if seconds is None:
            last = None
            for last in engine.finditer(subject):  # noqa: B007
                pass
            return None if last is None else (last.span(group), last.span(0))
        if engine is self.rx:
            last = None
            for last in engine.finditer(subject, timeout=seconds):  # noqa: B007
                pass
            return None if last is None else (last.span(group), last.span(0))
        return last_match_re(engine, subject, group, seconds)


_CACHE: dict[Any, CompiledPattern] = {}


def _entry(source: Any) -> CompiledPattern:
    try:
        hit = _CACHE.get(source)
    except TypeError:  # unhashable (a list inside the list): never cached, always an error
        return CompiledPattern(source)
    if hit is None:
        if len(_CACHE) >= CACHE_MAX:
            del _CACHE[next(iter(_CACHE))]  # oldest first
        hit = _CACHE[source] = CompiledPattern(source)
    return hit


def compile_pattern(p: Any) -> tuple[Any | None, str | None, int]:
    """(compiled, error message, capture-group count) for one output_regex pattern, from the cache.

    `compiled` is None exactly when the pattern is not a string or does not compile under `re` (what
    NeMo Gym uses); the message says why. A compiled pattern with two or more groups is returned as
    compiled: the caller decides (grading treats it as a configuration error, NeMo Gym crashes on it).
    """
    e = _entry(p)
    if e.error is not None:
        return None, e.error, 0
    return (e.rx if e.rx is not None else e.re), None, e.groups


def last_match(source: Any, text: str, seconds: float | None) -> Spans | None:
    """The last match of one pattern (from the cache) in `text`, on the engine NeMo Gym's answer needs and
    under `seconds` (TimeoutError past it); ValueError for a pattern that is not usable."""
    e = _entry(source)
    if e.error is not None:
        raise ValueError(e.error)
    return e.last_match(text, seconds)


def normalize_captured(s: str) -> str:
    """Strip, NFKC, localised and full-width letters -> Latin, strip, upper-case (NeMo Gym's order)."""
    if s.isascii():  # NFKC and the localised table leave ASCII as it is (the common capture: one letter)
        return s.strip().upper()
    return unicodedata.normalize("NFKC", s.strip()).translate(LOCALISED_SPACED).strip().upper()


def extract_custom(
    text: str, output_regex: Any, letters: Mapping[str, Any], *, timeout: float | None = 0.5
) -> Extraction:
    """Try each pattern in order (a string; a list; an object's keys, as NeMo Gym iterates it); the last
    match of the first pattern that yields a letter decides.

    Statuses: ok; out_of_range (a captured letter that is not an option, when the row has options: it
    decides the row, as in NeMo Gym, but gives no letter); regex_timeout (decides the row: what the pattern
    would have returned is unknown); invalid_regex (no pattern yielded a letter and some pattern was not
    usable); no_answer.
    """
    if isinstance(output_regex, str):
        patterns: Any = (output_regex,)
    elif isinstance(output_regex, (list, tuple)):
        patterns = output_regex
    elif isinstance(output_regex, Mapping):
        # An object: NeMo Gym iterates it, which yields its keys, in order; the values are ignored.
        patterns = list(output_regex)
    else:
        return Extraction(
            None,
            STATUS_INVALID_REGEX,
            RULE,
            message=f"output_regex must be a string, a list of strings or an object, got {type(output_regex).__name__}",
        )
    errors: list[str] = []
    # One bound per call, over all of its patterns: a list of slow patterns costs no more than one.
    deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
    for i, source in enumerate(patterns):
        e = _entry(source)
        if e.error is not None:
            errors.append(e.error)
            continue
        if e.groups >= 2:
            errors.append(f"pattern {source!r} has {e.groups} capture groups; use one, or (?:...)")
            continue
        try:
            last = e.last_match(text, None if deadline is None else deadline - time.monotonic())
        except TimeoutError:
            return Extraction(
                None, STATUS_REGEX_TIMEOUT, RULE, message=f"pattern {source!r} exceeded {timeout}s"
            )
        except Exception as exc:  # defensive: an engine error on this text counts as an unusable pattern
            errors.append(f"pattern {source!r} failed: {exc}")
            continue
        if last is None:
            continue
        span, whole = last
        if span[0] < 0:  # the group did not take part in the match: findall's '' (NeMo Gym's too)
            span = whole
            captured = ""
        else:  # from the text itself: the subject may spell U+0130/U+0131 as I/i at the same offsets
            captured = normalize_captured(text[span[0] : span[1]])
        rule = RULE if isinstance(output_regex, str) else f"{RULE}[{i}]"
        if len(captured) == 1 and captured.isalpha():
            if captured in letters or not letters:
                return Extraction(captured, STATUS_OK, rule, span)
            # The captured letter rides along as a rejected candidate: when it equals the gold (a row whose
            # gold is not an option either), NeMo Gym rewards it, and reward parity is kept (grading.md).
            return Extraction(
                None,
                STATUS_OUT_OF_RANGE,
                rule,
                span,
                candidates=(Candidate(rule, span, captured, "not one of the options"),),
                message=f"output_regex captured {captured}, which is not one of the options",
            )
        letter = letter_for_text(captured, letters)
        if letter is not None:
            return Extraction(letter, STATUS_OK, rule, span)
    if errors:
        return Extraction(None, STATUS_INVALID_REGEX, RULE, message="; ".join(errors))
    return Extraction(None, STATUS_NO_ANSWER, RULE, message="no output_regex pattern yielded a letter")
