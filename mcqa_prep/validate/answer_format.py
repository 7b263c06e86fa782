"""What a prompt asks the model to write, read from the prompt itself: its answer-format examples, and the
template markers that were never rendered.

An answer-format example is a short span of the prompt that shows the answer line with one *slot* for the
letter: a placeholder (`X`, `LETTER`, `$LETTER`, `<letter>`, `[the_answer_letter]`), a list of the letters
(`A/B/C/D`, `A, B, C or D`), one option letter (`'Answer: A'`, `\\boxed{D}`) or an empty box (`\\boxed{}`).
Examples are found where prompts put them: quoted (`'...'`, `"..."`, `“...”`, backticks, `「...」`), after an
introducer (`format:`, `write:`, `with:`, `e.g.`), or as a bare `\\boxed{}`; a quoted span counts only when it
names the answer or stands after a format cue, and only with exactly one slot. `fill(example, letter)` is the
response a model writes when it follows the example with that letter.

`unrendered(prompt)` finds what a template engine left behind: `{{ ... }}` around a letter, a list of letters,
a placeholder or a variable name (`\\boxed{{D}}`, `{{Question}}`), Jinja statements and comments, and the
`str.format` fields of common template variables (`{problem}`, `{question}`, `{letter}`...). Doubled braces
in LaTeX (`x^{{2}}`, `\\frac{a}{{b}}`) are not markers.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import NamedTuple

# ------------------------------------------------------------------------------------------- unrendered

# str.format / f-string fields of variables that prompt templates use (a single letter is LaTeX: \mathbf{A})
_FIELDS = (
    "problem|question|questions|options|choices|choice|letter|letters|context|subject|passage|article|"
    "options_block|letters_slash|letters_comma|first_letter|last_letter|n_options|answer_choices|"
    "choice[1-9]|option[1-9]|option_[a-j]|choice_[a-j]"
)
# one leading literal brace: the engine scans for '{' at C speed and tries the alternatives only there
_UNRENDERED = re.compile(
    r"\{(?:"
    r"(?P<double>\{[ \t]*(?:[A-Za-z_][\w.]*|[A-Z](?:[ \t]*[/,|][ \t]*[A-Z])+|\$[A-Z]+|<[^<>{}\n]{1,30}>)[ \t]*\}\})"
    r"|(?P<stmt>%-?[ \t]*(?:if|for|endif|endfor|else|elif|set|include|macro|raw|block|endblock)\b)"
    r"|(?P<comment>#[^\n]{0,80}?#\})"
    rf"|(?P<field>(?:{_FIELDS})\}})"
    r")"
)
# what may stand right before `{{` in LaTeX: a sub/superscript, a closing brace (\frac{a}{{b}}), a command
_LATEX_BEFORE = re.compile(r"(?:[\^_}]|\\[A-Za-z]+)\Z")
_BOX_COMMANDS = ("\\boxed", "\\fbox")  # a doubled brace after these is the str.format leftover of a box


class Marker(NamedTuple):
    at: int
    text: str
    kind: str  # "double", "stmt", "comment", "field"


def unrendered(prompt: str) -> list[Marker]:
    """Unrendered template markers in `prompt`, in order (empty when there is no brace at all)."""
    if "{" not in prompt:
        return []
    out: list[Marker] = []
    for m in _UNRENDERED.finditer(prompt):
        kind = m.lastgroup or "double"
        if kind == "double":
            before = prompt[max(0, m.start() - 12) : m.start()]
            latex = _LATEX_BEFORE.search(before)
            if latex is not None and not before.endswith(_BOX_COMMANDS):
                continue
        out.append(Marker(m.start(), m.group(0), kind))
    return out


# ------------------------------------------------------------------------------------------- examples

# quotation marks and what closes each; a quoted example is at most 80 characters on one line
_CLOSING = {"'": "'", '"': '"', "“": "”", "‘": "’", "`": "`", "「": "」", "«": "»"}
# an introducer right before a colon ("write: Option Selected: X", "format: Answer: X")
_INTRODUCERS = ("format", "write", "with", "as follows", "like this", "for example", "example", "e.g.")
_INTRO_LAST = frozenset(w[-1] for w in _INTRODUCERS) | frozenset(w[-1].upper() for w in _INTRODUCERS)
# the characters a quoted candidate starts at (found with str.find: memchr speed; a regex character class
# scans ~100x slower)
_HOT_ASCII = ("'", '"', "`")
_HOT = (*_HOT_ASCII, "“", "‘", "「", "«")


def _positions(text: str, chars: tuple[str, ...]) -> list[int]:
    out: list[int] = []
    for ch in chars:
        i = text.find(ch)
        while i >= 0:
            out.append(i)
            i = text.find(ch, i + 1)
    out.sort()
    return out


_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n")
_SLOT = re.compile(
    r"(?P<list>\b[A-Z](?:[ \t]*(?:/|\||,|, or|,? or)[ \t]*[A-Z]\b){2,})"
    r"|(?P<ph>\$?\bLETTER\b|<[^<>\n]{0,24}(?i:letter|answer|option|choice)[^<>\n]{0,24}>"
    r"|\[[^\[\]\n]{0,24}(?i:letter|answer|option|choice)[^\[\]\n]{0,24}\]|\bX\b|\$X\b)"
    r"|(?P<one>(?<![A-Za-z'’])[A-Z](?![A-Za-z'’]))"
    r"|(?P<box>(?<=\\boxed\{)\}|(?<=\\boxed\{\{)\}\})"
)
_ANSWER_CUE = re.compile(
    r"(?i:answer|choice|option|final|select|boxed|letter|response|verdict|solution|correct)|答|选|回答|정답|답"
)
_FORMAT_CUE = re.compile(
    r"(?i:\b(?:format|write|conclude|end with|end your|finish|e\.g\.|for example|respond|reply|output|"
    r"last line|final line|put|enclose|wrap|as follows|in the form)\b)|格式|形式|写"
)


class Example(NamedTuple):
    """One answer-format example: its text as the prompt shows it, where it stands, the slot's span in it."""

    text: str
    at: int
    slot: tuple[int, int]
    kind: str  # "list", "ph" (placeholder), "one" (an option letter), "box" (empty \boxed{})

    def fill(self, letter: str) -> str:
        """The answer a model writes when it follows this example with `letter`."""
        a, b = self.slot
        if self.kind == "box":
            return self.text[:a] + letter + self.text[a:]
        return self.text[:a] + letter + self.text[b:]

    def shown_letter(self) -> str | None:
        """The option letter the example itself shows ('Answer: A'), else None."""
        return self.text[self.slot[0]] if self.kind == "one" else None


