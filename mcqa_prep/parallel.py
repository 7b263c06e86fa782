"""Every core of one machine: inputs cut into chunks, chunks processed by a pool of worker processes, results
handed back in input order, so the output of N workers is byte for byte the output of one.

- A JSONL file (or stdin) is cut into blocks of whole lines by the parent, which counts their newlines, so
  each chunk knows the number of its first line; from a regular file a chunk is only a byte range, which the
  worker reads itself (a stream's bytes travel with the chunk); a small Parquet row group is read by its worker,
  a large one here, as Arrow record batches that reach the workers as files they map (io/spill.py); each knows
  its first record number. Parsing, validating, grading and serialising happen in the workers.
- Row indexes (0-based, blank lines not counted) count from the chunk's first row (see `Chunk.rows_before`).
- At most `window` chunks are in flight, so memory is bounded per worker whatever the input size.
- Workers are forked: state prepared by the parent before the pool starts (a join index, a compiled policy)
  is shared copy-on-write, never pickled. With one worker everything runs in-process through the same code.
"""

from __future__ import annotations

import functools
import itertools
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ._perf import keep_freed_memory as _keep_freed_memory
from .errors import InputError, McqaPrepError, UsageError, stops_deferred
from .io.newlines import LONG_LINE, RowCount, count_newlines, fill
from .io.paths import STDIN, is_parquet
from .io.readers import STDIN_NAME, batch_records, open_parquet, parquet_num_rows, read_jsonl
from .io.spill import read_spill, remove_spill_dir, spill_dir, write_spill
from .records import Row

JSONL_CHUNK_BYTES = 2 << 20  # the smallest JSONL chunk (chunk_bytes_for)
MAX_CHUNK_BYTES = 64 << 20
MAX_CHUNKS = 1024  # chunks of one large file, about (chunk_bytes_for)
CHUNK_BYTES_ENV = "MCQA_PREP_TEST_CHUNK_BYTES"  # test hook: every run's JSONL chunk size (small inputs)
PARQUET_CHUNK_ROWS = 2048
# A Parquet row group this small is decoded by the worker that processes it (nothing crosses the pipe but
# its number); a larger one is decoded here, on one thread (Arrow's pool took 2-3x the CPU time from the
# workers), and sent on in record batches (Arrow has no cheaper way into the middle of a row group).
ROW_GROUP_DIRECT_ROWS = 16384


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_workers(workers: int | None) -> int:
    """The worker count to use: None means every core available to this process."""
    if workers is None:
        return available_cores()
    if workers < 1:
        raise UsageError(f"workers must be at least 1, got {workers}")
    return workers


class Span(NamedTuple):
    """Where a chunk's JSONL bytes are in a regular file, as the parent saw them: offset, length, newline
    count, and the file's identity (inode, modification time, size; not the device, which differs between
    the NFS clients of a cluster)."""

    at: int
    size: int
    newlines: int
    ino: int
    mtime_ns: int
    file_size: int

    def read(self, name: str, split: bool = False) -> Any:
        """The bytes (`split`: their lines, whose count is the newline count) read by a worker from the file the
        parent cut them from. Another file under that name, or a different length or newline count, means the
        input changed under the run: an InputError, never rows the parent did not count."""
        try:
            fd = os.open(name, os.O_RDONLY)
            try:
                st = os.fstat(fd)
                same = (st.st_ino, st.st_mtime_ns, st.st_size) == (self.ino, self.mtime_ns, self.file_size)
                data = _pread_all(fd, self.size, self.at) if same else b""
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(
                f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable"
            ) from None
        parts = data.split(b"\n") if split else None  # (one pass that both splits and counts)
        newlines = data.count(b"\n") if parts is None else len(parts) - 1
        if len(data) != self.size or newlines != self.newlines:
            raise InputError(
                f"{name}: the file changed while it was being read (bytes {self.at}-{self.at + self.size}); "
                "run again once nothing writes to it",
                reason="input_changed",
            )
        return data if parts is None else parts


