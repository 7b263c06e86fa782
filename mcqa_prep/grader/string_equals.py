"""`string_equals_mcqa` (grading.md): the first character of the graded text is the choice.

String equality, as the scorer of that name does: no case folding, no skipping of markup. A first
character that is not an allowed letter makes the completion INVALID (recorded in `validity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import STATUS_NO_ANSWER, STATUS_OK
from .base import Extraction

RULE = "first_character"
VALID = "VALID"
INVALID = "INVALID"


def extract_string_equals(text: str, letters: Mapping[str, Any], template_metadata: Any = None) -> Extraction:
    """The first character when it is one of the allowed letters; otherwise no letter, validity INVALID."""
    if not text:
        return Extraction(None, STATUS_NO_ANSWER, RULE, validity=INVALID, message="empty completion")
    first = text[0]
    if first in letters:
        return Extraction(first, STATUS_OK, RULE, (0, 1), validity=VALID)
    return Extraction(
        None,
        STATUS_NO_ANSWER,
        RULE,
        (0, 1),
        message=f"first character {first!r} is not one of the choices {', '.join(letters) or '(none)'}",
        validity=INVALID,
    )
