"""The fields of a row that every command reads, each read by one rule, with one "none" value.

- **The template id** (`template_id`): `template_metadata.template_id` when it is a non-empty string (the
  row schema's type: a string or null); None for anything else (absent, null, empty, a number). A rollout
  joined with its dataset row at rescore time carries it in its grading (`metadata.grading.template_id`),
  read when the row itself names none.
- **The split** of a row is the split of its file (`records.Row.split`, from `io.paths.split_of`;
  `io.paths.DEFAULT_SPLIT` for stdin).

`NONE` is how a report or a count names the rows that have no value for a field it groups them by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

NONE = "(none)"


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(x, Mapping), with the usual dict and None decided without the ABC's Python-level check."""
    return type(x) is dict or (x is not None and isinstance(x, Mapping))


def template_id(row: Mapping[str, Any], grading: Mapping[str, Any] | None = None) -> str | None:
    """The row's template id (its `template_metadata`, else the `grading` a rescore joined it with), or None."""
    tm = row.get("template_metadata")
    tid = tm.get("template_id") if _is_map(tm) else None
    if type(tid) is str and tid:
        return tid
    if grading is not None:
        tid = grading.get("template_id")
        if type(tid) is str and tid:
            return tid
    return None