def _pread_all(fd: int, size: int, at: int) -> bytes:
    parts = []
    while size > 0:
        part = os.pread(fd, size, at)
        if not part:
            break
        parts.append(part)
        size -= len(part)
        at += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


@dataclass
class Chunk:
    """A piece of one input file: JSONL lines (`data` bytes from a stream; from a regular file, the byte range
    `span` that the worker reads itself), a Parquet record batch (`batch`), or a Parquet row group that
    the worker reads itself (`row_group`)."""

    seq: int
    file: str
    split: str | None
    first_line: int
    data: bytes | None = None
    batch: Any = None
    row_group: int | None = None
    source: int = 0  # which of the inputs given to chunks_of it belongs to
    failure: Exception | None = None  # the file could not be read past this point (never sent to a worker)
    span: Span | None = None  # JSONL in a regular file: where the chunk's bytes are
    part: int | None = None  # a Parquet batch: its number within its row group `group`
    group: int | None = None
    ident: tuple[int, int, int] | None = None  # a Parquet file's (inode, mtime_ns, size) when it was planned
    spill: str | None = None  # a Parquet batch's copy as a file (io/spill.py): what a local worker gets
    _lines: list[bytes] | None = field(default=None, repr=False, compare=False)
    _group: Any = field(default=None, repr=False, compare=False)  # row_at's read of the row group, kept
    rows_before: int | None = None  # a JSONL file's rows before the chunk, if the job asked (count_rows)

    def __getstate__(self) -> dict[str, Any]:
        """A spilled batch crosses to a worker as its file's name only (io/spill.py)."""
        state = dict(self.__dict__)
        state["_group"] = None  # (the parent's read of its row group, for row_at: never sent)
        if self.spill is not None:
            state["batch"] = None
        return state

    def _jsonl(self) -> bytes:
        if self.data is None and self.span is not None:
            self.data = self.span.read(self.file)
        return self.data or b""

    def batches(self) -> Iterator[Any]:
        """The Arrow record batches of a Parquet chunk, in order (read here, in the worker)."""
        if self.batch is None and self.spill is not None:
            self.batch = read_spill(self.spill, self.file, self.first_line)
        if self.batch is not None:
            yield self.batch
            return
        yield from self._row_group().to_batches(max_chunksize=PARQUET_CHUNK_ROWS)

    def _row_group(self) -> Any:
        """The chunk's row group, read here (in the worker); unreadable bytes are an InputError, as when the
        parent reads them."""
        import pyarrow as pa

        if self.ident is not None:
            try:
                st = os.stat(self.file)
            except OSError as exc:
                raise InputError(
                    f"{self.file}: cannot open: {exc.strerror or exc}", reason="input_unreadable"
                ) from None
            if (st.st_ino, st.st_mtime_ns, st.st_size) != self.ident:
                raise InputError(
                    f"{self.file}: the file changed while it was being read; run again once nothing writes to "
                    "it",
                    reason="input_changed",
                )
        try:
            return _parquet_file(self.file, self.ident).read_row_group(self.row_group, use_threads=False)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(
                f"{self.file}: Parquet data cannot be read past record {self.first_line}: {exc}",
                reason="unreadable_parquet",
            ) from None

    def is_parquet(self) -> bool:
        return self.batch is not None or self.row_group is not None or self.spill is not None

    def jsonl_lines(self) -> list[bytes] | None:
        """A JSONL chunk's lines as `rows` reads them (without their line ends), else None (Parquet)."""
        if self.is_parquet():
            return None
        span = self.span if self.data is None else None  # not read yet: read, split and counted in one go
        lines = span.read(self.file, split=True) if span is not None else self._jsonl().split(b"\n")
        return lines[:-1] if lines[-1] == b"" else lines

    def rows(self) -> Iterator[Row]:
        """The chunk's rows; `index` counts from 0 within the chunk."""
        lines = self.jsonl_lines()
        if lines is not None:
            yield from read_jsonl(lines, self.file, self.split, first_line=self.first_line)
            return
        i = 0
        for batch in self.batches():
            yield from batch_records(batch, self.file, self.split, self.first_line + i, i)
            i += batch.num_rows

    def row_at(self, line: int) -> Row:
        """The row at `line` (a JSONL line or Parquet record number within this chunk), read again as it was
        (the worker's copy may have been changed): for reject records the parent writes."""
        if self.batch is None and self.spill is not None:
            self.batch = read_spill(self.spill, self.file, self.first_line)
        if self.batch is None and self.row_group is None:
            if self._lines is None:  # split once: a chunk may hold many rejected rows
                data = self._jsonl()
                self._lines = data.split(b"\n") if data else []
            raw = self._lines[line - self.first_line]
            return next(
                read_jsonl([raw], self.file, self.split, first_line=line), Row(self.file, line, 0, None)
            )
        i = line - self.first_line
        if self.batch is not None:
            one = self.batch.slice(i, 1)
        else:
            self._group = self._group or self._row_group()  # read once: a chunk may hold many rejected rows
            one = self._group.slice(i, 1).to_batches()[0]
        return next(batch_records(one, self.file, self.split, line, i))


