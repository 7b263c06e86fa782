"""Row readers. Every input row comes out as a RowRecord: either parsed data or an error with its
address, never silently dropped. Memory stays flat: JSONL is read line by line, Parquet batch by batch."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from ..errors import InputError

DATA_SUFFIXES = (".jsonl", ".parquet")
PARQUET_BATCH_ROWS = 2048

_SPLIT_RE = re.compile(r"(?:^|[/_.-])(train|validation|valid|val|test|dev)(?=[/_.-]|$)", re.IGNORECASE)
_SPLIT_ALIASES = {"valid": "validation", "val": "validation", "dev": "validation"}
# (option keys, option texts) of one row, as the Parquet reader built its options (see iter_file_hinted)
OptionHint = tuple[list[str], list[str]]


@dataclass(slots=True)
class RowRecord:
    """One input row. `line` is the 1-based JSONL line or 1-based Parquet record number; `index` is the
    0-based row index within the file; exactly one of `data` and `error` is set."""

    file: str
    line: int
    index: int
    data: dict[str, Any] | None
    error: str | None = None
    split: str | None = None


def detect_split(path: str | Path, default: str = "train") -> str:
    """The split named in a file name (`train-00000-of-00004.parquet`, `validation.jsonl`), else default."""
    name = Path(str(path)).name
    m = _SPLIT_RE.search(name)
    if not m:
        return default
    s = m.group(1).lower()
    return _SPLIT_ALIASES.get(s, s)


def expand_inputs(paths: Iterable[str | Path]) -> list[Path | str]:
    """Files to read, in a stable order: files as given, directories recursively (sorted), '-' for stdin.

    Hidden files and directories (starting with '.') are skipped inside directories."""
    out: list[Path | str] = []
    for p in paths:
        if str(p) == "-":
            out.append("-")
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(
                f
                for f in path.rglob("*")
                if f.is_file()
                and f.suffix in DATA_SUFFIXES
                and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            if not found:
                raise InputError(f"{path}: directory holds no .jsonl or .parquet files")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return out


def iter_rows(paths: Iterable[str | Path], *, split: str | None = None) -> Iterator[RowRecord]:
    """Every row of every input, streamed. `split` forces the split; otherwise it comes from file names."""
    for f in expand_inputs(paths):
        yield from iter_file(f, split=split)


def iter_file(f: Path | str, *, split: str | None = None) -> Iterator[RowRecord]:
    if f == "-":
        yield from _iter_jsonl_stream(sys.stdin, "<stdin>", split or "train")
        return
    path = Path(f)
    sp = split or detect_split(path)
    if path.suffix == ".parquet":
        yield from _iter_parquet(path, sp)
    else:
        try:
            fh = open(path, encoding="utf-8", newline="")
        except OSError as exc:
            raise InputError(f"{path}: cannot open: {exc.strerror}") from None
        with fh:
            yield from _iter_jsonl_stream(fh, str(path), sp)


def _iter_jsonl_stream(fh, name: str, split: str) -> Iterator[RowRecord]:
    loads = json.loads
    index = 0
    lineno = 0
    while True:
        try:
            line = fh.readline()
        except UnicodeDecodeError as exc:
            lineno += 1
            yield RowRecord(name, lineno, index, None, f"not valid UTF-8: {exc.reason}", split)
            index += 1
            return  # the rest of a non-UTF-8 file cannot be trusted to split into lines
        if not line:
            return
        lineno += 1
        if not line.strip():
            continue
        try:
            data = loads(line)
        except json.JSONDecodeError as exc:
            yield RowRecord(
                name, lineno, index, None, f"not valid JSON: {exc.msg} (column {exc.colno})", split
            )
        else:
            if isinstance(data, dict):
                yield RowRecord(name, lineno, index, data, None, split)
            else:
                yield RowRecord(
                    name,
                    lineno,
                    index,
                    None,
                    f"a row must be a JSON object, got {type(data).__name__}",
                    split,
                )
        index += 1


def iter_file_hinted(
    f: Path | str, *, split: str | None = None
) -> Iterator[tuple[RowRecord, OptionHint | None]]:
    """iter_file's records, each with an option hint: for a Parquet row whose every option element became a
    single-key {letter: text} dict, the (keys, texts) lists those dicts were built from (texts are str), so
    a consumer that has not changed the row can skip re-deriving them; None for any other row."""
    if f != "-" and Path(f).suffix == ".parquet":
        path = Path(f)
        sp = split or detect_split(path)
        name = str(path)
        index = 0
        for rows, hints in _parquet_batches(path, hints=True):
            for data, hint in zip(rows, hints or repeat(None), strict=False):
                yield RowRecord(name, index + 1, index, data, None, sp), hint
                index += 1
    else:
        for rec in iter_file(f, split=split):
            yield rec, None


def _iter_parquet(path: Path, split: str) -> Iterator[RowRecord]:
    index = 0
    name = str(path)
    for rows, _ in _parquet_batches(path):
        for data in rows:
            yield RowRecord(name, index + 1, index, data, None, split)
            index += 1


def _parquet_batches(path: Path, hints: bool = False) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """(rows, option hints or None) per record batch; each row as batch.to_pylist() gives it, except that
    options are built column-wise (see _arrow_options) and their key comes last."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        built = _arrow_options(batch, hints)
        row_hints = None
        if built is not None:
            batch = batch.drop_columns(["options"])
        names = batch.schema.names
        columns = [c.to_pylist() for c in batch.columns]
        if built is not None:  # the options key comes last, as set on each row after to_pylist()
            names.append("options")
            columns.append(built[0])
            row_hints = built[1]
        if columns:
            # batch.to_pylist() row for row (key order, and the last column of a repeated name wins), with
            # one C-level zip per row instead of a dict comprehension indexing every column
            rows = [dict(zip(names, values, strict=False)) for values in zip(*columns, strict=False)]
        else:
            rows = batch.to_pylist()
        yield rows, row_hints


