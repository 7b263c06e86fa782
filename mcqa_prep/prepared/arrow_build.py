"""`load_prepared`'s cold path: one pass over a preparation's files that verifies them (every byte hashed, rows
counted, contract stamps checked, as files.py does) while it parses each wanted split into Arrow, and then
writes each split as one Arrow stream in the cache entry.

- JSONL shards are read in blocks of whole lines; each block is hashed and parsed by Arrow's JSON reader (C++,
  on every core), its stamps checked as one column. Blocks are spilled to an Arrow file in the entry, one file
  per distinct block schema; the split's schema is the permissive union of the blocks' schemas (4- and
  10-option rows: the options struct over every letter, null-filled), and every block is cast to it, in
  order, into the split's stream.
- Exact numbers: Arrow's JSON reader reads an integer into a float64 column when the column also holds
  non-integers or the integer is beyond 64 bits, which rounds beyond 2^53. A float64 column holding a
  magnitude of 2^53 or more is checked against the JSON text: an integer there that float64 cannot hold is an
  UnrepresentableValue naming the file, line and field; an int64 column that the union makes float64 is
  cast with Arrow's safe cast, which refuses the same integers. Nothing is rounded silently.
- A bound preparation's rows are checked against their stamps (binding.py) from the same bytes: each line
  of a block parsed once more by orjson, the rows of a Parquet shard read as files.py reads them.
- Anything the fast path does not handle exactly as files.py would (a row Arrow cannot parse, a stamp or a
  row count that differs, a row not as prepared, rows whose `output_regex` is a string in some rows and a
  list in others) raises
  `Slow`: load.py then runs verify_prepared (which reports a bad file precisely) and builds the split row by
  row instead.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .. import binding
from ..errors import UnrepresentableValue
from ..io.hashing import Digest, sha256_file
from ..io.readers import read_parquet
from ..io.shards import read_json_block, strings_for_timestamps
from .cache import Entry, identity
from .files import _scan_shard, check_recorded, check_size
from .manifest import REJECTS, Manifest

BLOCK = 16 << 20
EXACT = 2**53  # float64 holds every integer of smaller magnitude


class Slow(Exception):
    """The fast path cannot build this split exactly: the row-by-row path must (args[0] says why)."""


def _pa() -> Any:
    import pyarrow as pa

    return pa


# ---- reading a JSONL shard as Arrow blocks -----------------------------------------------------------------


def _blocks(path: Path, on_block: Callable[[bytes], Any]) -> Iterator[tuple[int, bytes]]:
    """(first line number, block of whole lines) of a file; every byte read goes to `on_block` first."""
    line = 1
    rest = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(BLOCK):
            on_block(chunk)
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            block, rest = data[:cut], data[cut:]
            if block:
                yield line, block
                line += block.count(b"\n")
        if rest:
            yield line, rest


def _parse(block: bytes) -> Any:
    """A block as an Arrow table, ISO-date-looking strings kept as strings (as written)."""
    pa = _pa()
    import pyarrow.json as pj

    try:
        table = read_json_block(block)
        fixed = strings_for_timestamps(table.schema)
        if fixed != table.schema:
            opts = pj.ParseOptions(explicit_schema=fixed, unexpected_field_behavior="infer")
            table = read_json_block(block, opts)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise Slow(f"Arrow's JSON reader: {exc}") from None
    return table


def _stamps_ok(table: Any, expected: str) -> bool:
    import pyarrow.compute as pc

    try:
        col = pc.struct_field(pc.struct_field(table.column("metadata"), "mcqa_prep"), "contract")
    except (KeyError, TypeError, ValueError, _pa().ArrowException):
        return False
    return col.null_count == 0 and bool(pc.all(pc.equal(col, expected)).as_py())


def _float_leaves(arr: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, flattened values) of every float64 leaf of an Arrow array (through structs and lists)."""
    pa = _pa()
    import pyarrow.compute as pc

    t = arr.type
    if pa.types.is_floating(t):
        yield path, arr
    elif pa.types.is_struct(t):
        for i, f in enumerate(t):
            yield from _float_leaves(pc.struct_field(arr, [i]), (*path, f.name))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        yield from _float_leaves(pc.list_flatten(arr), (*path, "[]"))