def _slots(text: str) -> list[tuple[str, int, int]]:
    out = []
    for m in _SLOT.finditer(text):
        kind = m.lastgroup or "one"
        a, b = m.span()
        if kind == "box":
            b = a  # an empty box: the letter goes between the braces
            a = b
        out.append((kind, a, b))
    return out


@functools.lru_cache(maxsize=4096)
def _shape(text: str) -> tuple[tuple[int, int], str, bool] | None:
    """(slot span, slot kind, names the answer) of a stripped candidate, or None when it is not an answer line
    (cached: the candidates of a template's rows are the same few texts)."""
    if not text or len(text) > 80:
        return None
    slots = _slots(text)
    if not slots:
        return None
    if len(slots) > 1:
        # a list or a placeholder beside single letters that belong to it ('X' of 'where X is'): keep the
        # strongest slot when it is the only one of its kind; otherwise the span is prose, not an example
        for strong in ("box", "list", "ph"):
            picked = [s for s in slots if s[0] == strong]
            if len(picked) == 1:
                slots = picked
                break
        else:
            return None
    kind, a, b = slots[0]
    rest = (text[:a] + text[b:]).strip(" \t'\"$*_()[]{}<>:.")
    if kind != "box" and not any(ch.isalnum() for ch in rest):
        return None  # the slot alone ('X', '(A)'): not an answer line
    return (a, b), kind, kind != "one" and _ANSWER_CUE.search(text) is not None


