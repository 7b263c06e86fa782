"""Deterministic, seeded mutations of valid bytes, and the oracle that says what a reader must make of them.

Every mutation is a pure function of (bytes, random.Random seeded by its name): the same try gives the same
bytes on every run and every machine. `rows_of` is the JSONL contract as the README states it, written
independently of the reader: `\\n` ends a line, blank lines are not rows, a UTF-8 BOM on the first line is
skipped; a row is one JSON object, anything else is a bad row that must be reported at its line.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"
INVALID_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80", b"\x80")


@dataclass(frozen=True)
class JsonlRow:
    line: int
    raw: bytes
    # one JSON object (JSON as Python reads it: NaN and big integers included); None: nested deeper than
    # Python's json reads, where a reader may read it or report it as too deep
    ok: bool | None


def rows_of(data: bytes) -> list[JsonlRow]:
    out = []
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if i == 1 and raw.startswith(BOM):
            raw = raw[3:]
        if not raw.strip():
            continue
        out.append(JsonlRow(i, raw, _is_object(raw)))
    return out


def _is_object(raw: bytes) -> bool | None:
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False
    except RecursionError:
        return None


def intact_lines(original: bytes, data: bytes) -> dict[int, bytes]:
    """Lines of `data` that hold an original row unchanged (first occurrences only), by line number: one bad
    row must not cost any of these."""
    want = {r.raw.strip() for r in rows_of(original)}
    out: dict[int, bytes] = {}
    seen: set[bytes] = set()
    for r in rows_of(data):
        key = r.raw.strip()
        if key in want and key not in seen:
            out[r.line] = key
        seen.add(key)
    return out


# ---- mutations -------------------------------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    return data.rstrip(b"\n").split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n"


def _middle(lines: list[bytes], rng: random.Random) -> int:
    return rng.randrange(1, max(2, len(lines) - 1)) if len(lines) > 2 else 0


def _edit_row(data: bytes, rng: random.Random, edit: Callable[[dict], None]) -> bytes:
    """Parse one middle row, edit it, and write it back with Python's json (NaN/Infinity as Python writes)."""
    lines = _lines(data)
    i = _middle(lines, rng)
    row = json.loads(lines[i])
    edit(row)
    lines[i] = json.dumps(row, ensure_ascii=False).encode("utf-8")
    return _join(lines)


def set_field(key: str, value_text: str) -> Callable[[bytes, random.Random], bytes]:
    """Replace field `key` of one middle row by raw JSON text (which may be what json cannot write)."""

    def mutate(data: bytes, rng: random.Random) -> bytes:
        lines = _lines(data)
        i = _middle(lines, rng)
        row = json.loads(lines[i])
        row[key] = "__HOLE__"
        lines[i] = (
            json.dumps(row, ensure_ascii=False)
            .encode("utf-8")
            .replace(b'"__HOLE__"', value_text.encode("utf-8"))
        )
        return _join(lines)

    return mutate


def bitflips(n: int) -> Callable[[bytes, random.Random], bytes]:
    def mutate(data: bytes, rng: random.Random) -> bytes:
        b = bytearray(data)
        for _ in range(n):
            pos = rng.randrange(len(b))
            b[pos] ^= 1 << rng.randrange(8)
        return bytes(b)

    return mutate


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(1, len(data))]


def insert_invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = _middle(lines, rng)
    pos = lines[i].find(b'"content": "') + len(b'"content": "')
    pos = pos if pos >= len(b'"content": "') else len(lines[i]) // 2
    lines[i] = lines[i][:pos] + rng.choice(INVALID_UTF8) + lines[i][pos:]
    return _join(lines)