def _check_exact(table: Any, block: bytes, path: Path, first_line: int) -> None:
    """Refuse a block whose float64 columns rounded an integer of the JSON text (see the module docstring)."""
    import pyarrow.compute as pc

    suspects = set()
    for name in table.column_names:
        for leaf, values in _float_leaves(table.column(name), (name,)):
            top = pc.max(pc.abs(values)).as_py() if len(values) else None
            if top is not None and top >= EXACT:
                suspects.add(leaf)
    if not suspects:
        return
    for i, raw in enumerate(block.split(b"\n")):
        if not raw.strip():
            continue
        for leaf, value in _wide_ints(json.loads(raw)):
            if leaf in suspects:
                field = "$." + ".".join(leaf).replace(".[]", "[]")
                raise UnrepresentableValue(
                    f"{path}:{first_line + i}: {field}: the integer {value} cannot be held exactly in its "
                    "Arrow column (float64: the column also holds non-integers, or the integer needs more "
                    "than 64 bits); read the JSONL shards directly for exact values",
                    path=str(path),
                    line=first_line + i,
                    field=field,
                )


def _wide_ints(v: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], int]]:
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        if abs(v) > EXACT:
            yield path, v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _wide_ints(x, (*path, str(k)))
    elif isinstance(v, list):
        for x in v:
            yield from _wide_ints(x, (*path, "[]"))


# ---- spilling blocks, writing a split -----------------------------------------------------------------


