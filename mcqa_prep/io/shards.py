"""Shard writers: rows of each split into numbered shard files, hashed and counted while written (nothing
is re-read for the manifest), JSONL first and converted to Parquet when asked.

Shards get temporary names while they are written (the number of shards per split is known only at the
end) and their final names `<split>-00000-of-0000N.<fmt>` from `finish()`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .writers import output_error

WRITE_CHUNK = 1 << 20


class HashingWriter:
    """A binary file that hashes and counts what goes through it; lines are buffered into large writes."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._fh = open(path, "wb")
        except OSError as exc:
            raise output_error(exc, path) from None
        self._h = hashlib.sha256()
        self.bytes = 0
        self.rows = 0
        self._buf: list[bytes | memoryview] = []
        self._buffered = 0
        self.sha256 = ""

    def write_line(self, line: bytes) -> None:
        self.write_lines(line, 1)

    def write_lines(self, data: bytes | memoryview, rows: int) -> None:
        """`rows` whole lines at once (`data` ends with a newline)."""
        self._buf.append(data)
        self._buffered += len(data)
        self.rows += rows
        if self._buffered >= WRITE_CHUNK:
            self._flush()

    def write(self, data: bytes) -> int:  # file-like, for pyarrow's ParquetWriter
        self._flush()
        self._put(data)
        return len(data)

    def _put(self, data: bytes | memoryview) -> None:
        try:
            self._fh.write(data)
        except OSError as exc:
            raise output_error(exc, self.path) from None
        self._h.update(data)
        self.bytes += len(data)

    def _flush(self) -> None:
        if self._buf:
            data = self._buf[0] if len(self._buf) == 1 else b"".join(self._buf)  # one block: no copy
            self._buf.clear()
            self._buffered = 0
            self._put(data)

    def close(self) -> str:
        self._flush()
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        except OSError as exc:
            raise output_error(exc, self.path) from None
        self.sha256 = self._h.hexdigest()
        return self.sha256

    # pyarrow's PythonFile wants these
    closed = False

    def flush(self) -> None:
        self._flush()

    def tell(self) -> int:
        return self.bytes + self._buffered


@dataclass
class Shard:
    split: str
    index: int
    tmp: Path
    fmt: str
    sha256: str = ""
    rows: int = 0
    bytes: int = 0
    final: str = ""

    def entry(self) -> dict[str, Any]:
        """The shard as the manifest lists it."""
        return {
            "path": self.final,
            "kind": "shard",
            "split": self.split,
            "format": self.fmt,
            "sha256": self.sha256,
            "rows": self.rows,
            "bytes": self.bytes,
        }


class SplitWriter:
    """Rows of one split (as JSONL lines) into temporary shard files of at most shard_rows rows each."""

    def __init__(
        self,
        directory: Path,
        split: str,
        shard_rows: int,
        fmt: str,
        on_shard_closed: Callable[[], Any] = lambda: None,
    ):
        self.directory = directory
        self.split = split
        self.shard_rows = shard_rows
        self.fmt = fmt
        self.shards: list[Shard] = []
        self._w: HashingWriter | None = None
        self._on_closed = on_shard_closed

    def _current(self) -> HashingWriter:
        if self._w is None:
            n = len(self.shards)
            shard = Shard(self.split, n, self.directory / f".part-{self.split}-{n:05d}.jsonl", self.fmt)
            self.shards.append(shard)
            self._w = HashingWriter(shard.tmp)
        return self._w

    def write(self, line: bytes) -> None:
        w = self._current()
        w.write_line(line)
        if w.rows >= self.shard_rows:
            self._close_current()

    def write_run(self, data: memoryview, sizes: list[int]) -> None:
        """Whole lines at once: `data` is their bytes in order (a view: cut without copies), `sizes` the
        length of each; shards are cut exactly where write() would cut them."""
        at = 0
        k = 0
        while k < len(sizes):
            w = self._current()
            take = sizes[k : k + self.shard_rows - w.rows]
            end = at + sum(take)
            w.write_lines(data[at:end], len(take))
            at, k = end, k + len(take)
            if w.rows >= self.shard_rows:
                self._close_current()

    def _close_current(self) -> None:
        if self._w is None:
            return
        shard = self.shards[-1]
        shard.sha256 = self._w.close()
        shard.rows, shard.bytes = self._w.rows, self._w.bytes
        self._w = None
        if self.fmt == "parquet":
            jsonl_to_parquet(shard)
        self._on_closed()

    def finish(self) -> list[Shard]:
        """Close the last shard and give every shard its final name; returns the shards."""
        self._close_current()
        n = len(self.shards)
        for s in self.shards:
            s.final = f"{self.split}-{s.index:05d}-of-{n:05d}.{self.fmt}"
            try:
                os.rename(s.tmp, self.directory / s.final)
            except OSError as exc:
                raise output_error(exc, self.directory / s.final) from None
        return self.shards

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.shards) + (self._w.rows if self._w is not None else 0)


