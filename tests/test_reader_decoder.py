"""The JSONL reader's fast decoder (msgspec) against its reference (`io/readers.parse_exact`: orjson, Python's
json for NaN and long integers): every line reads to the same row, the same value of the same types in the
same key order, the same NaN paths, the same error, whatever the bytes (docs/design/performance.md: why msgspec)."""

from __future__ import annotations

import json
import math

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcqa_prep.io.readers import MAX_DEPTH, TOO_DEEP, parse_exact, read_jsonl


def canon(v):
    """A value with its types spelled out (1, 1.0 and True differ; -0.0 and 0.0 differ; key order counts)."""
    if isinstance(v, dict):
        return ("dict", [(canon(k), canon(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [canon(x) for x in v])
    if isinstance(v, float):
        return ("float", repr(v))
    return (type(v).__name__, v)


def read_one(raw: bytes):
    rows = list(read_jsonl([raw], "f.jsonl", None, first_line=2))  # (a BOM is skipped on line 1 only)
    assert len(rows) <= 1
    if not rows:
        return None
    r = rows[0]
    return canon(r.data), r.error, tuple(r.nonfinite)


def reference(raw: bytes):
    """What read_jsonl gives for a line by the reference decoder alone."""
    if not raw.strip(b" \t\r\n"):
        return None
    data, nonfinite, error = parse_exact(raw)
    if error is None and type(data) is not dict:
        kind = "array" if isinstance(data, list) else type(data).__name__
        names = {"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}
        error = (
            f"a row must be a JSON object, got {names.get(kind, 'an array' if kind == 'array' else 'null')}"
        )
    if error is not None:
        return canon(None), error, ()
    return canon(data), None, tuple(nonfinite)


BIG = st.integers(min_value=-(2**130), max_value=2**130)
EDGES = st.sampled_from(
    [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -(2**64), 10**19, -(10**18) * 9]
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [5e-324, 2.2250738585072014e-308, 1e308]
)
SCALARS = st.none() | st.booleans() | BIG | EDGES | FLOATS | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _dumps(value, style: int) -> bytes:
    if style == 0:
        return json.dumps(value).encode()  # ASCII escapes, spaces after separators
    if style == 1:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=8), VALUES, max_size=6), st.integers(0, 2))
def test_rows_written_by_any_writer_read_the_same(row, style):
    raw = _dumps(row, style)
    assert read_one(raw) == reference(raw)


@settings(max_examples=600, deadline=None)
@given(VALUES, st.integers(0, 2))
def test_any_top_level_value_reads_the_same(value, style):
    raw = _dumps(value, style)
    assert read_one(raw) == reference(raw)


SAMPLE = (
    b'{"uuid":"resp_406061000404979303486b1","n":-9223372036854775809,"x":[1.5e-7,2E+3,-0.0,1e-400],'
    b'"t":"\\ud83d\\ude00 \\u00e9 \xc3\xa9","o":[{"A":"a"},{"B":null}],"b":true}'
)
PIECES = st.sampled_from(
    [b"NaN", b"Infinity", b"-Infinity", b"\\ud800", b"\\udc00\\ud800", b"\x01", b"\xff", b"\xed\xa0\x80", b"01",
     b"1.", b".5", b"+1", b"1e400", b",", b"]", b"}", b"[", b"{", b'"', b"\\", b"\\u00", b" ", b"\t", b"\x0c",
     b"\r", b"123456789012345678901234", b"-9223372036854775809", b"tru", b"null", b"\xef\xbb\xbf"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(SAMPLE)), st.integers(0, 3), PIECES | st.binary(max_size=3)), max_size=4
    )
)
def test_damaged_lines_read_the_same(edits):
    """Bytes inserted into, or put in place of bytes of, a valid line: refused or read, alike."""
    raw = SAMPLE
    for at, cut, piece in edits:
        at = min(at, len(raw))
        raw = raw[:at] + piece + raw[at + cut :]
    if b"\n" in raw:
        return  # a line holds no newline (the reader splits on it)
    assert read_one(raw) == reference(raw)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40).filter(lambda b: b"\n" not in b))
def test_any_bytes_read_the_same(raw):
    assert read_one(raw) == reference(raw)


def test_the_edges_each_decoder_treats_its_own_way():
    """Depth (orjson stops at 1024 levels, msgspec at Python's recursion limit, rows at MAX_DEPTH), NaN,
    lone surrogates and integers orjson would read as floats: the same row either way."""
    for n in (MAX_DEPTH, MAX_DEPTH + 1, 999, 1024, 1025, 5000):
        for raw in (b'{"a":' + b"[" * n + b"]" * n + b"}", b'{"a":' + b'{"b":' * n + b"1" + b"}" * n + b"}"):
            assert read_one(raw) == reference(raw)
    assert read_one(b'{"a":' + b"[" * 300 + b"]" * 300 + b"}")[1] == TOO_DEEP
    row = read_one(b'{"a": NaN, "b": [1, -Infinity]}')
    assert row[1] is None and row[2] == ("$.a", "$.b[1]")
    assert "lone surrogate" in read_one(b'{"a": "\\ud800"}')[1]
    for n in (-(2**63) - 1, 2**64, -(2**200), 10**40):
        data = read_one(b'{"n": %d}' % n)[0]
        assert data == ("dict", [(("str", "n"), ("int", n))])  # exact, never a float
    assert math.isinf(json.loads("1e400"))
