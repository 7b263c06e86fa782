"""Which group a dataset row belongs to, by a column the user names: the one reading of "source", "subject" and
any other column, shared by `curriculum` (domains) and `report` (breakdowns).

- `source`: the upstream dataset the row was converted from, as `convert` records it in `metadata.source`:
  the hub repo (with its config, `repo/config`), else the dataset name (`dataset`, the file name or
  `--dataset`), else the file; None when the row records no source.
- `subject`: `metadata.subject` (what `convert` writes from a subject/category column), else a top-level
  `subject`, else `metadata.source_fields.subject` (a column kept with `--map keep=...`).
- any other name: a dotted path into the row (`metadata.category`, `template_metadata.template_id`); when the
  row has no such top-level field, the same path under `metadata` (so `category` finds `metadata.category`)
  and under `metadata.source_fields`.

A value is text: strings as they are (stripped; empty is None), numbers and booleans as JSON writes them,
anything else as compact JSON cut to VALUE_CHARS characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .fields import NONE

SOURCE = "source"
SUBJECT = "subject"
MISSING = NONE  # a row with no value in the column
VALUE_CHARS = 80


def _text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip() or None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return orjson.dumps(v).decode()
    try:
        return orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()[:VALUE_CHARS]
    except TypeError:
        return str(v)[:VALUE_CHARS]


def _path(obj: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(obj, Mapping) or p not in obj:
            return None
        obj = obj[p]
    return obj


def source_of(row: Mapping[str, Any]) -> str | None:
    meta = row.get("metadata")
    src = meta.get("source") if isinstance(meta, Mapping) else None
    if isinstance(src, str):
        return _text(src)
    if not isinstance(src, Mapping):
        return None
    repo = _text(src.get("repo"))
    if repo is not None:
        config = _text(src.get("config"))
        return f"{repo}/{config}" if config else repo
    return _text(src.get("dataset")) or _text(src.get("file"))


def column_value(row: Mapping[str, Any], name: str) -> str | None:
    """The row's value in column `name` (see the module docstring), or None."""
    if name == SOURCE:
        return source_of(row)
    parts = name.split(".")
    candidates: tuple[list[str], ...]
    if name == SUBJECT:
        candidates = (["metadata", SUBJECT], [SUBJECT], ["metadata", "source_fields", SUBJECT])
    elif parts[0] in row:
        candidates = (parts,)
    else:
        candidates = (["metadata", *parts], ["metadata", "source_fields", *parts])
    for c in candidates:
        v = _text(_path(row, c))
        if v is not None:
            return v
    return None


def group_of(row: Mapping[str, Any], name: str) -> str:
    """column_value, with MISSING for a row that has no value."""
    v = column_value(row, name)
    return v if v is not None else MISSING