def line_blocks(path: Path, block: int = 8 << 20) -> Iterator[bytes]:
    """Whole-line chunks of a JSONL file (bounded memory)."""
    rest = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest = chunk
                continue
            rest = chunk[cut:]
            yield chunk[:cut]
    if rest:
        yield rest


def strings_for_timestamps(schema: Any) -> Any:
    """Arrow's JSON reader turns ISO-date-looking strings into timestamps; keep them strings, as written."""
    import pyarrow as pa

    def fix(t: Any) -> Any:
        if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
            return pa.string()
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, fix(f.type), f.nullable) for f in t])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(fix(t.value_type))
        return t

    return pa.schema([pa.field(f.name, fix(f.type), f.nullable) for f in schema])


def read_json_block(block: bytes, parse_options: Any = None) -> Any:
    """A block of whole JSONL lines as one Arrow table. Arrow reads JSON in blocks of 1 MiB by default and
    refuses a row longer than a block ('straddling object'): the block size here is the block's own size."""
    import pyarrow as pa
    import pyarrow.json as pj

    opts = pj.ReadOptions(block_size=max(len(block) + 1, 1 << 20))
    return pj.read_json(pa.BufferReader(block), read_options=opts, parse_options=parse_options)


def empty_structs(schema: Any) -> list[str]:
    """The JSON paths ($.a.b, $.a[]) of the objects without fields in an Arrow schema."""
    import pyarrow as pa

    found: list[str] = []

    def walk(t: Any, path: str) -> None:
        if pa.types.is_struct(t):
            if t.num_fields == 0:
                found.append(path)
            for f in t:
                walk(f.type, f"{path}.{f.name}")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_type, path + "[]")

    for f in schema:
        walk(f.type, f"$.{f.name}")
    return found


def jsonl_to_parquet(shard: Shard) -> None:
    """Convert a finished temporary JSONL shard to Parquet with one schema unified over all its rows.

    Parquet needs one schema per file; per-row key sets (option letters, free-form metadata) become the
    union struct, null-filled (the shape of Parquet datasets on the hub, which the readers normalise)."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    try:
        schemas = [read_json_block(b).schema for b in line_blocks(shard.tmp)]
        schema = strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(
            f"split {shard.split!r} cannot be written as Parquet: its rows disagree on a field's type ({exc})",
            reason="parquet_types",
            split=shard.split,
        ) from None
    empty = empty_structs(schema)
    if empty:
        # Parquet has no group without fields: `{}` in every row that holds the field has no Parquet form
        raise InputError(
            f"split {shard.split!r} cannot be written as Parquet: {', '.join(empty)} "
            f"hold{'s' if len(empty) == 1 else ''} only empty objects "
            "({}), and Parquet has no form for an object without fields",
            reason="parquet_types",
            split=shard.split,
        )
    out = shard.tmp.with_suffix(".parquet")
    sink = HashingWriter(out)
    opts = pj.ParseOptions(explicit_schema=schema)
    try:
        with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema) as pw:
            for b in line_blocks(shard.tmp):
                pw.write_table(read_json_block(b, opts))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        sink.close()
        raise InputError(
            f"split {shard.split!r} cannot be written as Parquet: {exc}",
            reason="parquet_types",
            split=shard.split,
        ) from None
    shard.sha256 = sink.close()
    shard.bytes = sink.bytes
    shard.tmp.unlink()
    shard.tmp = out