class InputMeter:
    """What a progress bar over chunks_of(files) counts, and its total, so that it can show the time left: rows
    when every input is Parquet (the footers know them), else bytes when every input is a regular file (a
    Parquet chunk counts its share of its file's bytes), else rows with no total (stdin, a pipe).
    step(chunk, rows) is how far one chunk moves the bar."""

    def __init__(self, files: Iterable[str | os.PathLike]) -> None:
        self.unit: str = "row"
        self.total: int | None = None
        self._size: dict[str, int] = {}
        self._rows: dict[str, int] = {}
        paths = [Path(f) for f in files]
        if not paths or any(str(p) == STDIN for p in paths):
            return
        try:
            if all(is_parquet(p) for p in paths):
                self.total = sum(parquet_num_rows(p) for p in paths)
            elif all(p.is_file() for p in paths):
                for p in paths:
                    self._size[str(p)] = p.stat().st_size
                    if is_parquet(p):
                        self._rows[str(p)] = parquet_num_rows(p)
                self.unit, self.total = "B", sum(self._size.values())
        except Exception:  # noqa: BLE001 - a file that cannot be read is reported where it is read
            self.unit, self.total = "row", None

    def step(self, chunk: Chunk, rows: int) -> int:
        if self.unit == "row":
            return rows
        if chunk.span is not None:
            return chunk.span.size
        n = self._rows.get(chunk.file)
        if n:  # a Parquet chunk: its rows' share of the file
            return round(self._size[chunk.file] * rows / n)
        return len(chunk.data) if chunk.data is not None else 0


SAMPLE_BYTES = 1 << 20  # what rows_estimate reads of a JSONL file to learn its bytes per line


def rows_estimate(files: Iterable[str | os.PathLike]) -> int | None:
    """The rows of the inputs, for a progress bar that reads them row by row: Parquet's from its footer, a JSONL
    file's from its size and the lines in its first MiB (an estimate: the bar's time left is one too). None when
    an input is stdin or a pipe, or cannot be read (it is reported where it is read)."""
    total = 0
    try:
        for f in files:
            p = Path(f)
            if str(p) == STDIN or not p.is_file():
                return None
            if is_parquet(p):
                total += parquet_num_rows(p)
                continue
            size = p.stat().st_size
            with open(p, "rb") as fh:
                head = fh.read(SAMPLE_BYTES)
            lines = head.count(b"\n") + (not head.endswith(b"\n") and len(head) == size and bool(head))
            total += round(size * lines / len(head)) if head else 0
    except Exception:  # noqa: BLE001 - a file that cannot be read is reported where it is read
        return None
    return total


