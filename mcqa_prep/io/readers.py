"""The one row reader, for every command: JSONL (files and stdin) and Parquet, streamed, as `records.Row`s.

Every input row comes out: parsed data, or an error with its file and line. Never a silently dropped row:
- JSONL is read as bytes, line by line (`\\n` ends a line, as JSONL says), and each line is decoded on its
  own, so an invalid byte, a bad line or a value nested too deeply is a finding on that line and the next
  line is read as usual. Blank lines are not rows. A UTF-8 byte-order mark on the first line is skipped.
- Lines are parsed with msgspec (integers of any size exactly, JSON only); a line it refuses is decided by
  the reference, `parse_exact`: orjson, or Python's json, which also reads what Python writes but JSON does
  not have (NaN, Infinity). Such non-finite numbers are listed on the row (`Row.nonfinite`) so that
  validation can report them. msgspec over orjson, measured on rescore's rows: the same decode time within a
  tenth, without the per-line digit scan orjson needs for integers beyond 64 bits (a third of the reader's
  time per line); tests/test_reader_decoder.py checks that both give the same value for every line.
- A row is only what every writer can write back: a value nested deeper than MAX_DEPTH levels (orjson,
  which every writer uses, writes no deeper) or a string holding a lone UTF-16 surrogate (`"\\ud800"`:
  Python's json reads it, but it has no UTF-8 form) is a finding on its line, like a line that is not JSON.
- Parquet is read batch by batch. Arrow fills every struct with every key: the `options` elements carry
  all letters (null for the absent ones) and a `template_metadata` struct carries every template key; the
  reader drops those filled-in nulls (options column-wise, see io/options.py), so a Parquet row reads
  like the JSONL row it stands for. What JSON has no form for is listed on the row as JSONL's NaN is:
  NaN/Infinity in floating columns (`Row.nonfinite`; Arrow keeps NaN apart from null, and a null is fine),
  and bytes, decimals, durations (`Row.foreign`). Only batches whose columns can hold such values and do
  are walked in Python (see batch_marks).
Memory stays flat: one line or one record batch at a time.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec
import orjson

from ..errors import InputError
from ..records import Row
from .options import arrow_options
from .paths import DEFAULT_SPLIT, STDIN, expand_inputs, is_parquet, split_of

PARQUET_BATCH_ROWS = 2048
STDIN_NAME = "<stdin>"
_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\n"  # the only whitespace JSON has: a line of form feeds or vertical tabs is not blank


def is_blank(raw: bytes) -> bool:
    """A JSONL line that holds no row (only JSON's whitespace); bytes.strip() would also take \v, \f and
    \x1c-\x1f for blank, and such a line would vanish without a finding (found by an audit)."""
    return not raw.strip(_JSON_SPACE)


def row_bytes(raw: bytes, first: bool) -> bytes | None:
    """The reader's rule for one JSONL line (`raw`, without its line end): the bytes read_jsonl decodes, without
    the byte order mark of the file's first line (`first`); None for a line that holds no row (is_blank). Who
    counts a file's rows ahead of reading them (convert on the engine) counts by it."""
    if first and raw.startswith(_BOM):
        raw = raw[3:]
    return raw if raw.strip(_JSON_SPACE) else None


# bytes -> b"0" for ASCII digits, b" " otherwise: a run of 19 digits may be an integer orjson cannot hold
# exactly (it reads one beyond 64 bits, or below -2**63, as a float)
_DIGITS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_INT = b"0" * 19
# The fast decoder of read_jsonl: msgspec reads integers of any size exactly (no digit scan needed) and refuses
# whatever JSON refuses (NaN, lone surrogates, control characters); anything it refuses is decided by
# parse_exact, the reference, so a line reads the same either way.
_DECODE = msgspec.json.Decoder().decode
# The deepest value a row may hold: orjson, which every writer uses, writes no deeper (255 levels and more
# raise), and anything deeper would fail only when written (a crash) instead of when read (a finding).
MAX_DEPTH = 254
# Every byte but the two that open a JSON container: `len(raw.translate(None, _NOT_OPENERS))` counts the
# openers in one pass over the line (two bytes.count passes cost half as much again, paid on every line).
_NOT_OPENERS = bytes(c for c in range(256) if c not in b"[{")
TOO_DEEP = f"not readable: the JSON value is nested too deeply (more than {MAX_DEPTH} levels)"


def iter_rows(paths: Iterable[str | Path], *, split: str | None = None) -> Iterator[Row]:
    """Every row of every input (files, directories, '-'), streamed. `split` forces the split."""
    for f in expand_inputs(paths, split=split):
        yield from iter_file(f.path, split=f.split)


def iter_file(f: Path | str, *, split: str | None = None) -> Iterator[Row]:
    """The rows of one data file ('-' is stdin, JSONL); the split defaults to the one its name says.
    Raises InputError when it cannot be opened at all."""
    if str(f) == STDIN:
        yield from read_jsonl(sys.stdin.buffer, STDIN_NAME, split or DEFAULT_SPLIT)
        return
    path = Path(f)
    sp = split or split_of(path.name)
    if is_parquet(path):
        yield from read_parquet(path, sp)
        return
    try:
        fh = open(path, "rb")
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a data file", reason="input_is_directory") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", reason="missing_input", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}", reason="input_unreadable") from None
    with fh:
        yield from read_jsonl(fh, str(path), sp)


