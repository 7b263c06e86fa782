"""Stage 0b, the echo: text of the response that repeats the rendered prompt is not the model's answer
(docs/robust.md, "Commitment"). Read only when the caller gives the prompt (`grade_request`, `grade --prompt`).

A stretch of the response is an echo when it repeats, for at least `MIN_ECHO` characters, the prompt's text
outside its options' texts — the question, the instructions, a format example or placeholder — with any option
letter standing alone in it allowed to differ (a copied placeholder "‹one of A, B, C or D›" with another
letter, "C one of" for "D one of"). The options' texts are left out on purpose: an answer written as its option
line ("B) Paris") repeats the prompt too, and an echoed listing of the options is the listing rules' business.
A stretch does not start with a line that is only a label: that is the model's answer to the prompt's last
question, after which it repeats the prompt's next one (a base model continuing a few-shot prompt).

What is blanked (spaces, one character for one) is an echo that holds letters the model did not choose: a
stretch with labels in it that goes on past them ("ক / খ / গ / ঘ) …", "C one of" for the prompt's "D one
of") is a template, and its letters are not answers. An echo without any label (a passage or the question
quoted in the reasoning, the words of the format before the model's letter: "Answer key: " + "C") is left as it
is, and so is one whose only label closes it (the format's slot, filled: "The answer is (C)" copied from an
instruction that shows "The answer is (X)", "Your answer:\nক) …").

Cost: the prompt's reference (its text outside the options' texts, letters masked) is built once per prompt,
and each `_GRAM`-character piece is looked up in it once (rollouts of one prompt share both); the response is
probed
around each label only (an echo without a label is not blanked), at the label and `_STEP` characters before
it (any echo of `MIN_ECHO` characters that holds the label holds one of the two pieces), and a probe that hits
is extended to the whole stretch: linear in the response.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...labels import LETTERS
from . import phrases
from .labels import DEFAULT_LOCAL
from .text import fold_width

MIN_ECHO = 12  # characters: shorter repeats ("Answer: ") are the format, not an echo
_STEP = 6
_GRAM = (
    MIN_ECHO - _STEP + 1
)  # (a repeat of MIN_ECHO characters holds a piece starting at a multiple of _STEP)
_MAX_POSITIONS = 8  # positions of one piece in the prompt kept for extending a hit
_MASK = "\x01"  # an option letter standing alone, in both texts
_OFF = "\x00"  # the prompt's option lines: never matched
_NATIVE_RE = re.compile("[" + re.escape("".join(sorted(DEFAULT_LOCAL))) + "]")
_KEEP = "\x02"  # the response's own option texts: never matched
_CLOSERS = " \t)]）】.。:*_'\"`’”"


class _Reference(NamedTuple):
    text: str  # the prompt outside its option lines, letters masked
    grams: dict[str, list[int]]  # each _GRAM-character piece looked up so far -> where it starts


_CACHE: dict[tuple[str, tuple[str, ...]], _Reference | None] = {}


def blank_echo(text: str, prompt: str, letters: Mapping[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """`text` with its echoes of `prompt` blanked, and the blanked spans (none: `text` itself)."""
    if len(text) < MIN_ECHO or len(prompt) < MIN_ECHO:
        return text, []
    ref = _reference(prompt, letters)
    if ref is None:
        return text, []
    folded = fold_width(text)
    labels = _labels(folded, letters)
    if not labels:
        return text, []  # (an echo without a label in it is left as it is: nothing to blank)
    masked = _mask_at(folded, labels)
    spans = _echoes(masked, ref, labels)
    if spans:
        masked = _protect(masked, letters)
        spans = _echoes(masked, ref, labels)
    spans = [(a, b) for a, b in spans if not _fills_the_format(masked, a, b)]
    if not spans:
        return text, []
    out = list(text)
    for a, b in spans:
        for i in range(a, b):
            if out[i] not in "\n\r":
                out[i] = " "
    return "".join(out), spans


def _mask(s: str) -> str:
    return _mask_at(s, _labels(s, LETTERS, native=False))  # (the prompt's side: every letter)


def _labels(s: str, letters: Any, *, native: bool = True) -> list[int]:
    """Where one of `letters` stands alone (no letter or digit of any script beside it), and, with `native`, a
    label of another script (no letter or mark of its script beside it)."""
    out = []
    n = len(s)
    for c in letters:
        if not (isinstance(c, str) and len(c) == 1 and "A" <= c <= "Z"):
            continue
        k = s.find(c)
        while k >= 0:
            if (k == 0 or not s[k - 1].isalnum()) and (k + 1 == n or not s[k + 1].isalnum()):
                out.append(k)
            k = s.find(c, k + 1)
    if native and not s.isascii():
        out.extend(m.start() for m in _NATIVE_RE.finditer(s) if _is_label(s, m.start()))
    out.sort()
    return out


def _mask_at(s: str, positions: list[int]) -> str:
    out = list(s)
    for k in positions:
        if s[k] < "\x80":
            out[k] = _MASK
    return "".join(out)


def _protect(masked: str, letters: Mapping[str, Any]) -> str:
    """The response with each option's text in it (in any case) out of reach: the model's answer may repeat
    words the passage holds too."""
    low = masked.lower()
    spans = []
    for t in letters.values():
        if not isinstance(t, str) or len(t.strip()) < 3:
            continue
        ot = _mask(fold_width(t.strip())).lower()
        k = low.find(ot)
        while k >= 0:
            spans.append((k, k + len(ot)))
            k = low.find(ot, k + len(ot))
    if not spans:
        return masked
    out = list(masked)
    for a, b in spans:
        out[a:b] = _KEEP * (b - a)
    return "".join(out)


def _reference(prompt: str, letters: Mapping[str, Any]) -> _Reference | None:
    texts = tuple(
        fold_width(t.strip()) for t in letters.values() if isinstance(t, str) and len(t.strip()) >= 3
    )
    key = (prompt, texts)
    if key in _CACHE:
        return _CACHE[key]
    if len(_CACHE) > 64:
        _CACHE.clear()
    ref_text = fold_width(prompt)
    for t in texts:  # (the options' texts, wherever the prompt lists them: never an echo)
        ref_text = ref_text.replace(t, _OFF * len(t))
    ref_text = _mask(ref_text)
    ref = _Reference(ref_text, {}) if ref_text.strip(_OFF + " \t\r\n") else None
    _CACHE[key] = ref
    return ref


def _positions(ref: _Reference, gram: str) -> list[int]:
    """Where `gram` occurs in the reference (at most _MAX_POSITIONS places), looked up once per prompt."""
    found = ref.grams.get(gram)
    if found is None:
        if len(ref.grams) > 4096:
            ref.grams.clear()
        found = []
        k = ref.text.find(gram)
        while k >= 0 and len(found) < _MAX_POSITIONS:
            found.append(k)
            k = ref.text.find(gram, k + 1)
        ref.grams[gram] = found
    return found


def _echoes(masked: str, ref: _Reference, labels: list[int]) -> list[tuple[int, int]]:
    """The stretches of `masked` of MIN_ECHO characters or more that occur in the reference and hold one of the
    `labels` positions, in order. Probes start at p - _STEP and p for each label p: a stretch [a, b) that holds
    p and is MIN_ECHO long holds the piece at p - _STEP when a <= p - _STEP, else the one at p."""
    out: list[tuple[int, int]] = []
    n = len(masked)
    rt = ref.text
    probes = sorted({s for p in labels for s in (p - _STEP, p) if 0 <= s <= n - _GRAM})
    for i in probes:
        if out and i < out[-1][1]:
            continue
        positions = _positions(ref, masked[i : i + _GRAM])
        if not positions:
            continue
        best = (0, 0)
        for p in positions:
            a, q = i, p
            while a > 0 and q > 0 and masked[a - 1] == rt[q - 1] and (not out or a > out[-1][1]):
                a -= 1
                q -= 1
            b, r = i + _GRAM, p + _GRAM
            while b < n and r < len(rt) and masked[b] == rt[r]:
                b += 1
                r += 1
            if b - a > best[1] - best[0]:
                best = (a, b)
        a, b = _after_own_line(masked, *best)
        if b - a >= MIN_ECHO:
            out.append((a, b))
    return out


def _after_own_line(masked: str, a: int, b: int) -> tuple[int, int]:
    """The stretch without a first line that is only a label: the model's answer to the prompt's last question,
    after which it repeats the prompt's next one ("B" / "Question: …" copied from a few-shot prompt)."""
    nl = masked.find("\n", a, b)
    if (
        nl > a
        and sum(_is_label(masked, k) for k in range(a, nl)) == 1
        and not masked[a:nl].strip(_CLOSERS + "([（【" + _MASK)
        and len(masked[a:nl].strip(_CLOSERS + "([（【")) == 1
    ):
        return nl + 1, b
    return a, b