def chunks_of(
    files: Iterable[tuple[str | os.PathLike, str | None]],
    chunk_bytes: int | None = None,
    count_rows: bool = False,
) -> Iterator[Chunk]:
    """The chunks of several input files, one pool for all of them (no start-up and no drain per file). A
    file that cannot be read (further) ends in a chunk carrying the InputError as `failure`, in its place
    in the order, and the next file follows."""
    seq = 0
    for i, (path, split) in enumerate(files):
        try:
            for c in chunks(path, split, seq, chunk_bytes, count_rows):
                c.source = i
                seq = c.seq + 1
                yield c
        except InputError as exc:
            yield Chunk(seq, str(path), split, 0, source=i, failure=exc)
            seq += 1


def chunks(
    path: str | os.PathLike,
    split: str | None,
    seq_start: int = 0,
    chunk_bytes: int | None = None,
    count_rows: bool = False,
) -> Iterator[Chunk]:
    """The chunks of one input file ('-' is stdin), in order; JSONL chunks of `chunk_bytes` (None: what
    chunk_bytes_for gives for the file's size), of a regular file with their `rows_before` if `count_rows`."""
    if str(path) == STDIN:
        yield from _jsonl_chunks(sys.stdin.buffer, STDIN_NAME, split, seq_start)
        return
    p = Path(path)
    if is_parquet(p):
        yield from _parquet_chunks(p, split, seq_start)
        return
    try:
        fh = open(p, "rb")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file", reason="missing_input", path=str(p)) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot open: {exc.strerror or exc}", reason="input_unreadable") from None
    with fh:
        if _regular(fh):
            yield from _file_chunks(fh, str(p), split, seq_start, chunk_bytes, count_rows)
        else:  # a pipe given by name (/dev/stdin, a FIFO): its bytes can be read only once, here
            yield from _jsonl_chunks(fh, str(p), split, seq_start)


def _regular(fh: Any) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    except (OSError, ValueError):
        return False