def _arrow_options(batch: Any, hints: bool = False) -> tuple[list[Any], list[Any] | None] | None:
    """The `options` column of a record batch in the canonical shape, built column-wise.

    Arrow stores options as list<struct<A, B, ..., J>>: every element carries every letter, nulls for
    the absent ones. Converting that to Python makes ten ten-key dicts per row, the dominant cost of
    reading. Here each element whose struct has exactly one non-null field becomes {letter: text}
    directly (the null keys would be dropped by every consumer anyway); any other element (no or several
    non-null fields) is kept exactly as stored, so validation still sees and reports it. Row and element
    positions are unchanged, so finding paths like $.options[2] stay exact. Returns (options per row,
    option hints per row when `hints`: see iter_file_hinted), or None when the column is absent or not
    list<struct<string...>>."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        col = batch.column("options")
    except KeyError:
        return None
    t = col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return None
    st = t.value_type
    kinds = [st.field(i).type for i in range(st.num_fields)]
    if not kinds or not all(pa.types.is_string(k) or pa.types.is_null(k) for k in kinds):
        return None
    import numpy as np

    names = [st.field(i).name for i in range(st.num_fields)]
    flat = col.flatten()  # StructArray of all elements (null list entries contribute nothing)
    # a letter that no row of the file offers is stored with the null type: cast it so coalesce can run
    fields = [
        f if pa.types.is_string(f.type) else f.cast(pa.string()) for f in map(flat.field, range(len(names)))
    ]
    if flat.null_count:  # a null element (not a struct): keep the row's exact Python value instead
        return None
    n = len(flat)
    texts = pc.coalesce(*fields).to_pylist() if n else []
    # non-null fields per element, from the validity bitmaps
    valid = np.stack([_validity(f, n) for f in fields]) if n else np.zeros((len(names), 0), bool)
    count = valid.sum(axis=0)
    first = valid.argmax(axis=0)
    letters = np.array(names, dtype=object)[first].tolist() if n else []
    elems: list[Any] = [{letter: text} for letter, text in zip(letters, texts, strict=True)]
    bad = np.nonzero(count != 1)[0]
    for j in bad.tolist():
        elems[j] = flat[j].as_py()  # exactly as stored, nulls included: validation explains it
    offsets = col.offsets.to_pylist()
    base = offsets[0] if offsets else 0
    if base:
        offsets = [o - base for o in offsets]
    slices = [*map(slice, offsets[:-1], offsets[1:])]
    out: list[Any] = [*map(elems.__getitem__, slices)]
    row_hints: list[Any] | None = None
    if hints:
        row_hints = [*zip(map(letters.__getitem__, slices), map(texts.__getitem__, slices), strict=False)]
        if len(bad):  # rows holding an element kept as stored get no hint
            for r in set((np.searchsorted(offsets, bad, side="right") - 1).tolist()):
                row_hints[r] = None
    if col.null_count:
        for r, ok in enumerate(col.is_valid().to_pylist()):
            if not ok:
                out[r] = None
                if row_hints is not None:
                    row_hints[r] = None
    return out, row_hints


def _validity(arr: Any, n: int) -> Any:
    """The validity of an Arrow array of length n as a numpy bool array, unpacked from its bitmap."""
    import numpy as np

    if arr.null_count == 0:
        return np.ones(n, bool)
    if arr.null_count == n:
        return np.zeros(n, bool)
    bitmap = arr.buffers()[0]
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + n].astype(bool)


def parquet_num_rows(path: str | Path) -> int:
    """Row count from the Parquet footer, without reading data."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
