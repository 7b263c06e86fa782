"""The adversarial audit of a custom `output_regex`: answers a careful reader grades as no letter or as another
letter, generated from the regex's own structure, graded under NeMo Gym 0.7.0's exact matching.

A pattern's own answer format is synthesised from its parse tree (synth.synthesize, the positive control's
sample), and where the real grader finds the letter in it splits it into the *anchor* before the letter
(`the answer is `, `Final Choice: `, `\\boxed{`) and what closes it. The probes are written around those:

- `repeat`: a compliant answer, then prose that uses the anchor again with a word after it
  ("...the answer is (B). Note that the answer is a consequence of...");
- `prose`: a compliant answer, then an ordinary sentence ("I checked each option; a quick recount...");
- `enumeration`: a compliant answer, then reasoning that enumerates "(a) ... (b) ...";
- `word`: words in the letter slot ("Answer: because C...", "Final Choice: none of these", "I would pick C");
- `hedge`: two letters ("B or C"); `negation`: "not B, but C"; `range`: a letter outside the options;
- `quote`: a compliant answer, then the prompt's own answer-format example quoted back.

Each probe knows which letters a careful reader accepts (a letter, or none) and where it wrote answer
letters. The probe goes through the real grader (`grade_text` with the row's output_regex and grading
mode): NeMo Gym's flags (IGNORECASE), its lists (patterns tried in order), the last match, the capture group,
the captured text's normalisation. A probe the regex grades to a letter the reader does not accept is a
counterexample. It is an **error** when the letter is an option letter read out of ordinary prose (a word,
the article "a", the pronoun "I", a lettered enumeration, a later repetition of the anchor): the regex
misgrades ordinary English and training gets the wrong reward. Otherwise (a letter the probe wrote as an
answer: a hedge, a negation, a letter outside the options, a quoted example) it is a **warning**.

The audit is a property of (patterns, grading mode, offered letters): it is cached,
so a dataset of 685k rows costs one audit per template and letter set, and it is bounded in time (each
grading call under the regex timeout, the whole audit under a deadline). For a finding, fixes are tried in
order (a case-sensitive option-letter class; then no letter or digit right after it; then nothing but
punctuation up to the end of the line) and the first rewritten pattern that passes this audit and still
grades every compliant answer is named.
"""

from __future__ import annotations

import functools
import json
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..grader import grade_text
from ..labels import LETTERS
from ..records import STATUS_OUT_OF_RANGE, STATUS_REGEX_TIMEOUT
from .synth import synthesize

CACHE_MAX = 1024
FLAGS = "IGNORECASE"  # NeMo Gym 0.7.0 compiles every output_regex pattern with re.IGNORECASE, nothing else
_FALLBACK = ("Answer: {L}", "\\boxed{{{L}}}", "The answer is ({L})", "ANSWER IS {L}", "({L})", "{L}")

# Ordinary words that may follow an anchor mid-sentence, by initial (the letter a loose class reads out of
# them). Lower case, so a case-sensitive letter class is not fooled by them.
_AFTER_ANCHOR = {
    "A": "a consequence of the second premise.",
    "B": "based on the second premise.",
    "C": "clearly the one the data support.",
    "D": "determined by the second premise.",
    "E": "easy to miss at first.",
    "F": "found by elimination.",
    "G": "given by the second law.",
    "H": "hard to pin down without the data.",
    "I": "in line with the second law.",
    "J": "just the definition restated.",
    "K": "key to the whole argument.",
    "L": "likely the intended one.",
    "M": "most likely the intended one.",
    "N": "not obvious at first.",
    "O": "obvious once the units are checked.",
    "P": "probably the intended one.",
    "Q": "quite clear from the data.",
    "R": "rather subtle here.",
    "S": "supported by the data.",
    "T": "the one the data support.",
    "U": "unambiguous here.",
    "V": "very likely the intended one.",
    "W": "worth a second look.",
    "Y": "yet to be confirmed.",
    "Z": "zero in the limit.",
}
# Words in the letter slot, with {Y} where a careful reader finds the answer (None: no answer at all)
_IN_SLOT = (
    ("because {Y} is the only option consistent with the data.", True),
    ("Because {Y} is the only option consistent with the data.", True),
    ("I would pick {Y}.", True),
    ("I think it is {Y}.", True),
    ("a careful reading gives {Y}.", True),
    ("clearly {Y}.", True),
    ("Clearly {Y}.", True),
    ("definitely {Y}.", True),
    ("Definitely {Y}.", True),
    ("based on the data, {Y}.", True),
    ("Based on the data, {Y}.", True),
    ("none of the options fits.", False),
    ("None of the options fits.", False),
    ("all of the options are flawed.", False),
    ("All of the options are flawed.", False),
    ("either one could work.", False),
    ("hard to say.", False),
    ("unclear from the question.", False),
)
_PROSE_ANCHOR = re.compile(r"[\s*_]*[A-Za-z][A-Za-z0-9 '\-,.]*[:：]?[\s*_]*")
_LABEL_NOUNS = frozenset({"option", "options", "choice", "letter", "alternative", "item", "statement"})
_PROSE = "I checked each option again; a quick recount gives the same result."