def _jsonl_chunks(fh: Any, name: str, split: str | None, seq: int) -> Iterator[Chunk]:
    """Blocks of whole lines read from a stream (stdin, a pipe): each chunk carries its bytes."""
    line = 1
    rest = b""
    try:
        while True:
            block = fh.read(JSONL_CHUNK_BYTES)
            data = rest + block
            if not block:
                if data:
                    yield Chunk(seq, name, split, line, data)
                return
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
            yield Chunk(seq, name, split, line, data)
            seq += 1
            line += data.count(b"\n")
    except OSError as exc:
        raise InputError(f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable") from None


def chunk_bytes_for(total: int) -> int:
    """The JSONL chunk size for inputs of `total` bytes: JSONL_CHUNK_BYTES, growing for very large inputs so
    that a run has about MAX_CHUNKS chunks, up to MAX_CHUNK_BYTES. It depends on the input alone, never on the
    number of workers or the engine: the chunks, and so every chunk's result and their fold, are the same for
    every run of the same input (byte-identical outputs, and a job that resumes on another engine)."""
    if os.environ.get(CHUNK_BYTES_ENV):
        return int(os.environ[CHUNK_BYTES_ENV])
    return max(JSONL_CHUNK_BYTES, min(MAX_CHUNK_BYTES, -(-max(total, 1) // MAX_CHUNKS)))


def _file_chunks(
    fh: Any, name: str, split: str | None, seq: int, size: int | None, count_rows: bool
) -> Iterator[Chunk]:
    """The chunks of a regular file, as byte ranges: chunk k holds the lines that *start* in bytes
    [k*size, (k+1)*size), so the number of chunks is known from the file's size and each chunk's place from
    the size alone (an empty chunk when no line starts in its range). The parent reads the file once, in
    order, to find each range's first line start and to count newlines (for line numbers); whoever processes
    a chunk reads its bytes from the file (Span.read), so they are not copied through the parent and a
    pipe. With `count_rows`, each block's rows are counted as it is read (io.newlines.RowCount)."""
    st = os.fstat(fh.fileno())
    rows = RowCount(seq, count_rows)
    size = size or chunk_bytes_for(st.st_size)
    span = functools.partial(Span, ino=st.st_ino, mtime_ns=st.st_mtime_ns, file_size=st.st_size)
    # the boundary of chunk k is the first line start at or after k*size: (offset, newlines before it)
    bounds: list[tuple[int, int]] = [(0, 0)]
    waiting = 0  # boundaries whose range starts before the current position but no line start was seen yet
    buf = bytearray(size)
    view = memoryview(buf)
    pos = newlines = 0  # the offset of the next block, the newlines before it
    after_newline = True  # the byte before `pos` ends a line (or pos is 0)
    try:
        while n := fill(fh, view, rows):
            if pos and after_newline:  # the range [pos, pos + size) of the next chunk: a line starts there
                bounds.append((pos, newlines))
            elif pos:
                waiting += 1
            if waiting:
                i = buf.find(b"\n", 0, n)
                if i >= 0:
                    bounds.extend([(pos + i + 1, newlines + 1)] * waiting)
                    waiting = 0
            newlines += count_newlines(buf, 0, n, newlines * LONG_LINE <= pos)  # (long lines so far?)
            after_newline = buf[n - 1] == 10
            pos += n
            while len(bounds) > 1:
                (at, before), (end, upto) = bounds[0], bounds[1]
                yield Chunk(seq, name, split, before + 1, span=span(at, end - at, upto - before),
                            rows_before=rows.before(seq))  # fmt: skip
                seq += 1
                bounds.pop(0)
    except OSError as exc:
        raise InputError(f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable") from None
    bounds.extend([(pos, newlines)] * waiting)  # ranges no line starts in: empty chunks at the end
    bounds.append((pos, newlines))
    for (at, before), (end, upto) in zip(bounds, bounds[1:], strict=False):
        yield Chunk(seq, name, split, before + 1, span=span(at, end - at, upto - before),
                    rows_before=rows.before(seq))  # fmt: skip
        seq += 1


def count_chunks(path: str | os.PathLike, chunk_bytes: int) -> int:
    """How many chunks `chunks` cuts a regular file into (from its size or its Parquet footer, reading no row):
    what names a run's shards before any chunk is read."""
    p = Path(path)
    if is_parquet(p):
        meta = open_parquet(p).metadata
        n = 0
        for g in range(meta.num_row_groups):
            rows = meta.row_group(g).num_rows
            n += 1 if rows <= ROW_GROUP_DIRECT_ROWS else -(-rows // PARQUET_CHUNK_ROWS)
        return n
    return max(1, -(-os.path.getsize(p) // chunk_bytes))


def _parquet_file(path: str, ident: Any = None) -> Any:
    return _parquet_file_of(path, ident, os.getpid())  # one handle per process: a forked worker opens its own


@functools.lru_cache(maxsize=8)
def _parquet_file_of(path: str, ident: Any, pid: int) -> Any:
    return open_parquet(Path(path))


def _parquet_chunks(path: Path, split: str | None, seq: int) -> Iterator[Chunk]:
    import pyarrow as pa

    pf = open_parquet(path)
    st = os.stat(path)
    ident = (st.st_ino, st.st_mtime_ns, st.st_size)
    line = 1
    try:
        for g in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            if n <= ROW_GROUP_DIRECT_ROWS:
                yield Chunk(seq, str(path), split, line, row_group=g, ident=ident)
                seq += 1
                line += n
                continue
            batches = pf.iter_batches(batch_size=PARQUET_CHUNK_ROWS, row_groups=[g], use_threads=False)
            for i, batch in enumerate(batches):
                yield Chunk(seq, str(path), split, line, batch=batch, part=i, group=g, ident=ident)
                seq += 1
                line += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path}: Parquet data cannot be read past record {line}: {exc}", reason="unreadable_parquet"
        ) from None


# ---- the pool -------------------------------------------------------------------------------------------

_STATE: dict[str, Any] = {}  # what the parent prepared for the workers (inherited by fork)


def _worker_init(parent: int) -> None:
    """A worker leaves Ctrl-C to the parent (a terminal sends SIGINT to the whole process group): the parent
    stops the run and reports it once, instead of every worker printing a KeyboardInterrupt traceback. SIGTERM
    and SIGHUP end a worker at once (the parent's handlers, inherited by fork, would turn them into an error
    the worker hands back as a result), and a worker dies with its parent: killed workers are not left
    running with the caller's pipes open (found by an audit: `timeout ... mcqa-prep ... | tee` hung)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, sig):
            signal.signal(getattr(signal, sig), signal.SIG_DFL)
    _die_with(parent)
    _keep_freed_memory()


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies (prctl PR_SET_PDEATHSIG); if the parent is gone
    already (it died before the request), exit now. Elsewhere nothing changes."""
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _call(key: str, chunk: Chunk) -> Any:
    return _STATE[key](chunk)


def ordered_map(
    fn: Callable[[Chunk], Any],
    items: Iterable[Chunk],
    workers: int,
    *,
    window: int | None = None,
    skip: Callable[[Chunk], bool] | None = None,
) -> Generator[tuple[Chunk, Any], None, None]:
    """(chunk, fn(chunk)) for every chunk, in input order, computed by `workers` forked processes.

    `fn` may be a closure over large state: the workers inherit it by fork. In a worker, an exception is
    returned to the parent and raised there for the chunk that failed. A chunk that carries a `failure`
    (its file could not be read further), or that `skip` says is done already (a resumed run's), comes back
    in its place with the result None."""
    items = iter(items)
    head = [c for _, c in zip(range(2), items, strict=False)]

    def idle(c: Chunk) -> bool:
        return c.failure is not None or (skip is not None and skip(c))

    if workers <= 1 or len(head) < 2:  # one worker, or an input of one chunk: no pool to start
        for chunk in itertools.chain(head, items):
            yield chunk, (None if idle(chunk) else fn(chunk))
        return
    items = itertools.chain(head, items)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    key = f"fn-{id(fn)}"
    _STATE[key] = fn
    window = window or 3 * workers
    spill: list[str | None] = []  # the private directory of the batches handed to workers as files, once made
    try:
        ctx = mp.get_context("fork")
        with stops_deferred():
            pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
            )
        try:
            pending: deque = deque()
            for chunk in items:
                if chunk.batch is not None and not idle(chunk):
                    _spill(chunk, spill)
                with stops_deferred():  # a signal inside submit (which forks) would leave the pool half-made
                    fut = None if idle(chunk) else pool.submit(_call, key, chunk)
                pending.append((chunk, fut))
                if len(pending) >= window:
                    c, fut = pending.popleft()
                    yield c, (None if fut is None else fut.result())
            while pending:
                c, fut = pending.popleft()
                yield c, (None if fut is None else fut.result())
        except BaseException:
            # Ctrl-C, an error, or the consumer stopped: drop the chunks not started, let the running ones end
            with stops_deferred():
                pool.shutdown(wait=True, cancel_futures=True)
            raise
        with stops_deferred():
            pool.shutdown(wait=True)
    except BrokenProcessPool:
        raise McqaPrepError(
            "a worker process died (killed, or out of memory); nothing was written", reason="worker_died"
        ) from None
    finally:
        _STATE.pop(key, None)
        if spill:
            remove_spill_dir(spill[0])


def _spill(chunk: Chunk, spill: list[str | None]) -> None:
    """Write a Parquet chunk's batch for the worker to map (io/spill.py); the parent keeps its own copy."""
    if not spill:
        spill.append(spill_dir())
    chunk.spill = write_spill(chunk.batch, spill[0], f"{chunk.seq:06d}.arrows")
