"""Where rescored lines go: the output file as JSONL (every shape), or, for `--output-shape grading` into a
`.parquet` file, a Parquet table with one column per field of a grading line (rows.GRADING_LINE_FIELDS).

The per-chunk work is the same for both: `rows.rescore_row` makes JSONL lines; for Parquet the parent reads
each chunk's lines back with Arrow's JSON reader under a fixed schema and writes them as one row group, so the
two forms of one run hold the same values row for row.
"""

from __future__ import annotations

import io
import os
from typing import Any

from ..io.paths import is_parquet
from .rows import GRADING_LINE_FIELDS, SHAPE_GRADING


def writes_parquet(shape: str, output: str | os.PathLike[str]) -> bool:
    """A grading-shape run into a file named *.parquet writes Parquet; everything else writes JSONL."""
    return shape == SHAPE_GRADING and str(output) != "-" and is_parquet(os.fspath(output))


def grading_schema() -> Any:
    import pyarrow as pa

    types = {"line": pa.int64(), "reward": pa.float64()}
    return pa.schema([pa.field(name, types.get(name, pa.string())) for name in GRADING_LINE_FIELDS])


class ParquetGrades:
    """The grading lines of a run as a Parquet file written to `out` (an open binary file): each chunk's
    lines become one row group, in the order they are written."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.schema = grading_schema()
        self.writer: Any = None

    def write(self, data: bytes) -> None:
        import pyarrow.json as pj
        import pyarrow.parquet as pq

        if not data:
            return
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pj.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="error"),
        )
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, self.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        import pyarrow.parquet as pq

        if self.writer is None:  # no row at all: still a valid (empty) table
            self.writer = pq.ParquetWriter(self.out, self.schema)
        self.writer.close()