@dataclass(frozen=True)
class Probe:
    text: str
    accept: frozenset[str | None]  # what a careful reader grades it as (None: no letter)
    kind: str
    ordinary: bool  # ordinary English: a letter read out of it where the reader reads none is an error
    tokens: tuple[int, ...] = ()  # positions of letters the probe wrote as answers
    reader: str = ""  # what the reader reads, for the message


@dataclass(frozen=True)
class Counterexample:
    probe: Probe
    got: str  # the letter the regex yields
    severity: str  # "error" or "warning"
    pattern: int  # index of the pattern that decided (0 for a single pattern)


@dataclass(frozen=True)
class Audit:
    errors: tuple[Counterexample, ...]
    warnings: tuple[Counterexample, ...]
    fix: str | None  # a rewritten pattern that passes (for the first counterexample's pattern), else None
    probes: int
    complete: bool  # False when the deadline stopped it
    # the finding each template's rows get, built once (regex_audit_rules): rows of one template share the audit
    notes: dict[Any, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Anchor:
    """A pattern's own answer split around the letter: `before` + letter + `after`."""

    before: str
    after: str

    def answer(self, letter: str) -> str:
        return self.before + letter + self.after

    @property
    def prose(self) -> bool:
        """The anchor reads as English words that a word may follow ('the answer is ', '**Final Choice:** '):
        not markup ('\\boxed{', '('), not another script ('答案：'), not a label noun ('the answer is option ',
        after which a reader takes even 'a' for a letter)."""
        return _PROSE_ANCHOR.fullmatch(self.before) is not None and not self.label

    @property
    def label(self) -> bool:
        """The anchor ends with a noun that names what follows as a label ('option ', 'choice ', 'letter ')."""
        words = self.before.lower().replace("*", " ").split()
        return (
            bool(words) and words[-1].strip(".,") in _LABEL_NOUNS
        )  # 'Final Choice:' is a field, not a label

    @property
    def latin(self) -> bool:
        """The anchor is written in Latin script ('Answer: ', 'Réponse finale : '): words of its language in
        the letter slot start with letters a Latin letter class reads (English words stand for them). After
        another script ('答案：') a Latin word in the slot is not ordinary text."""
        return all(c.isascii() or not c.isalpha() or "LATIN" in unicodedata.name(c, "") for c in self.before)


def _options(letters: str) -> list[dict[str, str]]:
    return [{L: f"probe choice number {k + 1} ({L.lower()}{L.lower()})"} for k, L in enumerate(letters)]


def _grade(text: str, orx: Any, letters: str, mode: str, timeout: float) -> tuple[str | None, int, int]:
    """(the letter the custom regex decides, where its capture starts, the deciding pattern's index)."""
    res = grade_text(text, _options(letters), "", mode, {"output_regex": orx}, regex_timeout=timeout)
    if res.mode != "output_regex" or res.status == STATUS_REGEX_TIMEOUT:
        return None, -1, 0
    got = res.extracted_answer
    if got is None and res.status == STATUS_OUT_OF_RANGE and res.candidates:
        got = res.candidates[-1].letter
    start = res.span[0] if res.span else -1
    if res.span:
        seg = text[res.span[0] : res.span[1]]
        start += len(seg) - len(seg.lstrip())
    rule = res.rule or ""
    index = int(rule[rule.index("[") + 1 : -1]) if "[" in rule else 0
    return got, start, index


def anchors(patterns: Sequence[str], orx: Any, letters: str, mode: str, timeout: float) -> list[Anchor]:
    """The anchors of every pattern whose own answer (synthesised, else a well-known format) the whole
    output_regex grades to its letter."""
    out: list[Anchor] = []
    probe_letter = letters[len(letters) // 2]
    for p in patterns:
        tried = [synthesize(p, probe_letter)] + [f.format(L=probe_letter) for f in _FALLBACK]
        for sample in tried:
            if not sample:
                continue
            got, start, _ = _grade(sample, orx, letters, mode, timeout)
            if got == probe_letter and start >= 0 and sample[start] == probe_letter:
                a = Anchor(sample[:start], sample[start + 1 :])
                if a not in out:
                    out.append(a)
                break
    return out


def _other(letters: str, *avoid: str) -> str | None:
    return next((L for L in letters if L not in avoid and L != "I"), None)


def _mid_sentence(before: str) -> str:
    """'Final Choice: ' -> 'the final choice: ' (the anchor as it stands inside a sentence)."""
    s = before.lstrip().lower()
    return s if s.startswith("the ") else "the " + s


def probes(anchor: Anchor, letters: str) -> list[Probe]:
    """Every probe written around one anchor (see the module docstring), ordinary ones first: after a label
    ('Answer: ') words in the letter slot read most naturally, after a phrase ('the answer is ') the anchor
    used again in prose."""
    repeat = _repeats(anchor, letters)
    words = _in_slot(anchor, letters)
    out = words + repeat if anchor.before.rstrip().endswith((":", "：")) else repeat + words
    out += _edges(anchor, letters)
    return out


def _repeats(anchor: Anchor, letters: str) -> list[Probe]:
    out: list[Probe] = []
    for initial, words in _AFTER_ANCHOR.items():
        x = _other(letters, initial)
        if x is None:
            continue
        head = anchor.answer(x)
        if anchor.prose:
            for second in ("Note that " + _mid_sentence(anchor.before), anchor.before.lstrip()):
                text = f"{head}\n\n{second}{words}"
                out.append(Probe(text, frozenset({x}), "repeat", True, (len(anchor.before),), x))
    x = _other(letters, "A")
    if x is not None:
        head = anchor.answer(x)
        out.append(Probe(f"{head}\n\n{_PROSE}", frozenset({x}), "prose", True, (len(anchor.before),), x))
    x = _other(letters, "A", "B")
    if x is not None:
        head = anchor.answer(x)
        text = f"{head} It fits because (a) the data agree and (b) the units match."
        out.append(Probe(text, frozenset({x}), "enumeration", True, (len(anchor.before),), x))
    return out


def _in_slot(anchor: Anchor, letters: str) -> list[Probe]:
    out: list[Probe] = []
    for phrase, has_answer in _IN_SLOT:
        y = _other(letters, phrase[0].upper()) if has_answer else None
        body = phrase.format(Y=y) if has_answer else phrase
        text = anchor.before + body + anchor.after
        at = (len(anchor.before) + phrase.index("{Y}"),) if y else ()
        accept = frozenset({y, None}) if y else frozenset({None})
        ordinary = (
            anchor.latin and not anchor.label
        )  # English words after '答案：' or 'option ' are not prose
        out.append(Probe(text, accept, "word", ordinary, at, f"{y} or no letter" if y else "no letter"))
    return out


def _edges(anchor: Anchor, letters: str) -> list[Probe]:
    out: list[Probe] = []
    if len(letters) >= 3:
        y, z = letters[1], letters[2]
        text = anchor.answer(f"{y} or {z}")
        at = len(anchor.before)
        out.append(Probe(text, frozenset({None}), "hedge", False, (at, at + 5), "no single letter"))
        text = anchor.before + f"not {y}, but {z}" + anchor.after
        out.append(
            Probe(text, frozenset({z, None}), "negation", False, (at + 4, at + 11), f"{z} or no letter")
        )
    outside = next((L for L in "QZXWVUTSRPONMLK" if L not in letters), None)
    if outside is not None:
        text = anchor.answer(outside)
        out.append(
            Probe(text, frozenset({None}), "range", False, (len(anchor.before),), "no letter (not an option)")
        )
    return out


def quote_probe(anchor: Anchor, letters: str, example: str) -> Probe | None:
    """A compliant answer, then the prompt's own answer-format example quoted back."""
    x = _other(letters, *(c for c in example if c.isupper()))  # an answer the example does not show
    if x is None:
        return None
    head = anchor.answer(x)
    tail = f"\n\n(As instructed, my last line follows the format {example}.)"
    shown = tuple(range(len(head) + 1, len(head) + len(tail)))  # any letter of the quoted example
    return Probe(head + tail, frozenset({x}), "quote", False, shown, x)


def grader_value(kind: str, patterns: tuple[str, ...]) -> Any:
    """The output_regex as the grader takes it: one string, or the patterns as a list (an object's keys)."""
    return patterns[0] if kind == "str" else list(patterns)


@functools.lru_cache(maxsize=CACHE_MAX)
def own_anchors(
    kind: str, patterns: tuple[str, ...], letters: str, mode: str, timeout: float, skip: frozenset[int]
) -> tuple[Anchor, ...]:
    """The anchors of the patterns whose index is not in `skip` (ones no response can match give none)."""
    own = tuple(p for i, p in enumerate(patterns) if i not in skip)
    return tuple(anchors(own, grader_value(kind, patterns), letters, mode, timeout))


@functools.lru_cache(maxsize=CACHE_MAX)
def audit(
    kind: str,
    patterns: tuple[str, ...],
    letters: str,
    mode: str,
    timeout: float,
    fixes: bool = True,
    skip: frozenset[int] = frozenset(),
) -> Audit:
    """Audit an output_regex (`kind` "str" for one pattern, else its `patterns` in order) for rows offering
    `letters` and graded in `mode`. A property of the regex alone: the prompt's examples are checked apart
    (quote_check), so rows whose prompts differ never cost another audit."""
    orx = grader_value(kind, patterns)
    deadline = time.monotonic() + max(2.0, 40 * timeout)
    errors: list[Counterexample] = []
    warnings: list[Counterexample] = []
    seen: set[str] = set()
    n = 0
    complete = True
    for anchor in own_anchors(kind, patterns, letters, mode, timeout, skip):
        for probe in probes(anchor, letters):
            if probe.text in seen:
                continue
            seen.add(probe.text)
            if time.monotonic() > deadline:
                complete = False
                break
            n += 1
            got, start, index = _grade(probe.text, orx, letters, mode, timeout)
            if got is None or got in probe.accept:
                continue
            word = probe.ordinary and start not in probe.tokens
            severity = "error" if word and got in letters else "warning"
            (errors if severity == "error" else warnings).append(Counterexample(probe, got, severity, index))
    fix = None
    if fixes and (errors or warnings):
        first = (errors or warnings)[0]
        fix = suggest_fix(kind, patterns, first.pattern, letters, mode, timeout)
        if fix is None and errors and len(patterns) > 1:  # several patterns err: name the whole list
            fixed = repair(kind, patterns, letters, mode, timeout, skip)
            if fixed is not None:
                fix = f"the patterns {json.dumps(list(fixed))} (each erring one rewritten)"
    return Audit(tuple(errors), tuple(warnings), fix, n, complete)


@functools.lru_cache(maxsize=65536)
def quote_check(
    kind: str,
    patterns: tuple[str, ...],
    letters: str,
    mode: str,
    timeout: float,
    skip: frozenset[int],
    example: str,
) -> Counterexample | None:
    """The `quote` probe of one of the prompt's answer-format examples (a few grading calls, cached per
    example text): a compliant answer followed by the example quoted back must keep its letter."""
    orx = grader_value(kind, patterns)
    for anchor in own_anchors(kind, patterns, letters, mode, timeout, skip):
        probe = quote_probe(anchor, letters, example)
        if probe is None:
            continue
        got, _, index = _grade(probe.text, orx, letters, mode, timeout)
        if got is not None and got not in probe.accept:
            return Counterexample(probe, got, "warning", index)
    return None


# ------------------------------------------------------------------------------------------------- fixes


def group_span(pattern: str) -> tuple[int, int] | None:
    """(index of the first capturing group's '(', index just after its ')'), or None."""
    i, n = 0, len(pattern)
    start = -1
    depth = 0
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            i += 1
            continue
        if ch == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            continue
        if ch == "(":
            if start >= 0:
                depth += 1
            elif not pattern.startswith("(?", i) or (
                pattern.startswith(("(?P<", "(?<"), i) and not pattern.startswith(("(?<=", "(?<!"), i)
            ):
                start = i
                depth = 1
        elif ch == ")" and start >= 0:
            depth -= 1
            if depth == 0:
                return start, i + 1
        i += 1
    return None


def letter_class(letters: str) -> str:
    """'[A-D]' for contiguous letters from A, else the letters listed."""
    if letters == LETTERS[: len(letters)]:
        return f"[A-{letters[-1]}]" if len(letters) > 1 else f"[{letters}]"
    return f"[{letters}]"


def candidate_fixes(pattern: str, letters: str) -> list[tuple[str, str]]:
    """(rewritten pattern, what changed), from the smallest change to the strictest."""
    span = group_span(pattern)
    if span is None:
        return []
    a, b = span
    head = pattern[:a]
    opening = pattern[a : pattern.index(">", a) + 1] if pattern.startswith(("(?P<", "(?<"), a) else "("
    group = f"{opening}(?-i:{letter_class(letters)}))"
    tail = pattern[b:]
    return [
        (head + group + tail, "a case-sensitive option-letter class"),
        (head + group + "(?![A-Za-z0-9])" + tail, "a case-sensitive option-letter class ending at a word's end"),
        (head + group + r"(?![^\n]*\w)" + tail, "a case-sensitive option-letter class with nothing but "
         "punctuation after it on its line"),
    ]  # fmt: skip


def _rewrites(
    kind: str,
    patterns: tuple[str, ...],
    index: int,
    letters: str,
    mode: str,
    timeout: float,
    skip: frozenset[int],
) -> tuple[tuple[str, str, Audit] | None, tuple[str, str, Audit] | None]:
    """(the first rewrite of pattern `index` with no counterexample of its own, the first with no error of its
    own), each as (pattern, what changed, the audit of the output_regex with it), or None: candidate_fixes in
    order, keeping only rewrites that compile and still grade each letter's compliant answer (the original
    pattern's own format) to that letter. Judged on the regex alone: a prompt that shows a real letter
    ('Answer: A') is the prompt's defect."""
    orx = grader_value(kind, patterns)
    own = anchors((patterns[index],), orx, letters, mode, timeout)
    partial = None
    for new, what in candidate_fixes(patterns[index], letters):
        try:
            re.compile(new)
        except (re.error, RecursionError, OverflowError):
            continue
        fixed = patterns[:index] + (new,) + patterns[index + 1 :]
        value = grader_value(kind, fixed)
        if not all(_grade(x.answer(L), value, letters, mode, timeout)[0] == L for x in own for L in letters):
            continue
        again = audit(kind, fixed, letters, mode, timeout, False, skip)
        if not any(c.pattern == index for c in again.errors + again.warnings):
            return (new, what, again), partial
        if partial is None and not any(c.pattern == index for c in again.errors):
            partial = (new, what, again)
    return None, partial


def suggest_fix(
    kind: str,
    patterns: tuple[str, ...],
    index: int,
    letters: str,
    mode: str,
    timeout: float,
) -> str | None:
    """'`<pattern>` (<what changed>)': the first rewrite of pattern `index` that the audit passes and that
    still grades each letter's compliant answer (the original pattern's own format) to that letter."""
    if not 0 <= index < len(patterns):
        return None
    clean, partial = _rewrites(kind, patterns, index, letters, mode, timeout, frozenset())
    if clean is not None and not clean[2].errors and not clean[2].warnings:
        return f"`{clean[0]}` ({clean[1]})"
    if partial is not None and not partial[2].errors:
        kinds = ", ".join(sorted({c.probe.kind for c in partial[2].warnings}))
        return (
            f"`{partial[0]}` ({partial[1]}; it still reads edge cases: {kinds}, which need an anchor before the "
            "letter)"
        )
    return None


@functools.lru_cache(maxsize=CACHE_MAX)
def repair(
    kind: str,
    patterns: tuple[str, ...],
    letters: str,
    mode: str,
    timeout: float,
    skip: frozenset[int] = frozenset(),
) -> tuple[str, ...] | None:
    """The patterns with each one the audit errs on replaced by its fix (the rewrite suggest_fix names, the
    first with no counterexample of its own, else the first with no error of its own), pattern after pattern
    until the audit of the whole output_regex finds no error; None when it finds none to begin with, or when
    some pattern has no such rewrite (a pattern without a capture group, or one every rewrite still errs on).
    Edge cases (`regex_audit_edge`) are not a reason to rewrite: a pattern only they concern is kept as it is."""
    current = patterns
    for _ in range(len(patterns) + 1):
        found = audit(kind, current, letters, mode, timeout, False, skip)
        if not found.errors:
            return current if current != patterns else None
        index = found.errors[0].pattern
        if not 0 <= index < len(current):
            return None
        clean, partial = _rewrites(kind, current, index, letters, mode, timeout, skip)
        chosen = clean or partial
        if chosen is None:
            return None
        current = current[:index] + (chosen[0],) + current[index + 1 :]
    return None
