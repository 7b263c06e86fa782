"""The Ray engine's unit of work: the input cut into chunks (planned by the driver), and one chunk rescored
into its own shard (on a worker).

- Planning reads nothing: a JSONL file is cut into byte ranges by its size, a Parquet file into its row
  groups (from the footer), so the number of chunks, and with it every shard's name, is known before any row
  is read. The driver then numbers the chunks in order (it counts the newlines of each range: a sequential
  read at memory speed, done while the first chunks already run), so a chunk knows the number of its first
  line and an unreadable line is reported as `file:line` exactly as in one process.
- A chunk holds the lines that *start* in its range (a line is read to its end, past the range if need be),
  so consecutive ranges give every line once.
- A worker reads its chunk with the one-process readers, rescores it row by row (`rows.rescore_row`, the
  `--workers` code), folds the rows into a report of its own, and writes its shard under a temporary name,
  renamed when complete: a chunk run twice (a retried task, a resumed job) rewrites its shard whole and
  gives the same bytes. The shard's record (rows, size, sha256, report) is written beside it the same way;
  `ray_work.py` reads it back to resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..errors import InputError
from ..io.paths import is_parquet
from ..io.readers import batch_records, open_parquet, read_jsonl, read_own_document
from ..io.writers import output_error
from .rows import Settings, rescore_row
from .run import RescoreReport

SLOW_ENV = "MCQA_PREP_TEST_RAY_CHUNK_SLEEP"  # test hook: seconds each chunk waits before its shard is written
MIN_CHUNK = 1 << 20
MAX_CHUNK = 64 << 20
PARQUET_BATCH = 2048


@dataclass(frozen=True)
class Chunk:
    """One unit of work: the lines that start in a byte range of a JSONL file, or one Parquet row group."""

    seq: int
    path: str  # absolute: what a worker opens, wherever it runs
    name: str  # the file name rows are reported under (the path as the one-process run names it)
    kind: str  # "jsonl" | "parquet"
    start: int = 0  # JSONL: the byte range
    end: int = 0
    row_group: int | None = None  # Parquet: the row group (None: a file without any)
    first_line: int = 0  # the 1-based line (record) number of the chunk's first row; 0 until numbered
    size: int = 0  # the file's identity when planned: a worker refuses a file that changed since
    mtime_ns: int = 0
    ino: int = 0


def chunk_size(total_bytes: int, workers: int) -> int:
    """About eight chunks per worker, 1 MiB to 64 MiB each."""
    return max(MIN_CHUNK, min(MAX_CHUNK, total_bytes // (workers * 8) + 1))


def file_identity(path: str | os.PathLike) -> tuple[int, int, int]:
    """(size, mtime_ns, inode) of a file; an InputError naming it when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}", reason="input_unreadable") from None
    return st.st_size, st.st_mtime_ns, st.st_ino


def plan(sources: Iterable[Any], chunk_bytes: int) -> list[Chunk]:
    """The chunks of resolved sources (`sources.Source`: path), in reading order, not yet numbered."""
    out: list[Chunk] = []
    for src in sources:
        name = str(src.path)
        path = os.path.abspath(src.path)
        size, mtime_ns, ino = file_identity(path)
        ident = {"size": size, "mtime_ns": mtime_ns, "ino": ino}
        if is_parquet(name):
            groups = open_parquet(Path(path)).metadata.num_row_groups
            for g in range(groups) or [None]:
                out.append(Chunk(len(out), path, name, "parquet", row_group=g, **ident))
            continue
        starts = range(0, size, chunk_bytes) if size else [0]
        for s in starts:
            out.append(Chunk(len(out), path, name, "jsonl", s, min(s + chunk_bytes, size), **ident))
    return out


def numbered(chunks: list[Chunk]) -> Iterator[Chunk]:
    """The chunks with their first line numbers, in order, computed as they are needed: the newlines before
    each JSONL range are counted here (one sequential read of each file), a Parquet chunk's records before it
    come from the footer."""
    seen: dict[str, tuple[int, bool]] = {}  # path -> (newlines before the next range, it ends with \n)
    records: dict[str, int] = {}
    footers: dict[str, Any] = {}
    for c in chunks:
        if c.kind == "parquet":
            before = records.get(c.path, 0)
            if c.row_group is not None:
                if c.path not in footers:
                    footers[c.path] = open_parquet(Path(c.path)).metadata
                records[c.path] = before + footers[c.path].row_group(c.row_group).num_rows
            yield replace(c, first_line=before + 1)
            continue
        before, prev_last = seen.get(c.path, (0, True))
        first = before + 1 + (0 if (c.start == 0 or prev_last) else 1)
        n, last = count_newlines(c.path, c.start, c.end)
        seen[c.path] = (before + n, last if c.end > c.start else prev_last)
        yield replace(c, first_line=first)