def invalid_utf8_everywhere(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(5):
        b[rng.randrange(len(b))] = rng.choice((0xFF, 0xFE, 0xC0, 0x80))
    return bytes(b)


def nul_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(4):
        b.insert(rng.randrange(len(b)), 0)
    return bytes(b)


def crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", b"\r\n")


def cr_only(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", b"\r")


def bom(data: bytes, rng: random.Random) -> bytes:
    return BOM + data


def bom_mid_file(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = _middle(lines, rng)
    lines[i] = BOM + lines[i]
    return _join(lines)


def utf16(data: bytes, rng: random.Random) -> bytes:
    return data.decode("utf-8").encode("utf-16")


def giant_line(data: bytes, rng: random.Random) -> bytes:
    """A valid row longer than a worker chunk (parallel.JSONL_CHUNK_BYTES, 2 MiB)."""

    def edit(row: dict) -> None:
        row["metadata"] = {"blob": "x" * (3 << 20)}

    return _edit_row(data, rng, edit)


def deep(depth: int, kind: str = "list") -> Callable[[bytes, random.Random], bytes]:
    opening, closing = ("[" * depth, "]" * depth) if kind == "list" else ('{"a":' * depth + "1", "}" * depth)
    key = "metadata" if depth < 100_000 else "options"
    return set_field(key, opening + closing)


def duplicate_keys(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = _middle(lines, rng)
    lines[i] = lines[i].rstrip()[:-1] + b', "expected_answer": "Z", "options": 7}'
    return _join(lines)


def interleaved_blank_lines(data: bytes, rng: random.Random) -> bytes:
    return b"\n \n\t\n".join(_lines(data)) + b"\n\n"


def non_object_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    for junk in (b"[1, 2]", b'"a string"', b"null", b"42", b"true"):
        lines.insert(rng.randrange(len(lines) + 1), junk)
    return _join(lines)


def garbage_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    junk = bytes(rng.randrange(256) for _ in range(200)).replace(b"\n", b" ")
    lines.insert(_middle(lines, rng), junk)
    return _join(lines)


def duplicate_rows(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    return _join(lines + lines[: max(1, len(lines) // 2)])


def no_final_newline(data: bytes, rng: random.Random) -> bytes:
    return data.rstrip(b"\n")


def empty(data: bytes, rng: random.Random) -> bytes:
    return b""


def whitespace_only(data: bytes, rng: random.Random) -> bytes:
    return b"\n  \n\t\r\n" + BOM


def control_escapes(data: bytes, rng: random.Random) -> bytes:
    return set_field("expected_answer", '"\\u0000B\\u202e"')(data, rng)


# JSONL mutations by name. The names are the ids of the tries (stable across runs).
JSONL_MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "bitflip-1": bitflips(1),
    "bitflip-8": bitflips(8),
    "bitflip-64": bitflips(64),
    "truncate": truncate,
    "invalid-utf8-in-a-string": insert_invalid_utf8,
    "invalid-utf8-anywhere": invalid_utf8_everywhere,
    "nul-bytes": nul_bytes,
    "crlf": crlf,
    "cr-only": cr_only,
    "bom": bom,
    "bom-mid-file": bom_mid_file,
    "utf16": utf16,
    "giant-line": giant_line,
    "deep-200": deep(200),
    "deep-300-objects": deep(300, "object"),
    "deep-1000": deep(1000),
    "deep-1100": deep(1100),
    "deep-100k": deep(100_000),
    "duplicate-keys": duplicate_keys,
    "nan": set_field("expected_answer", "NaN"),
    "infinity-in-metadata": set_field("metadata", '{"score": -Infinity, "x": [Infinity]}'),
    "1e400": set_field("uuid", "1e400"),
    "huge-int": set_field("expected_answer", "1" + "0" * 40),
    "huge-int-in-metadata": set_field("metadata", '{"n": ' + "9" * 400 + ', "m": -18446744073709551617}'),
    "lone-surrogate": set_field("uuid", '"\\ud800x"'),
    "control-escapes": control_escapes,
    "blank-lines": interleaved_blank_lines,
    "non-object-lines": non_object_lines,
    "garbage-line": garbage_line,
    "duplicate-rows": duplicate_rows,
    "no-final-newline": no_final_newline,
    "empty": empty,
    "whitespace-only": whitespace_only,
}


def mutated(name: str, data: bytes, mutations: dict = JSONL_MUTATIONS) -> bytes:
    return mutations[name](data, random.Random(f"hostile:{name}"))
