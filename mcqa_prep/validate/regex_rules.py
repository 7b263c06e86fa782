"""Rules on a row's custom `output_regex`: every pattern compiles, has at most one group, cannot hang, and
the row's own format is graded to the right letter while its prompt and a refusal are not.

Real data has a handful of templates across hundreds of thousands of rows, so the facts these rules read are
cached (functools.lru_cache, bounded): per pattern (`pattern_info`) and per (output_regex, offered letters)
(`regex_plan`: the controls). Per row there is one run of the custom extraction on the row's prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..grader.custom_regex import compile_pattern, extract_custom, last_match
from ..records import STATUS_REGEX_TIMEOUT
from . import controls
from .facts import G_REGEX, G_REGEX_LETTERS, G_REGEX_PROMPT, RowFacts
from .registry import ERROR, WARNING, Hit, quote, rule
from .synth import describe_char, explain_lost, lost_hint, odd_chars

CACHE_MAX = 4096  # distinct patterns / (output_regex, letter set) pairs whose results are kept
ORX = ("template_metadata", "output_regex")


@dataclass(frozen=True)
class RegexKey:
    """A usable output_regex shape: its patterns in the order the grader tries them, and how they were given
    ('str', 'list', or 'dict': NeMo Gym 0.7.0 iterates an object's keys as the patterns). Hashable: the control
    caches are keyed on it."""

    kind: str
    patterns: tuple[str, ...]

    def paths(self) -> list[tuple[Any, ...]]:
        if self.kind == "str":
            return [ORX]
        return [(*ORX, k if self.kind == "list" else p) for k, p in enumerate(self.patterns)]

    @property
    def whole(self) -> tuple[Any, ...]:
        """The address of findings about the output_regex as a whole (its only pattern when it has one)."""
        return self.paths()[0] if len(self.patterns) == 1 else ORX

    def grader_value(self) -> Any:
        """The output_regex as the grader takes it."""
        return self.patterns[0] if self.kind == "str" else list(self.patterns)


def regex_key(orx: Any) -> RegexKey | None:
    """The RegexKey of a row's output_regex, or None for a shape the schema rule reports."""
    if type(orx) is str:
        return _str_key(orx)
    if isinstance(orx, list) and orx and all(isinstance(p, str) for p in orx):
        return RegexKey("list", tuple(orx))
    if isinstance(orx, dict) and all(isinstance(p, str) for p in orx):
        return RegexKey("dict", tuple(orx))
    return None


@functools.lru_cache(maxsize=CACHE_MAX)
def _str_key(orx: str) -> RegexKey:
    return RegexKey("str", (orx,))


@dataclass(frozen=True)
class PatternInfo:
    """Per distinct pattern: compile result, capture groups, time bound (computed once)."""

    compiled: Any
    error: str | None
    groups: int
    time: controls.TimeBound | None
    odd: tuple[tuple[int, str], ...]  # characters no response holds (synth.odd_chars)

    @property
    def usable(self) -> bool:
        return self.compiled is not None and self.groups <= 1 and (self.time is None or self.time.ok)

    @property
    def quiet(self) -> bool:
        """No pattern rule fires on it."""
        return self.usable and not self.odd


@functools.lru_cache(maxsize=CACHE_MAX)
def pattern_info(p: str, timeout: float) -> PatternInfo:
    compiled, error, groups = compile_pattern(p)
    time = None
    if compiled is not None and groups <= 1:
        time = controls.check_time_bound(p, compiled, timeout=timeout)
    return PatternInfo(compiled, error, groups, time, odd_chars(p))


@dataclass
class RegexPlan:
    """What one output_regex gives for one set of offered letters: its pattern infos, the positive control
    per pattern and letter, the refusal control; the per-gold findings are kept as they are asked for."""

    key: RegexKey
    infos: list[PatternInfo]
    positive: list[controls.PatternControls | None]
    refusal: tuple[str, str] | None
    per_gold: dict[str, tuple[list[Hit], list[Hit]]] = field(default_factory=dict)

    @functools.cached_property
    def all_usable(self) -> bool:
        return all(i.usable for i in self.infos)

    @functools.cached_property
    def failing(self) -> frozenset[str]:
        return frozenset(L for pc in self.positive if pc is not None for L in pc.failing())

    @functools.cached_property
    def static_quiet(self) -> bool:
        return self.key.kind != "dict" and all(i.quiet for i in self.infos) and self.refusal is None


@functools.lru_cache(maxsize=CACHE_MAX)
def regex_plan(key: RegexKey, letters: str | tuple[str, ...], timeout: float) -> RegexPlan:
    infos = [pattern_info(p, timeout) for p in key.patterns]
    usable = [i.usable for i in infos]
    positive: list[controls.PatternControls | None] = [None] * len(infos)
    refusal = None
    if letters:
        orx = key.grader_value()
        positive = controls.positive_controls(orx, key.patterns, usable, list(letters), timeout=timeout)
        if all(usable):
            refusal = controls.refusal_letter(orx, list(letters), timeout=timeout)
    return RegexPlan(key, infos, positive, refusal)


def regex_facts(f: RowFacts) -> int:
    """Sets f.orx and f.plan for a row with a usable output_regex; returns the regex guard bits."""
    tm = f.tm
    if type(tm) is not dict or "output_regex" not in tm:
        return 0
    key = regex_key(tm["output_regex"])
    if key is None:
        return 0  # the schema rule reports the shape
    f.orx = key
    plan = f.plan = regex_plan(key, f.letters, f.cfg.regex_timeout)
    may = 0 if plan.static_quiet else G_REGEX
    if plan.failing:
        may |= G_REGEX_LETTERS
    if plan.all_usable and f.prompt is not None and key not in f.cfg.slow_prompts:
        may |= G_REGEX_PROMPT
    return may


# -- pattern rules ----------------------------------------------------------------------------------------


def _patterns(f: RowFacts) -> Iterator[tuple[tuple[Any, ...], str, PatternInfo]]:
    if f.plan is not None:
        yield from zip(f.orx.paths(), f.orx.patterns, f.plan.infos, strict=True)


@rule(
    "regex_object",
    WARNING,
    "`output_regex` given as an object: NeMo Gym 0.7.0 iterates its keys as the patterns (values ignored), "
    "an undocumented shape; the pattern rules run on its keys",
    "give a list of patterns",
    guard=G_REGEX,
)
def regex_object(f: RowFacts) -> Iterator[Hit]:
    if f.orx is not None and f.orx.kind == "dict":
        n = len(f.orx.patterns)
        yield (
            ORX,
            (
                f"output_regex is an object with {n} key(s): NeMo Gym 0.7.0 tries its keys as the patterns, in "
                "order, and ignores the values; the shape is not documented (other trainers may reject it): give "
                "the patterns as a list" + ("" if n else " (this one has none: no pattern is tried)")
            ),
        )


@rule(
    "regex_compile",
    ERROR,
    "an `output_regex` pattern that Python's `re` cannot compile (NeMo Gym skips it, so it never extracts)",
    "fix the pattern",
    guard=G_REGEX,
)
def regex_compile(f: RowFacts) -> Iterator[Hit]:
    for path, _, info in _patterns(f):
        if info.compiled is None:
            yield (
                path,
                f"{info.error}; NeMo Gym (Python re) skips it, so it never extracts a letter: fix the pattern",
            )


@rule(
    "regex_groups",
    ERROR,
    "a pattern with two or more capture groups (NeMo Gym crashes)",
    "one group around the letter, `(?:...)` for the rest",
    guard=G_REGEX,
)
def regex_groups(f: RowFacts) -> Iterator[Hit]:
    for path, _, info in _patterns(f):
        if info.compiled is not None and info.groups > 1:
            yield (
                path,
                (
                    f"{info.groups} capture groups; NeMo Gym crashes on this: keep one group around the letter and "
                    "make the others non-capturing (?:...)"
                ),
            )


@rule(
    "regex_time_bound",
    ERROR,
    "a pattern that does not finish on long adversarial input (catastrophic backtracking), or that timed "
    "out on a row's prompt",
    "remove nested quantifiers such as `(a+)+`, `(\\w+\\s?)*`",
    guard=G_REGEX | G_REGEX_PROMPT,
)
def regex_time_bound(f: RowFacts) -> Iterator[Hit]:
    t = f.cfg.regex_timeout
    for path, _, info in _patterns(f):
        if info.time is not None and not info.time.ok:
            engine = (
                "Python's re (NeMo Gym, no timeout)"
                if info.time.engine == "re"
                else f"the regex module within {t}s"
            )
            yield (
                path,
                (
                    f"catastrophic backtracking: {engine} does not finish on {info.time.detail}; a long response "
                    "stalls training; remove nested quantifiers such as (a+)+ or (\\w+\\s?)*"
                ),
            )
    if prompt_extraction(f) == STATUS_REGEX_TIMEOUT:
        yield (
            f.orx.paths()[0],
            (
                f"the pattern did not finish within {t}s on this row's prompt (later rows with this output_regex "
                "skip the prompt control); simplify the pattern"
            ),
        )


@rule(
    "regex_control_character",
    ERROR,
    "a pattern holding a character no response contains: a control character (almost always a lost "
    "backslash: `\\b` in a JSON or non-raw Python string is a backspace), a tab before `ext` (the `\\t` of "
    "`\\text`), an invisible format character, a non-ASCII space",
    "restore the backslash (a raw string in Python, `\\\\` in JSON), remove the character, or use `\\s`",
    guard=G_REGEX,
)
def regex_control_character(f: RowFacts) -> Iterator[Hit]:
    for path, p, info in _patterns(f):
        if info.odd:
            at, ch = info.odd[0]
            more = f" and {len(info.odd) - 1} more" if len(info.odd) > 1 else ""
            why = lost_hint(p, at) or explain_lost(p)
            if not why:
                why = (
                    " (a model writes a plain space: use ' ' or \\s)"
                    if ch.isspace()
                    else " (an invisible character, e.g. copied from a document)"
                )
            yield (
                path,
                (
                    f"the pattern holds {describe_char(ch)} at character {at}{more}{why}: no response contains it, "
                    "so this pattern never matches what a model writes; fix the pattern"
                ),
            )


# -- controls ---------------------------------------------------------------------------------------------


def gold_hits(plan: RegexPlan, g: str) -> tuple[list[Hit], list[Hit]]:
    """(positive-control hits, letter-coverage hits) of a plan for gold letter g, cached on the plan."""
    hits = plan.per_gold.get(g)
    if hits is not None:
        return hits
    pos: list[Hit] = []
    cov: list[Hit] = []
    for pc, path, p in zip(plan.positive, plan.key.paths(), plan.key.patterns, strict=True):
        if pc is None:
            continue
        bad = pc.failing()
        if g in bad:
            lc = pc.letters[g]
            got = f"as {lc.got}" if lc.got else f"to no letter ({lc.status}) by the pattern"
            fix = explain_lost(p).strip() or "make the capture group hold the option letter"
            pos.append(
                (
                    path,
                    f"a compliant answer {quote(lc.response or '')} ({lc.why}, with the gold {g}) is graded "
                    f"{got}: training can never reward this row; {fix}",
                )
            )
        others = [L for L in bad if L != g]
        if others:
            lc = pc.letters[others[0]]
            cov.append(
                (
                    path,
                    f"compliant answers with letter(s) {', '.join(others)} (e.g. {quote(lc.response or '')}) "
                    "yield no such letter; widen the pattern's letter class to every option letter",
                )
            )
    hits = plan.per_gold[g] = (pos, cov)
    return hits


@rule(
    "regex_positive_control",
    ERROR,
    "a compliant answer in the pattern's own format carrying the gold letter is not graded to the gold",
    "make the capture group hold the option letter",
    guard=G_REGEX_LETTERS,
)
def regex_positive_control(f: RowFacts) -> Iterator[Hit]:
    if f.gold is not None and f.plan is not None:
        yield from gold_hits(f.plan, f.gold)[0]


@rule(
    "regex_letter_coverage",
    WARNING,
    "compliant answers carrying some other option letters yield no letter",
    "widen the letter class to every option letter",
    guard=G_REGEX_LETTERS,
)
def regex_letter_coverage(f: RowFacts) -> Iterator[Hit]:
    if f.gold is not None and f.plan is not None:
        yield from gold_hits(f.plan, f.gold)[1]


def prompt_extraction(f: RowFacts) -> Any:
    """The custom extraction of the row's prompt (once per row): the letter it yields, STATUS_REGEX_TIMEOUT,
    or None."""
    if f._echo is None:
        f._echo = ""
        if f.may & G_REGEX_PROMPT:
            texts = dict(zip(f.letters, f.texts, strict=True))
            ext = extract_custom(f.prompt, f.orx.grader_value(), texts, timeout=f.cfg.regex_timeout)  # type: ignore[arg-type]
            if ext.status == STATUS_REGEX_TIMEOUT:
                f.cfg.slow_prompts.add(f.orx)
                f._echo = STATUS_REGEX_TIMEOUT
            elif ext.letter is not None:
                f._echo = ext.letter
    return f._echo or None


@rule(
    "regex_negative_control",
    WARNING,
    "the row's prompt itself, or a refusal, is graded to an option letter by the custom regex",
    "use a placeholder that is not an option letter (`Answer: X`), anchor the pattern",
    guard=G_REGEX | G_REGEX_PROMPT,
)
def regex_negative_control(f: RowFacts) -> Iterator[Hit]:
    plan = f.plan
    if plan is None:
        return
    whole = f.orx.whole
    letter = prompt_extraction(f)
    if letter is not None and letter != STATUS_REGEX_TIMEOUT:
        yield (
            whole,
            (
                f"the prompt itself is graded as option {letter}{_first_match(f)}: a response that echoes the "
                f"prompt (e.g. a truncated one) scores whenever the gold is {letter}; write the format with a "
                "placeholder that is not an option letter (e.g. 'Answer: X') or anchor the pattern to the "
                "response's end"
            ),
        )
    if plan.refusal is not None:
        text, letter = plan.refusal
        yield (
            whole,
            (
                f"a refusal ({text!r}) is graded as option {letter}: the pattern reads letters out of ordinary "
                "words; anchor it to the answer format (e.g. 'Answer:\\s*([A-J])')"
            ),
        )


def _first_match(f: RowFacts) -> str:
    """' (match 'Answer: A' at character 123)': the last match of the first pattern matching the prompt
    (under the time bound every user pattern runs under)."""
    prompt = f.prompt
    # only called on a letter prompt_extraction found, which needs G_REGEX_PROMPT, set only with a prompt
    assert prompt is not None
    for source, info in zip(f.plan.key.patterns, f.plan.infos, strict=False):
        if info.compiled is None:
            continue
        try:
            last = last_match(source, prompt, f.cfg.regex_timeout)
        except Exception:  # noqa: BLE001 - only decorates a message
            continue
        if last is not None:
            a, b = last[1]
            return f" (match {quote(prompt[a:b], 40)} at character {a})"
    return ""