def count_newlines(path: str, start: int, end: int) -> tuple[int, bool]:
    """(newlines in bytes [start, end), whether the byte before `end` is a newline) of a file."""
    count, last = 0, False
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            left = end - start
            while left > 0:
                block = fh.read(min(left, 8 << 20))
                if not block:
                    break
                count += block.count(b"\n")
                last = block.endswith(b"\n")
                left -= len(block)
    except OSError as exc:
        raise InputError(f"{path}: read failed: {exc.strerror or exc}", reason="input_unreadable") from None
    return count, last


def chunk_bytes(path: str, start: int, end: int) -> bytes:
    """The JSONL lines that start in bytes [start, end) of a file, whole: a line that starts in the range is
    read to its end, a line that started before it belongs to the previous range."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # the rest of a line that started in the previous range
        pos = fh.tell()
        data = fh.read(end - pos) if pos < end else b""
        if data and not data.endswith(b"\n"):
            data += fh.readline()
    return data


def _check_same_file(c: Chunk) -> None:
    try:
        st = os.stat(c.path)
    except OSError as exc:
        raise InputError(f"{c.name}: cannot open: {exc.strerror or exc}", reason="input_unreadable") from None
    if (st.st_size, st.st_mtime_ns, st.st_ino) != (c.size, c.mtime_ns, c.ino):
        raise InputError(
            f"{c.name}: the file changed while it was being rescored (size, modification time or inode differ "
            "from when the job was planned)",
            reason="input_changed",
        )


def chunk_rows(c: Chunk) -> Iterator[Any]:
    """The rows of a chunk, read with the one-process readers and numbered as one process numbers them."""
    _check_same_file(c)
    if c.kind == "jsonl":
        try:
            data = chunk_bytes(c.path, c.start, c.end)
        except OSError as exc:
            raise InputError(
                f"{c.name}: read failed: {exc.strerror or exc}", reason="input_unreadable"
            ) from None
        lines = data.split(b"\n") if data else []
        if lines and lines[-1] == b"":
            lines.pop()
        yield from read_jsonl(lines, c.name, None, first_line=c.first_line)
        return
    if c.row_group is None:
        return
    import pyarrow as pa

    i = 0
    try:
        pf = open_parquet(Path(c.path))
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH, row_groups=[c.row_group]):
            yield from batch_records(batch, c.name, None, c.first_line + i, i)
            i += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{c.name}: Parquet data cannot be read past record {c.first_line + i}: {exc}",
            reason="unreadable_parquet",
        ) from None


def shard_name(seq: int, total: int) -> str:
    return f"rescored-{seq:05d}-of-{total:05d}.jsonl"


@dataclass
class ChunkDone:
    """What a worker hands back for a chunk: its shard's rows, size and sha256, and the rows' report."""

    seq: int
    rows: int
    bytes: int
    sha256: str
    report: RescoreReport


def run_chunk(c: Chunk, settings: Settings, empty: RescoreReport, work_dir: str, total: int) -> ChunkDone:
    """Rescore one chunk into `work_dir`: its shard, written under a temporary name and renamed when
    complete, and the shard's record beside it (write_record)."""

    part = empty.empty()
    lines: list[bytes] = []
    with streaming_gc():
        for rec in chunk_rows(c):
            line, outcome = rescore_row(rec, settings)
            lines.append(line)
            part.add(outcome)
    data = b"".join(lines)
    if os.environ.get(SLOW_ENV):
        import time

        time.sleep(float(os.environ[SLOW_ENV]))
    final = os.path.join(work_dir, shard_name(c.seq, total))
    try:
        write_whole(final, data)
    except OSError as exc:
        raise output_error(exc, final) from None
    done = ChunkDone(c.seq, part.rows, len(data), hashlib.sha256(data).hexdigest(), part)
    write_record(work_dir, c, done)
    return done


def write_whole(final: str, data: bytes) -> None:
    """`data` at `final`, durably, under a temporary name first: a reader never sees a partial file, and a
    second writer of the same bytes (a retried chunk) replaces it whole."""
    d, base = os.path.split(final)
    tmp = os.path.join(d, f".{base}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---- a complete chunk's record (beside its shard; what --resume reads) ---------------------------------

RECORDS = "chunks"


def plan_fields(c: Chunk) -> dict[str, Any]:
    """What makes a chunk this chunk: its file (and that file's identity) and range. Its first line number
    follows from those, and is counted only as the job runs."""
    d = asdict(c)
    d.pop("first_line")
    return d


def record_bytes(doc: Any) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def record_path(work_dir: str, seq: int) -> str:
    return os.path.join(work_dir, RECORDS, f"{seq:05d}.json")


def write_record(work_dir: str, c: Chunk, done: ChunkDone) -> None:
    """A complete chunk's record, written after its shard (a record names only a whole shard)."""
    doc = {
        "chunk": plan_fields(c),
        "rows": done.rows,
        "bytes": done.bytes,
        "sha256": done.sha256,
        "report": done.report.to_state(),
    }
    path = record_path(work_dir, c.seq)
    try:
        write_whole(path, record_bytes(doc))
    except OSError as exc:
        raise output_error(exc, path) from None


def read_record(work_dir: str, seq: int) -> dict[str, Any] | None:
    doc = read_own_document(record_path(work_dir, seq))
    return doc if isinstance(doc, dict) else None
