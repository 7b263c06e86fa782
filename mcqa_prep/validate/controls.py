"""Controls for custom `output_regex` patterns: does a compliant answer score, does the prompt itself score,
and can the pattern hang? Results are cached per distinct pattern (and letter set): real data has a handful
of templates across hundreds of thousands of rows, so no control runs per row.

Why each control exists:
- positive: a response written in the template's own answer format (synthesised from the pattern's parse
  tree, with each option letter in the capture group) must be graded to that letter by the real grader,
  otherwise training can never reward the correct answer;
- negative: a refusal must yield no option letter (the prompt text is checked per row by validate);
- time bound: our grader runs patterns under the `regex` module's timeout, NeMo Gym runs them with Python's
  `re`, which has none. A pattern that backtracks catastrophically stalls training or yields
  `regex_timeout`. Validation itself never runs a user pattern without a bound: in-process only with the
  `regex` timeout, and `re` only in a child process that is killed at a deadline.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from ..grader import grade_text
from .synth import _c, _children, _set_char, _Unsupported, model_pattern, parse, synthesize

# Length of the adversarial runs. Exponential backtracking explodes at a few dozen characters; at 2000 a
# merely quadratic pattern (e.g. two adjacent \s*, as in NVIDIA's mcqa_benchmark_002) still finishes in tens
# of milliseconds, so only patterns that would stall on long responses are flagged.
ADVERSARIAL_RUN = 2000
# Wall-clock budget of the child process that runs a suspicious pattern under Python's `re` (NeMo Gym).
RE_CHILD_BUDGET = 3.0

REFUSALS = (
    "I'm sorry, but I can't help with that.",
    "I cannot answer this question.",
)
# Well-known answer formats, tried when a sample cannot be synthesised from the pattern or does not score.
FALLBACK_FORMATS = (
    "Answer: {L}",
    "\\boxed{{{L}}}",
    "Answer: \\boxed{{{L}}}",
    "**Answer: {L}**",
    "The answer is {L}",
    "The answer is ({L})",
    "ANSWER IS {L}",
    "Final Answer: {L}",
    "({L})",
    "{L}",
)


# --------------------------------------------------------------------------------------------- time bound


def has_nested_repeat(pattern: str) -> bool:
    """True for the classic exponential shapes under a backtracking engine: an unbounded repeat whose body
    holds another variable-length repeat or an alternation (`(a+)+`, `(\\w+\\s?)*`, `(a|aa)+`). Also True when
    `re` cannot parse the pattern (nothing is known about it)."""
    tree = parse(pattern)
    if tree is None:
        return True

    def variable(sub) -> bool:
        for op, av in sub:
            if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] != av[1]:
                return True
            if op is _c.BRANCH:
                return True
            if any(variable(ch) for ch in _children(op, av)):
                return True
        return False

    def walk(sub) -> bool:
        for op, av in sub:
            if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[1] > 1 and variable(av[2]):
                return True
            if any(walk(ch) for ch in _children(op, av)):
                return True
        return False

    try:
        return walk(tree)
    except RecursionError:
        return True


def _loop_chars(pattern: str) -> list[str]:
    """Characters the pattern's repeats consume (the fuel of backtracking), plus common text characters."""
    chars: list[str] = []
    tree = parse(pattern)

    def first_chars(sub) -> None:
        for op, av in sub:
            if op is _c.LITERAL:
                chars.append(chr(av))
            elif op is _c.IN:
                try:
                    chars.append(_set_char(av))
                except _Unsupported:
                    pass
            for ch in _children(op, av):
                first_chars(ch)

    if tree is not None:
        try:
            first_chars(tree)
        except RecursionError:
            pass
    chars.extend(["a", "A", " ", "0", "\n", ".", ":", "\t"])
    return list(dict.fromkeys(chars))[:16]