def read_jsonl(
    lines: Iterable[bytes], name: str, split: str | None, *, first_line: int = 1, first_index: int = 0
) -> Iterator[Row]:
    """Rows of JSONL given as its lines (a binary file object, or block_lines(...)); `first_line` and
    `first_index` number a part that starts mid-file."""
    lineno = first_line - 1
    index = first_index
    decode = _DECODE
    for raw in _lines(lines, name):
        lineno += 1
        if raw[-1:] == b"\n":  # the same bytes whether the lines came from a file or from a split block
            raw = raw[:-1]
        if (value := row_bytes(raw, lineno == 1)) is None:
            continue
        raw = value
        nonfinite: tuple[str, ...] = ()
        try:
            data = decode(raw)
            error = None
            if len(raw.translate(None, _NOT_OPENERS)) > MAX_DEPTH and depth(data) > MAX_DEPTH:
                data, nonfinite, error = parse_exact(raw)
        except Exception:  # noqa: BLE001 - any refusal of the fast decoder: the reference decides the line
            data, nonfinite, error = parse_exact(raw)
        if error is not None:
            yield Row(name, lineno, index, None, error, split)
            index += 1
            continue
        if type(data) is dict:
            row = Row(name, lineno, index, data, None, split)
            if nonfinite:
                row.nonfinite = nonfinite
            yield row
        else:
            kind = "array" if isinstance(data, list) else type(data).__name__
            yield Row(
                name, lineno, index, None, f"a row must be a JSON object, got {_json_kind(kind)}", split
            )
        index += 1


def _json_kind(kind: str) -> str:
    return {
        "str": "a string",
        "int": "a number",
        "float": "a number",
        "bool": "a boolean",
        "NoneType": "null",
    }.get(kind, "an array" if kind == "array" else kind)


