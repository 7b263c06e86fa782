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
        for data in batch.to_pylist():
            yield RowRecord(name, index + 1, index, data, None, split)
            index += 1


def parquet_num_rows(path: str | Path) -> int:
    """Row count from the Parquet footer, without reading data."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
