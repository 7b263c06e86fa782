"""Compliant answers synthesised from an output_regex pattern's parse tree, and the lost-backslash check.

`synthesize(pattern, letter)` writes one string the pattern matches with `letter` as the answer (literals as
written, one space for an optional whitespace run where it reads naturally, a lookbehind's text before the
group, backreferences as captured). But a pattern's literal text is not always what a model writes: in
`\\boxed{(\\w)}` the `\\b` is a regex word boundary, so the pattern matches `oxed{B}` and never the `\\boxed{B}` a
model writes. `lost_backslashes` finds such spots (a string or regex escape where a LaTeX command was meant)
and `model_pattern` spells them as the author meant, so the controls can try what a model really writes.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# the parser of `re` (Python 3.11+), used to walk a pattern's structure; private, so not in typeshed
from re import _constants as _c  # type: ignore[attr-defined]
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import NamedTuple


class _Unsupported(Exception):
    """The pattern uses a construct the synthesiser does not model (backreference to an unset group...)."""


# --------------------------------------------------------------------------------------------- synthesis


def parse(pattern: str):
    """The `re` parse tree of a pattern, or None when `re` cannot parse it."""
    try:
        return _sre_parse.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError, ValueError, TypeError):
        return None


_CATEGORY_CHARS = {
    _c.CATEGORY_DIGIT: "0",
    _c.CATEGORY_NOT_DIGIT: "a",
    _c.CATEGORY_SPACE: " ",
    _c.CATEGORY_NOT_SPACE: "a",
    _c.CATEGORY_WORD: "a",
    _c.CATEGORY_NOT_WORD: " ",
    _c.CATEGORY_LINEBREAK: "\n",
    _c.CATEGORY_NOT_LINEBREAK: "a",
}
_CATEGORY_TEST = {
    _c.CATEGORY_DIGIT: str.isdigit,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    _c.CATEGORY_SPACE: str.isspace,
    _c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    _c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    _c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
    _c.CATEGORY_LINEBREAK: lambda ch: ch == "\n",
    _c.CATEGORY_NOT_LINEBREAK: lambda ch: ch != "\n",
}
_NEGATED_CANDIDATES = " x.:a0\n-A"


def _in_set(items, ch: str) -> bool:
    """Whether `ch` is matched by an IN node's items (case-insensitively, as the grader matches)."""
    negate = False
    hit = False
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            hit |= chr(av).lower() == ch.lower()
        elif op is _c.RANGE:
            lo, hi = av
            hit |= any(lo <= ord(x) <= hi for x in {ch, ch.lower(), ch.upper()})
        elif op is _c.CATEGORY:
            test = _CATEGORY_TEST.get(av)
            hit |= bool(test and test(ch))
    return hit != negate


def _set_char(items) -> str:
    """A readable character an IN node accepts."""
    if items and items[0][0] is _c.NEGATE:
        for ch in _NEGATED_CANDIDATES:
            if _in_set(items, ch):
                return ch
        raise _Unsupported("negated set")
    for op, av in items:
        if op is _c.LITERAL:
            return chr(av)
        if op is _c.RANGE:
            return chr(av[0])
        if op is _c.CATEGORY and av in _CATEGORY_CHARS:
            return _CATEGORY_CHARS[av]
    raise _Unsupported("empty set")


def _contains_group(sub) -> bool:
    for op, av in sub:
        if op is _c.SUBPATTERN and av[0] is not None:
            return True
        for child in _children(op, av):
            if _contains_group(child):
                return True
    return False


def _children(op, av) -> list:
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
        return [av[2]]
    if op is _c.SUBPATTERN:
        return [av[3]]
    if op is _c.BRANCH:
        return list(av[1])
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [av[1]]
    if op is getattr(_c, "ATOMIC_GROUP", None):
        return [av]
    if op is _c.GROUPREF_EXISTS:
        return [x for x in av[1:] if x is not None]
    return []


def _is_space_only(sub) -> bool:
    return len(sub) == 1 and sub[0][0] is _c.IN and _in_set(sub[0][1], " ") and not _in_set(sub[0][1], "a")


def _next_is_punct(node) -> bool:
    op, av = node
    try:
        ch = chr(av) if op is _c.LITERAL else _set_char(av) if op is _c.IN else "a"
    except _Unsupported:
        return False
    return not ch.isalnum()