def _fills_the_format(masked: str, a: int, b: int) -> bool:
    """The echoed stretch masked[a:b] is no template with letters: it holds no label at all (a passage or
    question quoted in the reasoning, the words of the format before the model's letter: "Answer key: C"), or
    its only label closes it (the format's slot, filled: "The answer is (C)", "Your answer:\nক) …")."""
    inside = [k for k in range(a, b) if _is_label(masked, k)]
    if not inside:
        return True
    return len(inside) == 1 and not masked[inside[0] + 1 : b].strip(_CLOSERS)


def _is_label(s: str, k: int) -> bool:
    """s[k] is an option letter standing alone (masked) or a label of another script with no letter beside it."""
    c = s[k]
    if c == _MASK:
        return True
    if c not in DEFAULT_LOCAL:
        return False
    return not (k > 0 and _wordish(s[k - 1])) and not (k + 1 < len(s) and _wordish(s[k + 1]))


def _wordish(ch: str) -> bool:
    """A letter or a combining mark (a vowel sign): next to a label, it makes the label part of a word."""
    return ch.isalpha() or (ch > "\u02ff" and unicodedata.category(ch)[0] == "M")


# A header opening a line of the prompt ("Question: …", "### প্রশ্ন:", "سؤال: …", "问题:"): its words, what follows.
_HEADER_RE = re.compile(r"[ \t]*(?:[#>*_=-]+[ \t]*)*([^\W\d_][^:：\n]{0,30}?)[ \t]*\d*[ \t]*[:：](.*)")
_ANSWER_WORDS = tuple(
    w.lower() for w in (*phrases.ANSWER_NOUNS, *(a.word for a in phrases.ANCHORS_OTHER_LANGUAGES))
)
_HEADERS: dict[tuple[str, tuple[str, ...]], re.Pattern[str] | None] = {}