def adversarial_inputs(pattern: str, n: int = ADVERSARIAL_RUN) -> list[str]:
    """Long runs of characters the pattern loops on, each followed by a character that breaks the match,
    placed after every prefix of a compliant sample and before its remainder (so required literals, like
    the `:` of `(\\w+\\s?)*:`, are present and the engine has to backtrack)."""
    sample = synthesize(pattern, "A") or ""
    cut_points = sorted({0, len(sample), *range(0, len(sample), max(1, len(sample) // 8))})
    out: list[str] = []
    for ch in _loop_chars(pattern):
        run = ch * n
        breaker = "!" if ch != "!" else "?"
        for k in cut_points:
            out.append(sample[:k] + run + breaker + sample[k:])
        out.append(run)
        out.append(("Answer: " + ch) * (n // 8))
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class TimeBound:
    """Outcome of the time-bound control of one pattern."""

    ok: bool
    engine: str | None = None  # "regex" (this grader) or "re" (NeMo Gym) when not ok
    detail: str = ""


def check_time_bound(pattern: str, compiled: Any, *, timeout: float) -> TimeBound:
    """Run the pattern on adversarial inputs: in-process with the `regex` module's timeout (what this grader
    does), then, for nested-repeat shapes (and for patterns only `re` runs), under Python's `re` in a child
    process killed at a deadline (what NeMo Gym does; `re` has no timeout and cannot be interrupted)."""
    inputs = adversarial_inputs(pattern)
    in_process = isinstance(compiled, regex.Pattern)
    if in_process:
        deadline = time.monotonic() + max(2.0, 20 * timeout)
        for s in inputs:
            try:
                for _ in compiled.finditer(s, timeout=timeout):
                    pass
            except TimeoutError:
                return TimeBound(False, "regex", _describe_input(s))
            except Exception:  # noqa: BLE001 - a pattern that errors while matching is not a hang
                break
            if time.monotonic() > deadline:
                return TimeBound(False, "regex", "all adversarial inputs together")
    if not in_process or has_nested_repeat(pattern):
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError):
            return TimeBound(True)  # `re` cannot compile it: reported by the compile rule, not a hang
        return _re_child(pattern, inputs[:64])
    return TimeBound(True)


_CHILD = (
    "import json,re,sys\n"
    "d=json.load(sys.stdin)\n"
    "c=re.compile(d['p'],re.IGNORECASE)\n"
    "for i,s in enumerate(d['i']):\n"
    "    print(i,flush=True)\n"
    "    c.findall(s)\n"
    "print('done',flush=True)\n"
)


def _re_child(pattern: str, inputs: Sequence[str]) -> TimeBound:
    payload = json.dumps({"p": pattern, "i": list(inputs)})
    try:
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=payload,
            capture_output=True,
            text=True,
            timeout=RE_CHILD_BUDGET,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        if isinstance(out, bytes):
            out = out.decode("utf-8", "replace")
        lines = [ln for ln in out.split() if ln.isdigit()]
        where = _describe_input(inputs[int(lines[-1])]) if lines else "an adversarial input"
        return TimeBound(False, "re", where)
    except OSError:  # pragma: no cover - cannot start a child: do not guess
        return TimeBound(True)
    return TimeBound(True)


def _describe_input(s: str) -> str:
    """'Answer: ' + 'a'*2000 + '!' style description of an adversarial input."""
    parts: list[str] = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        if j - i >= 20:
            parts.append(f"{s[i]!r}*{j - i}")
            i = j
        else:
            k = i
            while k < len(s) and not (k + 20 <= len(s) and s[k : k + 20] == s[k] * 20):
                k += 1
            parts.append(repr(s[i:k]))
            i = k
    return " + ".join(parts)[:160]


# --------------------------------------------------------------------------------------------- controls


@dataclass
class LetterControl:
    """Positive control of one pattern for one letter: the compliant response tried and what it gave."""

    ok: bool
    response: str | None
    got: str | None
    status: str | None
    why: str = "this pattern's own format"  # what the response is, for the message


@dataclass
class PatternControls:
    """Positive control results of one pattern of an output_regex, per option letter."""

    letters: dict[str, LetterControl] = field(default_factory=dict)

    def failing(self) -> list[str]:
        return [L for L, c in self.letters.items() if not c.ok]


def _grades_to(text: str, letter: str, letters: Sequence[str], output_regex: Any, timeout: float):
    """(ok, what the custom regex gave): ok when the custom regex itself grades `text` to `letter` (a letter
    the grading mode reads after the regex gave none does not count)."""
    options = [{L: f"option {L}"} for L in letters]
    res = grade_text(text, options, letter, None, {"output_regex": output_regex}, regex_timeout=timeout)
    if res.mode != "output_regex":
        return False, LetterControl(False, text, None, "no match")
    return res.extracted_answer == letter, LetterControl(False, text, res.extracted_answer, res.status)


def required_samples(pattern: str, letter: str) -> list[tuple[str, str]]:
    """Responses a model writes for this pattern that must score besides its literal format: the pattern as
    the author meant it where a backslash was lost (synth.model_pattern: `\\boxed`, not a word boundary and
    `oxed`), and the documented `\\boxed{X}` format when the pattern's own answer is a bare box (not, say,
    `Answer: \\boxed{X}`, whose plain box only the grading mode reads, nor `\\boxed{\\text{X}}`, a box of another
    content)."""
    out: list[tuple[str, str]] = []
    meant = model_pattern(pattern)
    sample = synthesize(meant, letter) if meant != pattern else None
    if sample is not None:
        out.append((sample, "the pattern's format as a model writes it"))
    own = (sample or synthesize(pattern, letter) or "").lstrip()
    boxed = "\\boxed{" + letter + "}"
    # the pattern's answer is a bare box (what strict_single_letter_boxed documents): \boxed{X} must score
    inside = own.split("{", 1)[1].rsplit("}", 1)[0].strip() if "{" in own and "}" in own else None
    if own.startswith(("\\boxed{", "oxed{")) and inside == letter and boxed not in [r for r, _ in out]:
        out.append((boxed, "the documented \\boxed{} format"))
    return out


def _letter_control(pattern: str, L: str, letters: Sequence[str], output_regex: Any, timeout: float):
    """The positive control of one letter: some compliant format scores (the synthesised sample, else a
    well-known format), and so does every required sample."""
    tried: list[str] = []
    sample = synthesize(pattern, L)
    if sample is not None:
        tried.append(sample)
    tried.extend(f.format(L=L) for f in FALLBACK_FORMATS)
    first = None
    for text in tried:
        ok_, lc = _grades_to(text, L, letters, output_regex, timeout)
        first = first or lc
        if ok_:
            break
    else:
        return first or LetterControl(False, None, None, None)
    for text, why in required_samples(pattern, L):
        ok_, lc = _grades_to(text, L, letters, output_regex, timeout)
        if not ok_:
            return LetterControl(False, text, lc.got, lc.status, why)
    return LetterControl(True, text, L, "ok")


def positive_controls(
    output_regex: Any,
    patterns: Sequence[str],
    usable: Sequence[bool],
    letters: Sequence[str],
    *,
    timeout: float,
) -> list[PatternControls | None]:
    """Per pattern (None for an unusable one): for each letter, does a compliant response written in this
    pattern's format score that letter through the real grader with the row's whole output_regex?"""
    out: list[PatternControls | None] = []
    for pattern, ok in zip(patterns, usable, strict=True):
        if not ok:
            out.append(None)
            continue
        pc = PatternControls()
        for L in letters:
            pc.letters[L] = _letter_control(pattern, L, letters, output_regex, timeout)
        out.append(pc)
    return out


def refusal_letter(output_regex: Any, letters: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
    """(refusal text, letter) when a refusal is graded to an option letter by the custom regex, else None."""
    options = [{L: f"option {L}"} for L in letters]
    for text in REFUSALS:
        res = grade_text(text, options, "", None, {"output_regex": output_regex}, regex_timeout=timeout)
        if res.extracted_answer is not None and res.mode == "output_regex":
            return text, res.extracted_answer
    return None
