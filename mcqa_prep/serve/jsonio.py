"""JSON in and out of the server: orjson where it is exact, the standard library where it is not.

orjson reads an integer beyond 64 bits as a float and refuses to write one, and refuses escaped lone
surrogates; the standard library handles both exactly. So every integer a client sends comes back as it was
sent (`123456789012345678901234567890`, never `1.2345678901234568e+29`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")


def dumps(doc: Any) -> bytes:
    """orjson, or the standard library for what orjson refuses (integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(doc)
    except TypeError:
        return json.dumps(doc, ensure_ascii=True, allow_nan=False).encode("ascii")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(body: bytes) -> Any:
    """The body as JSON (ValueError naming why not). orjson first; the standard library for valid JSON
    orjson refuses (escaped lone surrogates) or would change: orjson reads an integer beyond 64 bits as a
    float, so a body with a run of 19 or more digits is read by the standard library, which keeps every
    integer exact. NaN and Infinity are not JSON."""
    if _LONG_DIGITS.search(body) is None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            first: Exception = exc
    else:
        first = ValueError("an integer beyond 64 bits")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"the body is not UTF-8: byte 0x{body[exc.start]:02x} at offset {exc.start}"
        ) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("the body is nested too deeply") from None
    except ValueError:
        raise ValueError(f"the body is not JSON: {first}") from None