def question_headers(prompt: str, letters: Mapping[str, Any]) -> re.Pattern[str] | None:
    """A pattern for a response line that opens with the header the prompt puts before its question ("سؤال:",
    "### প্রশ্ন:", "问题:"): such a line in the response starts another question (an invented next one, or the
    prompt's own few-shot format continued), as "Question:" does. The header is the nearest one above the
    options' listing that introduces question text (on its line, or on lines between it and the listing), not
    the listing's own ("Options:", "### বিকল্প:"); a header that is an answer word
    is none, and so is one of more than one word (the question's own words before a colon: "Ali says: …").
    None when the prompt shows no such header."""
    texts = tuple(t.strip() for t in letters.values() if isinstance(t, str) and t.strip())
    key = (prompt, texts)
    if key in _HEADERS:
        return _HEADERS[key]
    if len(_HEADERS) > 64:
        _HEADERS.clear()
    lines = fold_width(prompt).split("\n")
    listed = [any(t in line and len(line.strip()) - len(t) <= 12 for t in texts) for line in lines]
    found: set[str] = set()
    for i, is_option in enumerate(listed):
        if not is_option or (i > 0 and listed[i - 1]):
            continue
        question = False  # (a line of question text stands between the header and the listing)
        for j in range(i - 1, max(-1, i - 12), -1):
            m = _HEADER_RE.fullmatch(lines[j])
            if m is None:
                question = question or bool(lines[j].strip())
                continue
            if not m.group(2).strip() and not question:
                continue  # (the listing's own header, "Options:", or a question ending with a colon)
            word = m.group(1).strip().lower()
            if 1 < len(word) <= 16 and " " not in word and not any(w in word for w in _ANSWER_WORDS):
                found.add(word)
            break
    pattern = None
    if found:
        words = "|".join(re.escape(w) for w in sorted(found, key=len, reverse=True))
        pattern = re.compile(
            r"\n[ \t]*(?:[#>*_=-]+[ \t]*)*(?:" + words + r")[ \t]*\d*[ \t]*[:：]", re.IGNORECASE
        )
    _HEADERS[key] = pattern
    return pattern
