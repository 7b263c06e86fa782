"""Values made JSON-safe, in one place: what every writer of a JSON document or a JSONL row does with a value
JSON has no form for (a NaN, a Parquet row's bytes, a decimal from a source, an error's structured details).

`json_safe(value, other)` returns a copy every JSON writer can write: NaN and +-Infinity as null (JSON has no
form for them), lists and tuples as lists, mapping keys as text, dates and times as ISO text (what orjson
writes for them), integers exact at any size, and every other value through `other`: null by default (a
rescored row drops what it cannot carry: the reader recorded it as a finding), or `as_text` (an error's
details, a converted row's source fields keep it readable: base64 bytes, decimal text, an object's
`to_dict()`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
from collections.abc import Callable, Mapping
from typing import Any


def null(value: Any) -> None:
    """`other` that drops a value JSON has no form for."""
    return None


def as_text(value: Any) -> Any:
    """`other` that keeps a value JSON has no form for, as text: bytes in base64, an object with `to_dict()`
    as that document, anything else as str() (a decimal's digits)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return json_safe(to_dict(), as_text)
    return str(value)


def json_safe(value: Any, other: Callable[[Any], Any] = null) -> Any:
    """A copy of `value` that every JSON writer can write (see the module's docstring)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else str(k): json_safe(x, other) for k, x in value.items()}
    if isinstance(value, list) or type(value) is tuple:
        return [json_safe(x, other) for x in value]
    if isinstance(value, (set, frozenset)):
        return [json_safe(x, other) for x in value]
    if isinstance(value, (_dt.date, _dt.time)):  # datetime is a date
        return value.isoformat()
    return other(value)  # bytes, decimals, durations, a tuple subclass (an Arrow interval), objects