def _example(text: str, at: int, need_cue: bool, prompt: str) -> Example | None:
    stripped = text.strip()
    shape = _shape(stripped)
    if shape is None:
        return None
    slot, kind, names_answer = shape
    at += len(text) - len(text.lstrip())
    # a quoted span is an example when a format cue stands just before it, or when it names the answer around a
    # placeholder, a list of letters or a box (a quoted 'Plan B' in a question is neither)
    if need_cue and not names_answer and _FORMAT_CUE.search(prompt, max(0, at - 100), at) is None:
        return None
    return Example(stripped, at, slot, kind)


def _candidates(prompt: str):
    """(text, position, quoted) of each candidate example, left to right: a quoted span (one line, 1-80
    characters), or the rest of a line after an introducer and a colon ("write: Option Selected: X")."""
    out: list[tuple[str, int, bool]] = []
    pos = 0
    ascii_ = prompt.isascii()
    for i in _positions(prompt, _HOT_ASCII if ascii_ else _HOT):
        a = i + 1
        if a <= pos:
            continue
        b = prompt.find(_CLOSING[prompt[i]], a, a + 81)
        if b <= a or "\n" in prompt[a:b]:
            continue
        pos = b + 1
        out.append((prompt[a:b], a, True))
    # introducers: each colon (single-character finds are memchr-fast; a word search is not) is checked by
    # the two characters before it, which tell the usual option label ('A: ...') from a word; a colon in
    # the first two characters has no word before it
    for colon in (":",) if ascii_ else (":", "："):
        i = prompt.find(colon, 2)
        while i >= 0:
            j = i
            c = prompt[i - 1]
            if c not in _INTRO_LAST:  # the usual case, settled by one character
                if c != " " and c != "\t":
                    i = prompt.find(colon, i + 1)
                    continue
                while j and prompt[j - 1] in " \t":
                    j -= 1
            if j > 1 and prompt[j - 1] in _INTRO_LAST and prompt[j - 2].isalpha():
                pre = prompt[max(0, j - 12) : j].lower()
                word = next((w for w in _INTRODUCERS if pre.endswith(w)), None)
                if word is not None and not pre[-len(word) - 1 : -len(word)].isalnum():
                    out.extend((text, at, False) for text, at in _after_colon(prompt, i + 1))
            i = prompt.find(colon, i + 1)
    return out


def _after_colon(prompt: str, a: int):
    while a < len(prompt) and prompt[a] in " \t":
        a += 1
    if a >= len(prompt) or prompt[a] in _CLOSING:
        return  # a quoted example: _quoted reads it
    end = _SENTENCE_END.search(prompt, a, a + 81)
    b = end.start() if end is not None else min(len(prompt), a + 80)
    body = prompt[a:b].rstrip()
    if body and "\n" not in body and not any(q in body for q in _CLOSING):
        yield body, a


def examples(prompt: str) -> tuple[Example, ...]:
    """The answer-format examples of a prompt, in order of position, each once."""
    found: dict[tuple[int, str], Example] = {}
    for text, at, quoted in _candidates(prompt):
        ex = _example(text, at, quoted, prompt)
        if ex is not None and (
            quoted or not any(e.at <= ex.at < e.at + len(e.text) + 2 for e in found.values())
        ):
            found[(ex.at, ex.text)] = ex
    at = prompt.find("\\boxed{}")
    while at >= 0:
        if not found or not any(e.at <= at < e.at + len(e.text) for e in found.values()):
            found[(at, "\\boxed{}")] = Example("\\boxed{}", at, (7, 7), "box")
        at = prompt.find("\\boxed{}", at + 1)
    if len(found) < 2:
        return tuple(found.values())
    return tuple(sorted(found.values(), key=_AT))


_AT = operator.itemgetter(1)  # Example.at
