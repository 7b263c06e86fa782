"""Row readers. Every input row comes out as a RowRecord: either parsed data or an error with its
address, never silently dropped. Memory stays flat: JSONL is read line by line, Parquet batch by batch."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

DATA_SUFFIXES = (".jsonl", ".parquet")
PARQUET_BATCH_ROWS = 2048

_SPLIT_RE = re.compile(r"(?:^|[/_.-])(train|validation|valid|val|test|dev)(?=[/_.-]|$)", re.IGNORECASE)
_SPLIT_ALIASES = {"valid": "validation", "val": "validation", "dev": "validation"}


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


def _iter_parquet(path: Path, split: str) -> Iterator[RowRecord]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    index = 0
    name = str(path)
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        options = _arrow_options(batch)
        if options is not None:
            batch = batch.drop_columns(["options"])
        rows = batch.to_pylist()
        if options is not None:
            for data, opts in zip(rows, options, strict=True):
                data["options"] = opts
        for data in rows:
            yield RowRecord(name, index + 1, index, data, None, split)
            index += 1


def _arrow_options(batch: Any) -> list[Any] | None:
    """The `options` column of a record batch in the canonical shape, built column-wise.

    Arrow stores options as list<struct<A, B, ..., J>>: every element carries every letter, nulls for
    the absent ones. Converting that to Python makes ten ten-key dicts per row, the dominant cost of
    reading. Here each element whose struct has exactly one non-null field becomes {letter: text}
    directly (the null keys would be dropped by every consumer anyway); any other element (no or several
    non-null fields) is kept exactly as stored, so validation still sees and reports it. Row and element
    positions are unchanged, so finding paths like $.options[2] stay exact. None when the column is
    absent or not list<struct<string...>>."""
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
    valid = (
        np.stack([np.asarray(f.is_valid()) for f in fields]) if len(flat) else np.zeros((len(names), 0), bool)
    )
    count = valid.sum(axis=0)
    first = valid.argmax(axis=0)
    texts = pc.coalesce(*fields).to_pylist() if len(flat) else []
    letters = [names[i] for i in first.tolist()]
    elems: list[Any] = [{letter: text} for letter, text in zip(letters, texts, strict=True)]
    for j in np.nonzero(count != 1)[0].tolist():
        elems[j] = flat[j].as_py()  # exactly as stored, nulls included: validation explains it
    offsets = col.offsets.to_pylist()
    base = offsets[0] if offsets else 0
    valid_rows = col.is_valid().to_pylist() if col.null_count else None
    out: list[Any] = []
    for r in range(len(col)):
        if valid_rows is not None and not valid_rows[r]:
            out.append(None)
        else:
            out.append(elems[offsets[r] - base : offsets[r + 1] - base])
    return out


def parquet_num_rows(path: str | Path) -> int:
    """Row count from the Parquet footer, without reading data."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
