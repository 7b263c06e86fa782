"""The grader as a pure batch function over Arrow tables, for anyone's own pipeline (Ray Data's
`map_batches`, a Spark UDF): `rescore_batch(table, settings) -> table`.

Input rows (`file`, `line`, `json`: the row's JSONL bytes) in, rescored rows out (`line`: the rescored JSONL
bytes, and the row's outcome columns). It is `rows.rescore_row` applied row by row, so a row is rescored to
the same bytes wherever it runs:

    ds.map_batches(rescore_batch, fn_kwargs={"settings": settings}, batch_format="pyarrow")

Why JSON bytes and not an inferred schema (Ray Data's `read_json`): Arrow would infer one schema for all rows
(null-filled structs, merged int/float types, reordered keys, no integers beyond 64 bits, no NaN), so the rows
could not come out identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from operator import attrgetter
from typing import Any

from .._perf import streaming_gc
from ..io.readers import read_jsonl
from .rows import Outcome, Settings, rescore_row

__all__ = ["rescore_batch", "rows_table", "lines_table", "outcomes"]

_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _outcome_schema() -> Any:
    pa = _pa()
    kinds = {
        "reward": pa.float64(),
        "previous": pa.float64(),
        "joined": pa.bool_(),
        "format_miss": pa.bool_(),
        "replaced": pa.bool_(),
    }
    return pa.schema([(name, kinds.get(name, pa.string())) for name in _OUTCOME_FIELDS])


def rows_table(files: list[str], lines: list[int], raws: list[bytes]) -> Any:
    """The input table of `rescore_batch`: each row's file name, 1-based line and JSONL bytes."""
    pa = _pa()
    return pa.table(
        {
            "file": pa.array(files, pa.string()),
            "line": pa.array(lines, pa.int64()),
            "json": pa.array(raws, pa.large_binary()),
        }
    )


def rescore_batch(table: Any, settings: Settings) -> Any:
    """Rescore a batch of rows: `file`, `line`, `json` (bytes or text of one JSONL line; blank lines are not
    rows and give no output row) in; `line` (the rescored JSONL line, bytes) and the outcome columns
    (`rows.Outcome`'s fields) out, one row per input row, in order. Pure: the same rows give the same table in
    any process."""
    pa = _pa()
    out_lines: list[bytes] = []
    outs: list[Outcome] = []
    files = table.column("file").to_pylist()
    numbers = table.column("line").to_pylist()
    raws = [
        r.encode("utf-8", "surrogatepass") if type(r) is str else r for r in table.column("json").to_pylist()
    ]
    start, n = 0, len(raws)
    with streaming_gc():
        for j in range(1, n + 1):  # runs of consecutive lines of one file: one reader each, numbered as one
            if j < n and files[j] == files[start] and numbers[j] == numbers[j - 1] + 1:
                continue
            for rec in read_jsonl(raws[start:j], files[start], None, first_line=numbers[start]):
                line, outcome = rescore_row(rec, settings)
                out_lines.append(line)
                outs.append(outcome)
            start = j
    schema = _outcome_schema()
    arrays = [pa.array(out_lines, pa.large_binary())]
    arrays += [pa.array(list(map(attrgetter(f.name), outs)), f.type) for f in schema]
    return pa.Table.from_arrays(arrays, names=["line", *schema.names])


def outcomes(table: Any) -> Iterator[Outcome]:
    """The outcomes of a `rescore_batch` table (or of its outcome columns), in row order."""
    columns = [table.column(name).to_pylist() for name in _OUTCOME_FIELDS]
    for values in zip(*columns, strict=True):
        yield Outcome(**dict(zip(_OUTCOME_FIELDS, values, strict=True)))


def lines_table(data: bytes, name: str, first_line: int) -> Any:
    """The `rescore_batch` input table of JSONL bytes: one row per line (its newline kept, blank lines
    included), numbered from `first_line`; the lines are slices of `data`'s buffer, not copies."""
    import numpy as np

    pa = _pa()
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
    if data and (not len(ends) or ends[-1] != len(data)):
        ends = np.append(ends, len(data))  # a last line without a newline
    offsets = np.concatenate(([0], ends)).astype(np.int64)
    n = len(offsets) - 1
    json = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    numbers = pa.array(np.arange(first_line, first_line + n, dtype=np.int64))
    return pa.Table.from_arrays(
        [pa.array([name] * n, pa.string()), numbers, json], names=["file", "line", "json"]
    )