class _Synth:
    """Walks a parse tree and writes one string the pattern matches, with `letter` as the answer."""

    def __init__(self, letter: str, groups: int):
        self.letter = letter
        self.groups = groups
        self.any_char = "x"  # what ANY writes
        self.slot_used = False
        self.captured: dict[int, str] = {}

    def run(self, sub) -> str:
        out: list[str] = []
        items = list(sub)
        for i, (op, av) in enumerate(items):
            if self._optional_space(op, av):
                # one space where it reads naturally ("Answer: C", "ANSWER IS C"), none before punctuation
                nxt = items[i + 1] if i + 1 < len(items) else None
                last = "".join(out)[-1:]
                space = (
                    nxt is not None
                    and not _next_is_punct(nxt)
                    and last != ""
                    and (last.isalnum() or last in ":=)*")
                )
                out.append(" " if space else "")
                continue
            out.append(self.node(op, av))
        return "".join(out)

    @staticmethod
    def _optional_space(op, av) -> bool:
        return op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] == 0 and _is_space_only(av[2])

    def node(self, op, av) -> str:
        if op is _c.LITERAL:
            return chr(av)
        if op is _c.NOT_LITERAL:
            return " " if chr(av) != " " else "x"
        if op is _c.ANY:
            return self.any_char
        if op is _c.IN:
            if self.groups == 0 and not self.slot_used and _in_set(av, self.letter):
                self.slot_used = True
                return self.letter
            return _set_char(av)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
            lo, _hi, sub = av
            n = lo
            if n == 0 and _contains_group(sub):
                n = 1
            if n > 50:
                raise _Unsupported("long repeat")
            return "".join(self.run(sub) for _ in range(n))
        if op is _c.SUBPATTERN:
            group, _add, _del, sub = av
            if group is not None and group == 1 and not self.slot_used:
                self.slot_used = True
                text = self.letter
            else:
                text = self.run(sub)
            if group is not None:
                self.captured[group] = text
            return text
        if op is _c.BRANCH:
            alts = av[1]
            pick = next((a for a in alts if _contains_group(a)), alts[0])
            if self.groups == 0:
                pick = next((a for a in alts if self._accepts_letter(a)), pick)
            return self.run(pick)
        if op is _c.AT:
            return ""
        if op is _c.ASSERT:
            direction, sub = av
            # a lookbehind names text that must come before: write it; a lookahead is left to what follows
            return self.run(sub) if direction < 0 else ""
        if op is _c.ASSERT_NOT:
            return ""
        if op is getattr(_c, "ATOMIC_GROUP", None):
            return self.run(av)
        if op is _c.GROUPREF:
            if av not in self.captured:
                raise _Unsupported("backreference")
            return self.captured[av]
        raise _Unsupported(str(op))

    def _accepts_letter(self, sub) -> bool:
        return any(op is _c.IN and _in_set(av, self.letter) for op, av in sub)


def synthesize(pattern: str, letter: str) -> str | None:
    """A string written in the pattern's own format with `letter` as the answer, or None if the pattern's
    structure is beyond this walker. The result is a candidate only: the grader decides whether it scores."""
    tree = parse(pattern)
    if tree is None:
        return None
    groups = tree.state.groups - 1
    if groups > 1:
        return None
    try:
        synth = _Synth(letter, groups)
        out = synth.run(tree)
        items = list(tree)
        if items and items[-1][0] is _c.ASSERT and items[-1][1][0] > 0:
            # a trailing lookahead names text that must follow the answer (`(.*)(?=.)`): write it, with a
            # period for "any character" (what ends a sentence)
            synth.any_char = "."
            out += synth.run(items[-1][1][1])
    except (_Unsupported, RecursionError, ValueError, OverflowError):
        return None
    return out if out.strip() else None


# --------------------------------------------------------------------------------------------- lost backslash

# LaTeX commands that answer formats use and whose first letter is also an escape (\a \b \f \n \r \t \v):
# written without a doubled backslash, the escape eats the backslash and the first letter.
LATEX_COMMANDS = frozenset(
    "boxed bf beta text textbf textit textrm texttt textsf times theta tau frac fbox fcolorbox neq nabla "
    "newline not rm rho right rightarrow vec varepsilon alpha approx".split()
)
# control characters that a string escape turns these letters into (JSON and non-raw Python strings)
ESCAPED_CHARS = {"\x07": "a", "\x08": "b", "\x0c": "f", "\n": "n", "\r": "r", "\t": "t", "\x0b": "v"}
_WORD = re.compile(r"[A-Za-z]*")