class SplitSpill:
    """A split's blocks in order, spilled to Arrow files in the cache entry (one file per distinct schema)."""

    def __init__(self, entry: Entry, split: str) -> None:
        self.entry = entry
        self.split = split
        self.files: dict[Any, tuple[str, Any, Any]] = {}  # schema -> (path, sink, writer)
        self.order: list[tuple[Any, int]] = []  # (schema, batches) per block, in order
        self.rows = 0

    def add(self, table: Any) -> None:
        pa = _pa()
        schema = table.schema
        if schema not in self.files:
            p = str(self.entry.path / f".{self.entry.new_arrow_name(self.split)}.{os.getpid()}.spill.tmp")
            sink = pa.OSFile(p, "wb")
            self.files[schema] = (p, sink, pa.ipc.new_file(sink, schema))
        batches = table.to_batches()
        for b in batches:
            self.files[schema][2].write_batch(b)
        self.order.append((schema, len(batches)))
        self.rows += table.num_rows

    def write(self, name: str, fallback_schema: Any = None) -> dict[str, Any]:
        """Every block cast to the union schema, in order, as the Arrow stream `name` in the entry; its
        identity and sha256."""
        pa = _pa()
        for _, sink, writer in self.files.values():
            writer.close()
            sink.close()
        schemas = list(self.files) or ([fallback_schema] if fallback_schema is not None else [pa.schema([])])
        try:
            union = pa.unify_schemas(schemas, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise Slow(f"the blocks' types do not unify: {exc}") from None
        final = self.entry.path / name
        tmp = self.entry.path / f".{name}.{os.getpid()}.tmp"
        readers = {s: pa.ipc.open_file(pa.memory_map(p)) for s, (p, _, _) in self.files.items()}
        next_batch = dict.fromkeys(readers, 0)
        try:
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, union) as out:
                for schema, n in self.order:
                    for _ in range(n):
                        batch = readers[schema].get_batch(next_batch[schema])
                        next_batch[schema] += 1
                        out.write_batch(_conform(batch, union))
            os.replace(tmp, final)
        except OSError as exc:
            raise self.entry.write_error(exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return {
            "arrow": name,
            "identity": identity(final),
            "sha256": sha256_file(final)[0],
            "rows": self.rows,
        }

    def discard(self) -> None:
        for p, sink, writer in self.files.values():
            with contextlib.suppress(Exception):
                writer.close()
                sink.close()
            with contextlib.suppress(OSError):
                os.unlink(p)
        self.files.clear()


def _conform(batch: Any, schema: Any) -> Any:
    """A batch with exactly `schema`'s columns: missing ones null, every one cast (safely) to its type."""
    pa = _pa()
    cols = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            cols.append(pa.nulls(batch.num_rows, f.type))
            continue
        col = batch.column(i)
        try:
            cols.append(_cast(col, f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise UnrepresentableValue(
                f"field {f.name!r}: {exc}: its values cannot be held exactly in one Arrow column of type "
                f"{f.type}; read the JSONL shards directly",
                field=f.name,
            ) from None
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _cast(col: Any, typ: Any) -> Any:
    """`col` as `typ` (a type of the permissive union): a struct gains the fields it lacks as nulls, field by
    field and at any depth (through lists too), every leaf cast with Arrow's safe cast. Arrow casts a struct
    to one with more fields only from pyarrow 18 on; done here it is the same on the declared floor."""
    pa = _pa()
    if col.type == typ:
        return col
    if pa.types.is_struct(typ) and pa.types.is_struct(col.type):
        import pyarrow.compute as pc

        names = {col.type.field(i).name for i in range(col.type.num_fields)}
        children = [
            _cast(pc.struct_field(col, [col.type.get_field_index(f.name)]), f.type)
            if f.name in names
            else pa.nulls(len(col), f.type)
            for f in typ
        ]
        return pa.StructArray.from_arrays(children, fields=list(typ), mask=col.is_null())
    if pa.types.is_list(typ) and pa.types.is_list(col.type) and typ.value_type != col.type.value_type:
        import pyarrow.compute as pc

        start, end = col.offsets[0].as_py(), col.offsets[-1].as_py()  # a slice's rows, rebased to 0
        offsets = pc.subtract(col.offsets, pa.scalar(start, col.offsets.type))
        values = _cast(col.values.slice(start, end - start), typ.value_type)
        return pa.ListArray.from_arrays(
            offsets, values, type=typ, mask=col.is_null() if col.null_count else None
        )
    return col.cast(typ)


# ---- the pass ---------------------------------------------------------------------------------------------


def verify_and_spill(
    manifest: Manifest, spills: dict[str, SplitSpill], on_bytes: Callable[[int], Any] | None
) -> dict[str, str]:
    """Every listed file verified against the manifest (IntegrityError as files.py raises it), the shards
    of the splits in `spills` parsed into them on the way. Returns path -> verified sha256."""
    expected = manifest.contract_id
    fmt = manifest.output_format
    verified = {}
    for entry in manifest.files:
        path = manifest.path(entry)
        check_size(path, entry.bytes)
        if entry.kind == REJECTS:
            digest, _, rows = sha256_file(path, on_bytes, count_lines=True)
        elif entry.split not in spills:
            digest, rows, edited = _scan_shard(path, fmt, expected, on_bytes, manifest.binds_rows)
            if edited is not None:
                raise Slow(f"{path}: a row not as prepared")
        elif fmt == "parquet":
            digest, rows = _parquet_shard(path, expected, spills[entry.split], on_bytes, manifest.binds_rows)
        else:
            digest, rows = _jsonl_shard(path, expected, spills[entry.split], on_bytes, manifest.binds_rows)
        check_recorded(path, entry, digest, rows)
        verified[entry.name] = digest
    return verified


def _bound_ok(rows: Any) -> bool:
    """Every row's grading fields still hash to the digests its stamp records (binding.check)."""
    return all(binding.check(r).state == binding.OK for r in rows)


def _block_rows(block: bytes) -> Iterator[Any]:
    loads = orjson.loads
    for raw in block.split(b"\n"):
        if raw.strip():
            try:
                yield loads(raw)
            except (
                orjson.JSONDecodeError
            ):  # (Arrow took it: an integer beyond 64 bits) the exact reader decides
                raise Slow("a line orjson does not read") from None


def _jsonl_shard(
    path: Path, expected: str, spill: SplitSpill, on_bytes: Any, bound: bool = False
) -> tuple[str, int]:
    seen = Digest(on_bytes)
    rows = 0
    for first_line, block in _blocks(path, seen):
        table = _parse(block)
        if table.num_rows != block.count(b"\n") + (0 if block.endswith(b"\n") else 1):
            raise Slow(f"{path}: blank or unparsed lines")
        if not _stamps_ok(table, expected):
            raise Slow(f"{path}: a row's contract stamp")
        _check_exact(table, block, path, first_line)
        if bound and not _bound_ok(_block_rows(block)):
            raise Slow(f"{path}: a row not as prepared")
        spill.add(table)
        rows += table.num_rows
    return seen.hexdigest(), rows


def _parquet_shard(
    path: Path, expected: str, spill: SplitSpill, on_bytes: Any, bound: bool = False
) -> tuple[str, int]:
    import pyarrow.parquet as pq

    pa = _pa()
    digest = sha256_file(path, on_bytes)[0]
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise Slow(f"{path}: {exc}") from None
    if not _stamps_ok(table, expected):
        raise Slow(f"{path}: a row's contract stamp")
    if bound and not _bound_ok(r.data for r in read_parquet(path, None)):
        raise Slow(f"{path}: a row not as prepared")
    spill.add(table)
    return digest, table.num_rows