def _lines(lines: Iterable[bytes], name: str) -> Iterator[bytes]:
    try:
        yield from lines
    except OSError as exc:
        raise InputError(f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable") from None


def block_lines(fh: IO[bytes], on_block: Callable[[bytes], Any], block: int = 8 << 20) -> Iterator[bytes]:
    """The lines of a binary file read in large blocks, each block shown to `on_block` first (to hash the
    bytes while they are parsed: one pass over the file)."""
    rest = b""
    while chunk := fh.read(block):
        on_block(chunk)
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def parse_exact(raw: bytes) -> tuple[Any, tuple[str, ...], str | None]:
    """(value, NaN/Infinity paths, why the line is not a row's value, or None) of one non-blank line: the
    reference definition, which read_jsonl's fast decoder (msgspec) must agree with wherever it accepts a line
    (tests/test_reader_decoder.py). orjson, unless the line holds a run of 19 digits (an integer orjson may
    not hold exactly: beyond 64 bits, or below -2**63) or orjson refuses it; then Python's json."""
    try:
        if raw.translate(_DIGITS).find(_LONG_INT) >= 0:
            raise orjson.JSONDecodeError("long integer", "", 0)
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data, error = parse_fallback(raw)
        if error is not None:
            return None, (), error
        nonfinite, error = inspect_value(data)
        return (None, (), error) if error is not None else (data, nonfinite, None)
    if len(raw.translate(None, _NOT_OPENERS)) > MAX_DEPTH and depth(data) > MAX_DEPTH:
        return None, (), TOO_DEEP
    return data, (), None


def parse_fallback(raw: bytes) -> tuple[Any, str | None]:
    """(value, None) or (None, why): Python's json on one line orjson refused (or may not read exactly)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "not readable: the JSON value is nested too deeply"


MAX_DOCUMENT_BYTES = 64 << 20  # a manifest of a very large preparation is a few MB


def read_document(path: str | os.PathLike[str]) -> tuple[Any, str | None]:
    """A whole small JSON document (a manifest, a lock, a policy, a cache's or a job's record): (value, None),
    or (None, why its bytes are not a JSON value every writer can write: not UTF-8, not JSON, too deep, a lone
    surrogate). Each caller turns the reason into its own error; an OSError (no such file, permission)
    propagates."""
    return parse_document(document_bytes(path))


def read_own_document(path: str | os.PathLike[str]) -> Any:
    """A record this package wrote for itself (a cache's seal, a job's record): the document, or None when it
    is missing, unreadable or not a document (the caller then rebuilds or redoes what it vouched for)."""
    try:
        value, problem = read_document(path)
    except OSError:
        return None
    return None if problem is not None else value


def document_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a whole small document, for a reader that also keeps them (a manifest is hashed as read).
    At most MAX_DOCUMENT_BYTES + 1 are read (parse_document refuses that many): a policy pointed at an endless
    device (/dev/zero) must not eat the machine's memory (found by an audit)."""
    with open(path, "rb") as fh:
        return fh.read(MAX_DOCUMENT_BYTES + 1)


def parse_document(data: bytes) -> tuple[Any, str | None]:
    """read_document's answer for bytes already read (document_bytes)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None, f"larger than {MAX_DOCUMENT_BYTES:,} bytes: not a document this command reads"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"line {exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, TOO_DEEP
    _, problem = inspect_value(value)
    return (None, problem) if problem else (value, None)


def document_problem(doc: Any, schema_name: str) -> str | None:
    """Why `doc` (a whole document a command reads) is not a document of that schema (schema.SCHEMA_FILES),
    or None: a NaN/Infinity first (a number that is not one would reach the arithmetic), then the first schema
    violation; as "$.path: what [schema version]". Each reader makes it its error naming its file: one line,
    before anything of the document is used."""
    from ..schema import json_path, schema_version, validator

    version = schema_version(schema_name)
    for path in nonfinite_paths(doc):
        return f"{path}: NaN/Infinity is not a number [{version}]"
    errors = sorted(validator(schema_name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]  # its message quotes the value: at most 200 characters of it
    what = e.message if len(e.message) <= 200 else e.message[:197] + "..."
    return f"{json_path(e.absolute_path)}: {what} [{version}]"


def nonfinite_paths(value: Any, path: str = "$") -> Iterator[str]:
    """JSON paths of NaN / Infinity numbers inside a parsed value (JSON has none; Python's json writes them)."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if type(v) is float:
            if not math.isfinite(v):
                yield p
        elif type(v) is dict:
            stack.extend((x, f"{p}.{k}") for k, x in reversed(v.items()))
        elif type(v) is list:
            stack.extend((x, f"{p}[{i}]") for i, x in reversed(list(enumerate(v))))


def depth(value: Any) -> int:
    """How deeply containers nest in a value (a scalar is 0, `[]` is 1), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if type(v) is dict:
            v = v.values()
        elif type(v) is not list:
            continue
        deepest = max(deepest, d)
        stack.extend((x, d + 1) for x in v if type(x) in (dict, list))
    return deepest


def inspect_value(value: Any) -> tuple[tuple[str, ...], str | None]:
    """(NaN/Infinity paths, why the value is not a row every writer can write, or None) of a value parsed by
    Python's json: too deep, or a string (key or value) with a lone surrogate."""
    if depth(value) > MAX_DEPTH:
        return (), TOO_DEEP
    stack = [(value, "$")]
    while stack:
        v, p = stack.pop()
        if type(v) is str:
            if not _utf8(v):
                return (), f"not valid UTF-8 text: a lone surrogate escape (\\u{_surrogate(v):04x}) at {p}"
        elif type(v) is dict:
            for k, x in v.items():
                if not _utf8(k):
                    return (
                        (),
                        f"not valid UTF-8 text: a lone surrogate escape (\\u{_surrogate(k):04x}) in a key of {p}",
                    )
                stack.append((x, f"{p}.{k}"))
        elif type(v) is list:
            stack.extend((x, f"{p}[{i}]") for i, x in enumerate(v))
    return tuple(nonfinite_paths(value)), None


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(s: str) -> int:
    return next(ord(c) for c in s if 0xD800 <= ord(c) <= 0xDFFF)


# ---- Parquet --------------------------------------------------------------------------------------------


def read_parquet(
    path: Path, split: str | None, *, row_groups: list[int] | None = None, columns: list[str] | None = None
) -> Iterator[Row]:
    """Rows of a Parquet file (of some of its row groups; only some columns), numbered from 1 by record;
    rows whose options the reader built carry hints."""
    name = str(path)
    index = 0
    if row_groups:
        index = _rows_before(path, row_groups[0])
    for batch in parquet_batches(path, row_groups, columns):
        yield from batch_records(batch, name, split, index + 1, index)
        index += batch.num_rows


def batch_records(
    batch: Any, name: str, split: str | None, first_line: int, first_index: int
) -> Iterator[Row]:
    """The Rows of one Arrow record batch, numbered from `first_line` / `first_index`, with their option
    hints and the paths of their values JSON has no form for."""
    rows, hints = batch_rows(batch)
    marks = batch_marks(batch, rows)
    for i, data in enumerate(rows):
        row = Row(name, first_line + i, first_index + i, data, None, split, hints[i] if hints else None)
        if i in marks:
            row.nonfinite, row.foreign = marks[i]
        yield row


def open_parquet(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", reason="missing_input", path=str(path)) from None
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}", reason="unreadable_parquet") from None


def _rows_before(path: Path, group: int) -> int:
    md = open_parquet(path).metadata
    return sum(md.row_group(i).num_rows for i in range(group))


def parquet_num_rows(path: str | Path) -> int:
    """Row count from the Parquet footer, without reading data."""
    n: int = open_parquet(Path(path)).metadata.num_rows
    return n


def parquet_batches(
    path: Path, row_groups: list[int] | None, columns: list[str] | None = None
) -> Iterator[Any]:
    """The record batches of a Parquet file, any failure to read them as InputError."""
    import pyarrow as pa

    pf = open_parquet(path)
    try:
        yield from pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=row_groups, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path}: Parquet data cannot be read past this point: {exc}", reason="unreadable_parquet"
        ) from None


