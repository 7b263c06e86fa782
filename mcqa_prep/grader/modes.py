"""The one table of grading modes: every fact about a mode is a field of its row here, and every list of
modes and every per-mode choice elsewhere derives from it: the grader's dispatch, the CLI choices,
validation's rules (which modes a row may name, which NeMo Gym grades, what a compliant answer looks like,
which modes match option texts), prepare's stamping, convert's templates and their self-check. The schema
enums are tied to it by a test (tests/test_architecture.py), and tests/test_mode_table.py fails when a mode
name is compared, listed or keyed outside this module. Semantics of each mode: docs/design/grading.md."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Where a mode looks for the letter (convert's self-check skips a prompt the mode cannot read a letter from)
LAST_BOX = "last_box"  # the content of the last \boxed{}
ANSWER_LINE = "answer_line"  # the first 'Answer: X' line
MARKDOWN_ANSWER_LINES = "markdown_answer_lines"  # 'Answer:' lines with markdown around them, last first
FIRST_CHARACTER = "first_character"  # the response's first character
EVERY_FORMAT = "every_format"  # robust: every common way of stating an answer


@dataclass(frozen=True)
class Mode:
    name: str
    module: str  # the grader submodule that implements it
    function: str  # f(text, letters, template_metadata) -> Extraction
    row: bool  # a row may select it with its grading_mode (else: a policy override only)
    nemo_gym: bool  # NeMo Gym 0.7.0 grades rows in this mode
    summary: str
    reads: str  # where it looks for the letter (LAST_BOX, ANSWER_LINE, ...)
    answer: str  # a compliant answer naming the letter `%s` (what a positive control writes)
    answer_alone: bool = False  # a compliant response is the answer alone (no reasoning may precede it)
    option_texts: bool = False  # an option's text is an answer too (two equal texts make it ambiguous)
    word_capture_veto: bool = (
        False  # an output_regex capture glued to a word (the A of "Answer") is no answer
    )
    row_alternative: str | None = None  # an override-only mode: the row mode that reads answers most alike
    # it reads the response's context when the caller has it (grade_text's `prompt` and `incomplete`): the
    # rendered prompt, and whether the response was cut off. NeMo Gym's modes never do (parity).
    reads_context: bool = False

    @property
    def template(self) -> bool:
        """A convert template may declare it: a row mode that NeMo Gym grades."""
        return self.row and self.nemo_gym

    def response(self, letter: str) -> str:
        """A compliant response naming `letter`: the answer, after a line of reasoning unless it must stand
        alone."""
        answer = self.answer % letter
        return answer if self.answer_alone else "The other options do not fit.\n" + answer


MODES: tuple[Mode, ...] = (
    Mode(
        "strict_single_letter_boxed",
        "boxed",
        "extract_strict",
        row=True,
        nemo_gym=True,
        summary="one letter in the last \\boxed{}",
        reads=LAST_BOX,
        answer="\\boxed{%s}",
    ),
    Mode(
        "lenient_boxed",
        "boxed",
        "extract_lenient_boxed",
        row=True,
        nemo_gym=True,
        summary="strict, else option text in the last box",
        reads=LAST_BOX,
        answer="\\boxed{%s}",
        option_texts=True,
    ),
    Mode(
        "lenient_answer_colon",
        "answer_colon",
        "extract_answer_colon",
        row=True,
        nemo_gym=True,
        summary="the first 'Answer: X' line",
        reads=ANSWER_LINE,
        answer="Answer: %s",
        option_texts=True,
    ),
    # not in NeMo Gym 0.7.0's mcqa request model (its grading_mode literal: tests/test_serve_gym.py)
    Mode(
        "string_equals_mcqa",
        "string_equals",
        "extract_string_equals",
        row=True,
        nemo_gym=False,
        summary="the first character",
        reads=FIRST_CHARACTER,
        answer="%s",
        answer_alone=True,
    ),
    Mode(
        "robust",
        "robust",
        "extract_robust",
        row=True,
        nemo_gym=False,
        summary="mcqa-prep's reader of every common format",
        reads=EVERY_FORMAT,
        answer="Answer: %s",
        option_texts=True,
        word_capture_veto=True,
        reads_context=True,
    ),
    Mode(
        "lenient_answer_colon_md",
        "answer_colon",
        "extract_answer_colon_md",
        row=False,
        nemo_gym=True,
        summary="markdown-aware 'Answer:' lines, last first (server override)",
        reads=MARKDOWN_ANSWER_LINES,
        answer="Answer: %s",
        option_texts=True,
        row_alternative="lenient_answer_colon",
    ),
)
BY_NAME: dict[str, Mode] = {m.name: m for m in MODES}
DEFAULT_MODE = "strict_single_letter_boxed"
ROW_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.row)
OVERRIDE_MODES: tuple[str, ...] = ROW_MODES + tuple(m.name for m in MODES if not m.row)
OVERRIDE_ONLY_MODES: tuple[str, ...] = tuple(m.name for m in MODES if not m.row)
NOT_NEMO_GYM_MODES: tuple[str, ...] = tuple(m.name for m in MODES if not m.nemo_gym)
TEMPLATE_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.template)
OPTION_TEXT_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.option_texts)


def reads_context(name: str) -> bool:
    """Whether mode `name` reads the response's context (the prompt, a cut-off response); False for an unknown
    mode."""
    mode = BY_NAME.get(name)
    return mode is not None and mode.reads_context


def word_capture_veto(name: str) -> bool:
    """Whether mode `name` refuses an output_regex capture glued to a word (False for an unknown mode)."""
    mode = BY_NAME.get(name)
    return mode is not None and mode.word_capture_veto


class UnknownMode(ValueError):
    pass


@functools.cache
def mode_function(name: str) -> Callable[..., Any]:
    """The extraction function of a mode, imported on first use (a mode's import cost is paid only if used)."""
    mode = BY_NAME.get(name)
    if mode is None:
        raise UnknownMode(f"unknown grading mode {name!r}; expected one of {', '.join(OVERRIDE_MODES)}")
    fn: Callable[..., Any] = getattr(importlib.import_module(f"{__package__}.{mode.module}"), mode.function)
    return fn
