"""Rules from the adversarial regex audit (regex_audit.py) and from the prompt's own answer format (answer_format.py).

Both are properties of the template, not of the row: the audit is cached per (patterns, grading mode,
offered letters), the quote probe per example text, and the format check per (examples, output_regex,
mode, letters). Per row there is one scan of the prompt for its examples and a few cache look-ups.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..fields import template_id
from ..grader import effective_mode, grade_text
from ..grader.modes import BY_NAME
from .answer_format import Example, examples
from .facts import G_AUDIT, G_FORMAT, RowFacts
from .regex_audit import FLAGS, audit, grader_value, quote_check, repair
from .registry import ERROR, WARNING, Hit, quote, render_path, rule

CACHE_MAX = 4096
PROMPT_PATH = ("responses_create_params", "input", 0, "content")

_WHY = {
    "repeat": "prose after the answer uses the anchor again with a word after it",
    "prose": "an ordinary sentence follows the answer",
    "enumeration": "reasoning after the answer enumerates (a), (b)",
    "word": "a word stands where the letter goes",
    "hedge": "the answer names two letters",
    "negation": "the answer negates a letter",
    "range": "the letter is not one of the options",
    "quote": "the prompt's own format example is quoted after the answer",
}
_QUOTE_FIX = (
    "the prompt's example shows a real option letter: write it with a placeholder that is not a letter "
    "('Answer: X', '<letter>'), or anchor the pattern to the end of the response"
)
_PROSE_FIX = (
    "make the letter class case-sensitive and limited to the options, e.g. ((?-i:[A-D])), and anchor it: "
    "nothing but punctuation may follow it on its line, e.g. (?![^\\n]*\\w)"
)


@dataclass(frozen=True)
class FormatMiss:
    """An answer-format example of the prompt that is not graded to the letter written in it."""

    example: Example
    letter: str
    response: str
    got: str | None  # the letter the whole grading gives
    by: str  # what decided: "output_regex" or the mode's name
    regex: bool  # the row has an output_regex (which then should have read it)


def _letters(f: RowFacts) -> str | None:
    letters = f.letters
    if type(letters) is str and len(letters) >= 2 and letters.isascii():
        return letters
    return None


def _mode(f: RowFacts) -> str:
    gm = f.gm
    return effective_mode(gm if type(gm) is str else None, None)


def _skip(f: RowFacts) -> frozenset[int]:
    """The patterns no response can match (a character no response holds): the audit leaves them out."""
    return frozenset(i for i, info in enumerate(f.plan.infos) if info.odd)


def audit_facts(f: RowFacts) -> int:
    """Sets f.audit and f.formats; returns the guard bits of the rules below that may fire."""
    letters = _letters(f)
    mode = _mode(f)
    if letters is None or mode not in BY_NAME:
        return 0  # the option and grading-mode rules report the row
    tm = f.tm
    has_regex = type(tm) is dict and "output_regex" in tm
    if has_regex and (f.plan is None or not f.plan.all_usable):
        return 0  # the pattern rules report it; nothing is known about what it reads
    if f.exs is None:  # once per row (a repaired row's facts keep them: RowFacts.refit)
        exs = examples(f.prompt) if f.prompt else ()
        f.exs = exs, tuple([(e.text, e.slot, e.kind) for e in exs])
    exs, items = f.exs
    key = f.orx if has_regex else None
    timeout = f.cfg.regex_timeout
    # everything below is a function of this key (the plan, hence _skip, is one of (output_regex, letters))
    ck = (key, letters, mode, timeout, items)
    got = _JUDGED.get(ck)
    if got is None:
        if len(_JUDGED) >= CACHE_MAX:
            _JUDGED.clear()
        got = _JUDGED[ck] = _judge(f, key, letters, mode, timeout, items)
    a, quotes, misses = got
    bits = 0
    if a is not None:
        f.audit = a
        f.quotes = list(quotes)
        bits |= G_AUDIT
    if misses:
        f.formats = [(exs[i], *rest) for i, *rest in misses]
        bits |= G_FORMAT
    return bits


_JUDGED: dict[Any, tuple[Any, tuple[Any, ...], tuple[tuple[Any, ...], ...]]] = {}


def _judge(
    f: RowFacts, key: Any, letters: str, mode: str, timeout: float, items: tuple[Any, ...]
) -> tuple[Any, tuple[Any, ...], tuple[tuple[Any, ...], ...]]:
    """audit_facts' verdict for one (output_regex, letters, mode, timeout, examples): the audit when it
    finds something (else None), the quoted examples it misreads, and format_misses."""
    a = None
    quotes: tuple[Any, ...] = ()
    if key is not None:
        skip = _skip(f)
        audited = audit(key.kind, key.patterns, letters, mode, timeout, skip=skip)
        quotes = tuple(
            c
            for text in dict.fromkeys(e[0] for e in items)
            if (c := quote_check(key.kind, key.patterns, letters, mode, timeout, skip, text)) is not None
        )
        if audited.errors or audited.warnings or quotes:
            a = audited
    misses: tuple[tuple[Any, ...], ...] = ()
    if items:
        misses = format_misses(
            items, key.kind if key else None, key.patterns if key else (), mode, letters, timeout
        )
    return a, quotes, misses


def regex_repair(f: RowFacts) -> Any:
    """The row's output_regex with the audit's fix of every pattern it errs on (audit.repair), as the row
    carries it (a string for a string, else a list: an object's keys become a list, its documented shape),
    or None when the audit finds no error or some pattern has no fix. Needs facts made by audit_facts."""
    if f.audit is None or not f.audit.errors:
        return None
    letters = _letters(f)
    if letters is None:
        return None
    fixed = repair(f.orx.kind, f.orx.patterns, letters, _mode(f), f.cfg.regex_timeout, _skip(f))
    if fixed is None:
        return None
    return fixed[0] if f.orx.kind == "str" else list(fixed)


@functools.lru_cache(maxsize=CACHE_MAX)
def format_misses(
    items: tuple[tuple[str, tuple[int, int], str], ...],
    kind: str | None,
    patterns: tuple[str, ...],
    mode: str,
    letters: str,
    timeout: float,
) -> tuple[tuple[Any, ...], ...]:
    """(example index, FormatMiss) for each example whose filled-in answer is not graded to its letter."""
    tm = {"output_regex": grader_value(kind, patterns)} if kind is not None else None
    options = [{L: f"probe choice number {k + 1}"} for k, L in enumerate(letters)]
    alone = BY_NAME[mode].answer_alone
    out = []
    seen: set[str] = set()
    for i, (text, slot, skind) in enumerate(items):
        if text in seen:
            continue
        seen.add(text)
        ex = Example(text, 0, slot, skind)
        shown = ex.shown_letter()
        tries = [L for L in (letters[len(letters) // 2], letters[-1]) if L != shown][:1] or [letters[0]]
        for L in tries:
            filled = ex.fill(L)
            response = filled if alone else "After comparing the options:\n" + filled
            res = grade_text(response, options, L, mode, tm, regex_timeout=timeout)
            regex_read = res.mode == "output_regex"
            if res.extracted_answer == L and (tm is None or regex_read):
                continue
            by = "output_regex" if regex_read else mode
            out.append((i, FormatMiss(ex, L, filled, res.extracted_answer, by, tm is not None)))
            break
    return tuple((i, m) for i, m in out)


@rule(
    "regex_audit",
    ERROR,
    "the adversarial audit: under NeMo Gym's matching (IGNORECASE, the last match wins, patterns in order) the "
    "output_regex grades an ordinary English answer to an option letter a careful reader does not read (a "
    "letter out of a word, the article `a`, the pronoun `I`, a lettered enumeration, the anchor used again in "
    "prose after the answer: `…the answer is (B). Note that the answer is a consequence…` -> A)",
    "a case-sensitive option-letter class `((?-i:[A-D]))`, ended at a word's end or anchored to the line's end; "
    "the finding names a rewrite that passes the audit",
    guard=G_AUDIT,
)
def regex_audit(f: RowFacts) -> Iterator[Hit]:
    if f.audit is not None and f.audit.errors:
        yield _audit_hit(f, f.audit.errors)


@rule(
    "regex_audit_edge",
    WARNING,
    "the adversarial audit's edge cases: the output_regex grades a hedge (`B or C`), a negation (`not B`), a "
    "letter outside the options (`Q`) or the prompt's own format example quoted after the answer to a letter a "
    "careful reader does not read",
    "an option-letter class anchored to the end of the answer line",
    guard=G_AUDIT,
)
def regex_audit_edge(f: RowFacts) -> Iterator[Hit]:
    if f.audit is None or f.audit.errors:
        return
    if f.audit.warnings:
        yield _audit_hit(f, f.audit.warnings)
    elif f.quotes:  # only the prompt's example, quoted back after an answer, is read: the prompt's defect
        yield _build_hit(f, tuple(f.quotes), _template(f), _QUOTE_FIX)


def _template(f: RowFacts) -> str | None:
    """fields.template_id of the row, from its facts (a row checked from its batch's columns has no dict)."""
    return template_id({"template_metadata": f.tm})


def _audit_hit(f: RowFacts, found: tuple[Any, ...]) -> Hit:
    """The finding, built once per (audit, template id, which list) and shared by the template's rows."""
    key = (_template(f), found is f.audit.errors, f.orx.kind)
    hit = f.audit.notes.get(key)
    if hit is None:
        hit = f.audit.notes[key] = _build_hit(f, found, key[0])
    return hit


def _build_hit(f: RowFacts, found: tuple[Any, ...], tid: str | None, fix: str | None = None) -> Hit:
    c = found[0]
    who = f"template {tid!r}" if tid else "the output_regex"
    more = f" ({len(found) - 1} more counterexamples)" if len(found) > 1 else ""
    fix = fix or f.audit.fix or _PROSE_FIX
    path = f.orx.paths()[c.pattern] if c.pattern < len(f.orx.patterns) else f.orx.whole
    return (
        render_path(path),
        (
            f"under NeMo Gym's matching ({FLAGS}; every match, the last one wins) {who} grades the answer "
            f"{quote(c.probe.text, 150)} as {c.got}, where a careful reader reads {c.probe.reader} "
            f"({_WHY[c.probe.kind]}){more}; fix: {fix}"
        ),
    )


@rule(
    "prompt_answer_format",
    ERROR,
    "the prompt's own answer-format example (`'Answer: \\boxed{{D}}'`, `\"ANSWER IS X\"`, `Answer: $LETTER`, "
    "`\\boxed{}`) filled with an option letter is not graded to that letter at all (neither by the row's "
    "output_regex nor by its grading mode after it): a response that does what the prompt asks is never rewarded",
    "make the output_regex (or the grading mode) read the format the prompt asks for, or change the prompt",
    guard=G_FORMAT,
)
def prompt_answer_format(f: RowFacts) -> Iterator[Hit]:
    yield from _format_hits(f, wrong=True)


@rule(
    "prompt_answer_format_regex",
    WARNING,
    "the row's output_regex does not read the prompt's own answer-format example (the grading mode reads it "
    "after the regex found nothing): the regex is not the row's grader for the format it asks for, and any "
    "text the regex does match elsewhere in a response decides first",
    "make the output_regex read the format the prompt asks for, or drop it",
    guard=G_FORMAT,
)
def prompt_answer_format_regex(f: RowFacts) -> Iterator[Hit]:
    yield from _format_hits(f, wrong=False)


def _format_hits(f: RowFacts, *, wrong: bool) -> Iterator[Hit]:
    """The first example whose filled-in answer is misgraded (`wrong`), or only missed by the regex."""
    hits = [(ex, m) for ex, m in f.formats if (m.got != m.letter) == wrong]
    for ex, m in hits[:1]:
        if not m.regex:
            graded = f"is graded {'as ' + m.got if m.got else 'as no letter'} by the grading mode {m.by}"
        elif m.by == "output_regex":
            graded = f"is graded as {m.got or 'no letter'} by the output_regex"
        else:
            after = (
                f"the grading mode {m.by} reads {m.got} after it"
                if m.got
                else f"nor by the grading mode {m.by}"
            )
            graded = f"is not read by the output_regex ({after})"
        more = f" ({len(hits) - 1} more examples)" if len(hits) > 1 else ""
        what = (
            "a response that follows the prompt is never rewarded"
            if wrong
            else "the output_regex is not what grades the format the prompt asks for"
        )
        fix = (
            "make the output_regex read that format or change the prompt"
            if m.regex
            else "use a grading mode (or an output_regex) that reads that format, or change the prompt"
        )
        yield (
            PROMPT_PATH,
            (
                f"the prompt asks for {ex.text!r} (character {ex.at}), but the answer {m.response!r} written that "
                f"way {graded}{more}: {what} as {m.letter}; {fix}"
            ),
        )