def batch_rows(batch: Any) -> tuple[list[Any], list[Any] | None]:
    """(rows, option hints or None) of one Arrow record batch, as the Parquet reader yields them."""
    built = arrow_options(batch)
    row_hints = None
    if built is not None:
        batch = batch.drop_columns(["options"])
    names = batch.schema.names
    columns = [c.to_pylist() for c in batch.columns]
    if "template_metadata" in names:
        k = names.index("template_metadata")
        columns[k] = [drop_nulls(tm) for tm in columns[k]]
    if built is not None:  # the options key comes last, as set on each row after to_pylist()
        names.append("options")
        columns.append(built[0])
        row_hints = built[1]
    if columns:
        # batch.to_pylist() row for row (key order, and the last column of a repeated name wins), with one
        # C-level zip per row instead of a dict comprehension indexing every column
        rows = [dict(zip(names, values, strict=False)) for values in zip(*columns, strict=False)]
    else:
        rows = batch.to_pylist()
    return rows, row_hints


# ---- values JSON has no form for ------------------------------------------------------------------------

_FLOAT, _FOREIGN = 1, 2
# Python values of Arrow types JSON has no form for (datetime, date and time are written as ISO strings)
FOREIGN_VALUES = (bytes, bytearray, memoryview, decimal.Decimal, datetime.timedelta)


