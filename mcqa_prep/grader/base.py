"""The one shape every extraction function returns."""

from __future__ import annotations

from typing import NamedTuple

from ..records import Candidate


class Extraction(NamedTuple):
    """Result of one extraction family on one text.

    `letter` is an upper-case letter or None; `status` is a records.STATUS_* value ("ok" when a letter
    was found); `rule` names the rule that decided; `span` is the character span in the graded text.
    """

    letter: str | None
    status: str
    rule: str | None = None
    span: tuple[int, int] | None = None
    candidates: tuple[Candidate, ...] = ()
    message: str | None = None
    validity: str | None = None
