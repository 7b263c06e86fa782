"""The one table of grading modes. Every list of modes derives from it: the grader's dispatch, the CLI
choices, validation's rules, prepare's stamping; the schema enums are tied to it by a test
(tests/test_architecture.py). Semantics of each mode: docs/grading.md."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mode:
    name: str
    module: str  # the grader submodule that implements it
    function: str  # f(text, letters, template_metadata) -> Extraction
    row: bool  # a row may select it with its grading_mode (else: a policy override only)
    nemo_gym: bool  # NeMo Gym 0.7.0 grades rows in this mode
    summary: str


MODES: tuple[Mode, ...] = (
    Mode(
        "strict_single_letter_boxed",
        "boxed",
        "extract_strict",
        True,
        True,
        "one letter in the last \\boxed{}",
    ),
    Mode(
        "lenient_boxed",
        "boxed",
        "extract_lenient_boxed",
        True,
        True,
        "strict, else option text in the last box",
    ),
    Mode(
        "lenient_answer_colon",
        "answer_colon",
        "extract_answer_colon",
        True,
        True,
        "the first 'Answer: X' line",
    ),
    Mode("string_equals_mcqa", "string_equals", "extract_string_equals", True, True, "the first character"),
    Mode("robust", "robust", "extract_robust", True, False, "mcqa-prep's reader of every common format"),
    Mode(
        "lenient_answer_colon_md",
        "answer_colon",
        "extract_answer_colon_md",
        False,
        True,
        "markdown-aware 'Answer:' lines, last first (server override)",
    ),
)
BY_NAME: dict[str, Mode] = {m.name: m for m in MODES}
DEFAULT_MODE = "strict_single_letter_boxed"
ROW_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.row)
OVERRIDE_MODES: tuple[str, ...] = ROW_MODES + tuple(m.name for m in MODES if not m.row)
OVERRIDE_ONLY_MODES: tuple[str, ...] = tuple(m.name for m in MODES if not m.row)
NOT_NEMO_GYM_MODES: tuple[str, ...] = tuple(m.name for m in MODES if not m.nemo_gym)


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