def _kinds(t: Any) -> int:
    """_FLOAT when an Arrow type can hold a floating value, _FOREIGN when it can hold a value JSON has no
    form for (binary, decimal, duration, interval), anywhere inside it."""
    import pyarrow as pa

    if pa.types.is_floating(t):
        return _FLOAT
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or getattr(pa.types, "is_binary_view", lambda _: False)(t)
        or pa.types.is_decimal(t)
        or pa.types.is_duration(t)
        or pa.types.is_interval(t)
    ):
        return _FOREIGN
    if pa.types.is_struct(t):
        out = 0
        for i in range(t.num_fields):
            out |= _kinds(t.field(i).type)
        return out
    if pa.types.is_map(t):
        return _kinds(t.key_type) | _kinds(t.item_type)
    if pa.types.is_dictionary(t):
        return _kinds(t.value_type)
    value = getattr(t, "value_type", None)  # list, large_list, fixed_size_list, list_view
    return _kinds(value) if value is not None else 0


def _may_be_nonfinite(arr: Any) -> bool:
    """Whether a floating value anywhere in an Arrow array may be NaN or infinite (cheap, column-wise)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if not _kinds(t) & _FLOAT:
        return False
    if pa.types.is_floating(t):
        try:
            return bool(pc.any(pc.or_(pc.is_nan(arr), pc.is_inf(arr))).as_py())
        except pa.ArrowNotImplementedError:  # half floats: let the walk decide
            return True
    if pa.types.is_struct(t):
        return any(_may_be_nonfinite(arr.field(i)) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _may_be_nonfinite(arr.keys) or _may_be_nonfinite(arr.items)
    if pa.types.is_dictionary(t):
        return _may_be_nonfinite(arr.dictionary)
    if hasattr(arr, "flatten") and getattr(t, "value_type", None) is not None:
        return _may_be_nonfinite(arr.flatten())
    return True  # a container of floats this cannot look into column-wise: the walk decides


def batch_marks(batch: Any, rows: list[Any]) -> dict[int, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Row index -> (NaN/Infinity paths, paths of values JSON has no form for), for the rows of a batch that
    hold any. Only columns whose type can hold such values, and whose values do, are walked."""
    marks: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for name in marked_columns(batch):
        for i, row in enumerate(rows):
            nonfinite, foreign = odd_paths(row.get(name), f"$.{name}")
            if nonfinite or foreign:
                old = marks.get(i, ((), ()))
                marks[i] = (old[0] + nonfinite, old[1] + foreign)
    return marks


def marked_columns(batch: Any) -> list[str]:
    """The columns of a batch that may hold a value batch_marks lists (NaN/Infinity, or a value JSON has no
    form for), decided column-wise: a batch with none has no marks."""
    out = []
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        kinds = _kinds(col.type)
        if (kinds & _FLOAT and _may_be_nonfinite(col)) or (kinds & _FOREIGN and col.null_count < len(col)):
            out.append(name)
    return out


def odd_paths(value: Any, path: str = "$") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(NaN/Infinity paths, paths of bytes/decimal/duration values) inside a value read from Parquet."""
    nonfinite: list[str] = []
    foreign: list[str] = []
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if type(v) is float:
            if not math.isfinite(v):
                nonfinite.append(p)
        elif isinstance(v, FOREIGN_VALUES) or (isinstance(v, tuple) and type(v) is not tuple):
            foreign.append(p)  # a tuple subclass: an Arrow interval (MonthDayNano)
        elif type(v) is dict:
            stack.extend((x, f"{p}.{k}") for k, x in reversed(v.items()))
        elif type(v) in (list, tuple):
            stack.extend((x, f"{p}[{i}]") for i, x in reversed(list(enumerate(v))))
    return tuple(nonfinite), tuple(foreign)


def drop_nulls(tm: Any) -> Any:
    """A template_metadata struct from Parquet without the keys Arrow filled with null."""
    if type(tm) is dict and None in tm.values():
        return {k: v for k, v in tm.items() if v is not None}
    return tm
