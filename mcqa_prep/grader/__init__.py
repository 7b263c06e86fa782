"""The bundled grader: pure functions, no I/O, no click, no hub, no datasets.

Public API:
    GRADER_VERSION, ROW_MODES, OVERRIDE_MODES, DEFAULT_MODE
    response_text(response) -> str | None
    grade_text(text, options, expected_answer, grading_mode=None, template_metadata=None, *, override=None,
               prompt=None, incomplete=None)

Semantics: shared/docs/grading.md (kept in docs/design/grading.md of this repo). Any change of grading
behaviour bumps GRADER_VERSION in the same commit as the golden files that show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import (
    STATUS_INVALID_REGEX,
    STATUS_INVALID_ROW,
    STATUS_NO_RESPONSE,
    STATUS_OK,
    STATUS_OUT_OF_RANGE,
    STATUS_REGEX_TIMEOUT,
    Candidate,
    GradeResult,
)
from .base import Extraction
from .custom_regex import extract_custom
from .letters import allowed_letters, normalize_gold
from .modes import (
    DEFAULT_MODE,
    OVERRIDE_MODES,
    ROW_MODES,
    UnknownMode,
    mode_function,
    reads_context,
    word_capture_veto,
)

__all__ = [
    "GRADER_VERSION",
    "DEFAULT_MODE",
    "ROW_MODES",
    "OVERRIDE_MODES",
    "DEFAULT_REGEX_TIMEOUT",
    "response_text",
    "grade_text",
    "effective_mode",
    "mode_function",
]

GRADER_VERSION = "1.11.0"

DEFAULT_REGEX_TIMEOUT = 0.5  # seconds per response, over all its patterns; see custom_regex


def response_text(response: Any) -> str | None:
    """The graded text of a Responses API response: every output_text part of every message output
    item, concatenated with no separator, then stripped. None when `response` is not an object."""
    if not isinstance(response, Mapping):
        return None
    from .selection import collect_output

    return collect_output(response)[0].strip()


def effective_mode(grading_mode: Any, override: str | None, default: str = DEFAULT_MODE) -> str:
    """Override, else the row's grading_mode (any non-empty string: an unknown one makes the row
    invalid_row in grade_text), else the default."""
    if override:
        return override
    if isinstance(grading_mode, str) and grading_mode:
        return grading_mode
    return default


def grade_text(
    text: str | None,
    options: Any,
    expected_answer: Any,
    grading_mode: Any = None,
    template_metadata: Any = None,
    *,
    override: str | None = None,
    default_mode: str = DEFAULT_MODE,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    prompt: str | None = None,
    incomplete: str | None = None,
) -> GradeResult:
    """Grade one already-selected text. Never raises on bad data: returns a typed status instead.

    `prompt` (the rendered prompt the response answers) and `incomplete` (why the response was cut off, e.g.
    "max_output_tokens", when the caller knows it was) are the response's context: only a mode that reads it
    (modes.Mode.reads_context: `robust`) is given them; NeMo Gym's modes grade the text alone, as NeMo Gym
    does."""
    gold = normalize_gold(expected_answer)
    mode = effective_mode(grading_mode, override, default_mode)
    if not text:
        return GradeResult(0.0, None, gold, STATUS_NO_RESPONSE, mode, grader_version=GRADER_VERSION)
    letters = allowed_letters(options)

    custom: Extraction | None = None
    vetoed: tuple[Candidate, ...] = ()
    # type(...) is dict first: the Mapping ABC check is a Python-level call, paid per row
    tm_map = type(template_metadata) is dict or (
        template_metadata is not None and isinstance(template_metadata, Mapping)
    )
    if tm_map and template_metadata and "output_regex" in template_metadata:
        custom = extract_custom(text, template_metadata.get("output_regex"), letters, timeout=regex_timeout)
        if (
            word_capture_veto(mode)
            and custom.status in (STATUS_OK, STATUS_OUT_OF_RANGE)
            and _word_part(text, custom)
        ):
            # robust reads commitments: a captured letter glued to a word (the "A" of "Answer") is none
            # (modes.Mode.word_capture_veto)
            vetoed = (Candidate(custom.rule or "output_regex", custom.span, None, "a letter inside a word"),)  # type: ignore[arg-type]
        elif custom.letter is not None or custom.status in (STATUS_OUT_OF_RANGE, STATUS_REGEX_TIMEOUT):
            # A captured letter outside the options still decides the row: NeMo Gym returns it and never
            # tries the mode (parity suite: p_tm_letter_not_allowed_gold_B). A timed-out pattern decides
            # too: what it would have matched is unknown, so the mode's answer would be a guess.
            return _result(custom, gold, "output_regex")

    try:
        fn = mode_function(mode)
    except UnknownMode as exc:
        return GradeResult(
            0.0, None, gold, STATUS_INVALID_ROW, mode, message=str(exc), grader_version=GRADER_VERSION
        )
    if (prompt or incomplete) and reads_context(mode):
        ext = fn(text, letters, template_metadata if tm_map else None, prompt=prompt, incomplete=incomplete)
    else:
        ext = fn(text, letters, template_metadata if tm_map else None)
    if vetoed:
        ext = ext._replace(candidates=vetoed + ext.candidates)
    if ext.letter is None and custom is not None and custom.status == STATUS_INVALID_REGEX:
        # the custom regex's failure is the more useful explanation than the mode's "no_answer"
        return _result(custom._replace(candidates=custom.candidates + ext.candidates), gold, "output_regex")
    return _result(ext, gold, mode)


def _word_part(text: str, custom: Extraction) -> bool:
    from .robust import custom_capture_is_word_part

    return custom_capture_is_word_part(text, custom.span)


_new = tuple.__new__  # a GradeResult without its Python-level __new__: one result per row on the hot path


def _result(ext: Extraction, gold: str, mode: str) -> GradeResult:
    letter = ext.letter
    reward = 1.0 if (letter is not None and gold and letter == gold) else 0.0
    if letter is None and ext.status == STATUS_OUT_OF_RANGE and mode == "output_regex" and gold:
        # Reward parity with NeMo Gym for a row whose gold is itself outside the options: the regex captured
        # exactly the gold, NeMo Gym rewards 1. No letter is returned (deviation 1); validate flags the row.
        if ext.candidates and ext.candidates[-1].letter == gold:
            reward = 1.0
    status = ext.status if letter is None else STATUS_OK
    # the fields in GradeResult's order: reward, extracted_answer, expected_answer, status, mode, rule, span,
    # message, validity, candidates, grader_version
    return _new(
        GradeResult,
        (reward, letter, gold, status, mode, ext.rule, ext.span, ext.message, ext.validity, ext.candidates,
         GRADER_VERSION),
    )  # fmt: skip