class LostBackslash(NamedTuple):
    """One spot where a backslash was lost: at `pos`, `found` stands where `meant` (e.g. '\\boxed') was."""

    pos: int
    found: str  # 'the regex escape \\b' or 'a backspace (U+0008)'
    meant: str
    size: int  # characters of the pattern it spans before the rest of the command


@functools.lru_cache(maxsize=4096)
def lost_backslashes(pattern: str) -> tuple[LostBackslash, ...]:
    """Regex escapes (`\\b` of `\\boxed`, `\\t` of `\\text`) and escaped control characters (a backspace
    before `oxed`) that stand where a LaTeX command in LATEX_COMMANDS was meant."""
    out: list[LostBackslash] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            esc = pattern[i + 1]
            word = esc + _WORD.match(pattern, i + 2).group(0)  # type: ignore[union-attr]
            if esc in "abfnrtv" and word in LATEX_COMMANDS:
                out.append(LostBackslash(i, f"the regex escape \\{esc}", "\\" + word, 2))
            i += 2
            continue
        letter = ESCAPED_CHARS.get(ch)
        if letter is not None:
            word = letter + _WORD.match(pattern, i + 1).group(0)  # type: ignore[union-attr]
            if word in LATEX_COMMANDS:
                out.append(LostBackslash(i, f"the control character U+{ord(ch):04X}", "\\" + word, 1))
        i += 1
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def model_pattern(pattern: str) -> str:
    """The pattern with each lost backslash spelled as meant (a literal backslash and the letter)."""
    out = pattern
    for lb in reversed(lost_backslashes(pattern)):
        out = out[: lb.pos] + "\\\\" + lb.meant[1] + out[lb.pos + lb.size :]
    return out


def explain_lost(pattern: str) -> str:
    """A sentence on the first lost backslash of the pattern, or ''."""
    lbs = lost_backslashes(pattern)
    if not lbs:
        return ""
    lb = lbs[0]
    meant = lb.meant
    return (
        f" {lb.found} at character {lb.pos} stands where {meant!r} was meant: "
        + ("a regex escape (\\b is a word boundary, \\t a tab) " if lb.size == 2 else "a string escape ")
        + f"ate the backslash; escape it (\\\\{meant[1:]} in the pattern: a raw string r'\\\\{meant[1:]}' in "
        f'Python, "\\\\\\\\{meant[1:]}" in JSON)'
    )


# characters no model response holds: C0/C1 controls but tab/newline/carriage return, DEL, format characters
# (zero-width, BOM, bidi), and spaces other than ' ' (Zs, line and paragraph separators)
_CONTROL_NAMES = {
    0x00: "NUL",
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0B: "VERTICAL TAB",
    0x0C: "FORM FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
}


def describe_char(ch: str) -> str:
    """'U+0008 (BACKSPACE)'."""
    name = _CONTROL_NAMES.get(ord(ch)) or unicodedata.name(ch, "a control character")
    return f"U+{ord(ch):04X} ({name})"


def odd_char(ch: str) -> bool:
    """A character no model response holds, so a pattern requiring it never matches."""
    if ch in "\t\n\r ":
        return False
    cat = unicodedata.category(ch)
    return cat in ("Cc", "Cf", "Zl", "Zp") or cat == "Zs"


@functools.lru_cache(maxsize=4096)
def odd_chars(pattern: str) -> tuple[tuple[int, str], ...]:
    """(position, character) of each odd character in a pattern, and of each tab / newline / carriage
    return that stands for the first letter of a LaTeX command (a TAB before 'ext': the \\t of \\text)."""
    out = [(i, ch) for i, ch in enumerate(pattern) if odd_char(ch)]
    out += [
        (lb.pos, pattern[lb.pos])
        for lb in lost_backslashes(pattern)
        if lb.size == 1 and pattern[lb.pos] in "\t\n\r"
    ]
    return tuple(sorted(out))


def lost_hint(text: str, pos: int) -> str:
    """' (probably \\frac with a lost backslash: ...)' for an escaped control character at text[pos]."""
    letter = ESCAPED_CHARS.get(text[pos])
    if letter is None:
        return ""
    word = letter + _WORD.match(text, pos + 1).group(0)  # type: ignore[union-attr]
    return (
        f" (probably {chr(92) + word!r} with a lost backslash: '\\{letter}' in a JSON or non-raw Python string "
        "is this control character)"
    )
