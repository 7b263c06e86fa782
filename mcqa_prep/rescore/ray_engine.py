"""`rescore` on Ray Data: the rows of a one-process run, graded on every core of a Ray cluster.

- `rescore_batch(table, settings) -> table` is the grader as a pure batch function over Arrow tables: input rows
  (`file`, `line`, `json`: the row's JSONL bytes) in, rescored rows out (`line`: the rescored JSONL bytes, and the
  row's outcome columns). It is `rescore_rows.rescore_row` applied row by row, so a row is rescored to the same
  bytes wherever it runs; any Ray Data pipeline can `map_batches` it.
- The input (files, directories: `sources.resolve`) is cut into chunks: JSONL byte ranges that start and end at
  line starts, Parquet row groups. A counting pass (Ray tasks, one per range) gives every chunk the number of its
  first line, so an unreadable line is reported as `file:line` exactly as in one process.
- One Ray Data job: `from_items(chunks) -> map_batches(_ChunkRescorer actors)`. Each actor reads its chunk with
  `io.readers`, runs `rescore_batch`, writes the chunk's rescored lines to its own shard
  (`rescored-00007-of-00012.jsonl`, numbered by chunk) and returns only the outcome columns.
- Order: Ray Data preserves block order (`preserve_order`), so the driver folds the outcomes into
  `rescore.RescoreReport` in input order (the summary equals the one-process summary), and the shards read in
  name order are the one-process output, line for line.
- The `--rows` join index is built once by the driver (`rescore.RowIndex`), put in the object store once
  (`ray.put`) with the rest of the settings, and fetched once by each actor (each worker holds one copy).
- Output: a directory of shards plus `summary.json` (the report, the shards and their row counts), written into
  a staging directory beside the output and renamed into place (`io.staging`); workers write into it, so on a
  cluster it must be on storage every node reaches, as must the inputs.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..errors import (
    InputError,
    McqaPrepError,
    OutputError,
    Stopped,
    UsageError,
    set_stop_handlers,
    stop_handlers,
)
from ..io.paths import is_parquet
from ..io.readers import read_jsonl, read_parquet
from ..io.staging import commit, staging_dir
from ..io.writers import write_atomic_json
from ..policy import GradingPolicy
from ..records import display_name
from .rows import Outcome, Settings, rescore_row
from .run import RescoreReport, setup

__all__ = [
    "rescore_batch",
    "rescore_on_ray",
    "rows_table",
    "lines_table",
    "outcomes",
    "SUMMARY",
    "shard_name",
]

SUMMARY = "summary.json"
EXTRA = "mcqa-prep[ray]"
_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))
_MIN_CHUNK = 1 << 20
_MAX_CHUNK = 64 << 20


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
    (`rescore_rows.Outcome`'s fields) out, one row per input row, in order. Pure: the same rows give the same
    table in any process."""
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
        yield Outcome(*values)


# ---- planning: chunks of the input ---------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One unit of work: a byte range of a JSONL file or some row groups of a Parquet file."""

    seq: int
    path: str  # absolute, to open on any worker
    name: str  # the file name rows are reported under (as the one-process run names it)
    kind: str  # "jsonl" | "parquet"
    start: int = 0
    end: int = 0
    row_groups: tuple[int, ...] = ()
    first_line: int = 1


def _jsonl_ranges(size: int, chunk_bytes: int) -> list[tuple[int, int]]:
    if size == 0:
        return [(0, 0)]
    return [(s, min(s + chunk_bytes, size)) for s in range(0, size, chunk_bytes)]


def count_newlines(path: str, start: int, end: int) -> tuple[int, bool]:
    """(newlines in bytes [start, end), whether the byte before `end` is a newline) of a file."""
    count, last = 0, False
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
    return count, last


def _plan(input_path: str, chunk_bytes: int | None, workers: int, counter: Any) -> list[Chunk]:
    """Chunks of the input in reading order; `counter(ranges)` counts the newlines of each (path, start, end).
    Without `chunk_bytes`, about eight chunks per worker (1 MiB to 64 MiB each)."""
    from ..io.readers import open_parquet
    from ..sources import resolve

    files = resolve([input_path], allow_stdin=False).sources
    if chunk_bytes is None:
        size = sum(_size(str(src.path)) for src in files)
        chunk_bytes = max(_MIN_CHUNK, min(_MAX_CHUNK, size // (workers * 8) + 1))
    jsonl: list[tuple[int, str, str, int, int]] = []  # (chunk slot, path, name, start, end)
    chunks: list[Chunk | None] = []
    for src in files:
        path = os.path.abspath(src.path)
        name = display_name(src.path)  # as the one-process reader's rows name the file in the output
        if is_parquet(src.path):
            groups = open_parquet(Path(path)).metadata.num_row_groups
            for g in range(groups) or [0]:
                chunks.append(Chunk(0, path, name, "parquet", row_groups=(g,) if groups else ()))
            continue
        try:
            size = os.path.getsize(path)
        except OSError as exc:
            raise InputError(
                f"{name}: cannot open: {exc.strerror or exc}", reason="input_unreadable"
            ) from None
        for start, end in _jsonl_ranges(size, chunk_bytes):
            jsonl.append((len(chunks), path, name, start, end))
            chunks.append(None)
    counts = counter([(p, s, e) for _, p, _, s, e in jsonl]) if jsonl else []
    seen: dict[str, tuple[int, bool]] = {}  # path -> (newlines before the next range, its last byte is \\n)
    for (slot, path, name, start, end), (n, last) in zip(jsonl, counts, strict=True):
        before, prev_last = seen.get(path, (0, True))
        first = before + 1 + (0 if (start == 0 or prev_last) else 1)
        chunks[slot] = Chunk(0, path, name, "jsonl", start, end, first_line=first)
        seen[path] = (before + n, last)
    return [Chunk(**{**asdict(c), "seq": i}) for i, c in enumerate(chunks) if c is not None]


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


def read_chunk(chunk: Chunk) -> Any:
    """The `rescore_batch` input table of one chunk, read with the one-process readers."""
    import orjson

    if chunk.kind == "jsonl":
        return lines_table(chunk_bytes(chunk.path, chunk.start, chunk.end), chunk.name, chunk.first_line)
    numbers, raws = [], []
    groups = list(chunk.row_groups) or None
    for rec in read_parquet(Path(chunk.path), None, row_groups=groups):
        numbers.append(rec.line)
        raws.append(orjson.dumps(rec.data) + b"\n")
    return rows_table([chunk.name] * len(raws), numbers, raws)


def shard_name(seq: int, total: int) -> str:
    return f"rescored-{seq:05d}-of-{total:05d}.jsonl"


class _ChunkRescorer:
    """A Ray Data actor: fetches the settings once, then reads, rescores and writes one chunk per call."""

    settings_ref: Any = None  # set on a per-run subclass (see _run): no constructor arguments to keep alive
    out_dir = ""
    total = 0

    def __init__(self) -> None:
        import ray

        self.settings = ray.get(self.settings_ref)

    def __call__(self, batch: Any) -> Any:
        pa = _pa()
        tables = []
        for task in batch.to_pylist():
            chunk = Chunk(**{**task, "row_groups": tuple(task["row_groups"] or ())})
            scored = rescore_batch(read_chunk(chunk), self.settings)
            with open(os.path.join(self.out_dir, shard_name(chunk.seq, self.total)), "wb") as fh:
                _write_binary_column(fh, scored.column("line"))
                fh.flush()
                os.fsync(fh.fileno())
            tables.append(
                scored.drop_columns(["line"]).append_column(
                    "seq", pa.array([chunk.seq] * scored.num_rows, pa.int64())
                )
            )
        if tables:
            return pa.concat_tables(tables)
        return pa.Table.from_batches([], schema=_outcome_schema().append(pa.field("seq", pa.int64())))


def _write_binary_column(fh: Any, column: Any) -> None:
    """Write a binary column's values back to back, from Arrow's buffers (no Python bytes per row)."""
    import numpy as np

    for arr in column.chunks:
        if len(arr) == 0:
            continue
        offsets = arr.buffers()[1]
        offs = np.frombuffer(offsets, np.int64)[arr.offset : arr.offset + len(arr) + 1]
        fh.write(memoryview(arr.buffers()[2])[offs[0] : offs[-1]])


# ---- the job -------------------------------------------------------------------------------------------


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(
            f"the Ray engine needs Ray Data, which is not installed (the {EXTRA} extra)",
            reason="ray_missing",
            extra=EXTRA,
        ) from None
    return ray


@dataclass
class RayRun:
    """How the job ran: workers, chunks and the shards written (row counts per shard)."""

    workers: int
    address: str | None
    shards: list[dict[str, Any]]


def rescore_on_ray(
    input_path: str | Path,
    output_dir: str | Path,
    policy: GradingPolicy,
    *,
    rows_paths: Iterable[str | Path] | None = None,
    examples: int = 5,
    explain: bool = False,
    compare_policy: GradingPolicy | None = None,
    compare_mode: str | None = None,
    workers: int | None = None,
    chunk_bytes: int | None = None,
    progress: bool = False,
) -> tuple[RescoreReport, RayRun]:
    """Rescore `input_path` on Ray (the running Ray session, else the cluster in RAY_ADDRESS, else a local
    instance) into the directory `output_dir`: shards in input order plus summary.json. Same rows and the same
    report as `rescore.rescore`."""
    ray = _import_ray()
    if workers is not None and workers < 1:
        raise UsageError(f"workers must be 1 or more, got {workers}", reason="bad_workers")
    out = Path(output_dir)
    _check_output_dir(out, Path(input_path))
    settings, report = setup(
        input_path,
        output_dir,
        policy,
        rows_paths=rows_paths,
        examples=examples,
        explain=explain,
        compare_policy=compare_policy,
        compare_mode=compare_mode,
    )
    started, temp = _start(ray, workers)
    try:
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        with staging_dir(out) as staging:
            shards = _run(ray, str(input_path), staging, settings, report, n, chunk_bytes, progress)
            if report.rows == 0:
                raise InputError(f"{input_path}: no rows to rescore", reason="no_rows")
            run = RayRun(n, os.environ.get("RAY_ADDRESS") or None, shards)
            write_atomic_json(staging / SUMMARY, {**report.to_dict(), "engine": _engine_doc(run)})
            commit(staging, out, replace=out.exists())
        return report, run
    except McqaPrepError:
        raise
    except Exception as exc:  # a Ray failure: one line, with the cause our own code raised when there is one
        own = _own_error(exc)
        if own is not None:
            raise own from None
        first = (str(exc).strip().splitlines() or [""])[0]
        raise McqaPrepError(
            f"the Ray job failed: {type(exc).__name__}: {first}", reason="ray_failed"
        ) from None
    finally:
        if started:
            ray.shutdown()
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)  # the local instance's sockets, logs and spilled objects


def _engine_doc(run: RayRun) -> dict[str, Any]:
    return {"name": "ray", "workers": run.workers, "shards": run.shards}


def _check_output_dir(out: Path, inp: Path) -> None:
    """The output directory is new, empty, or a previous Ray rescore output (which is replaced); it neither
    holds the input nor lies inside an input directory (a rerun would read its own output)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory", reason="output_not_directory")
    o, i = out.resolve(), inp.resolve()
    if o == i or o in i.parents:
        raise UsageError(f"{out}: the output directory holds the input", reason="output_is_input")
    if inp.is_dir() and i in o.parents:
        raise UsageError(f"{out}: the output directory lies inside the input", reason="output_inside_input")
    if out.is_dir() and any(out.iterdir()) and not (out / SUMMARY).is_file():
        raise OutputError(
            f"{out}: a directory that is not a rescore output; it is not replaced",
            reason="output_foreign_dir",
        )


def _start(ray: Any, workers: int | None) -> tuple[bool, str | None]:
    """Connect: the running session, RAY_ADDRESS's cluster, or a local instance with `workers` CPUs whose
    files go to a temporary directory. Returns (whether this call started Ray and so shuts it down, that
    temporary directory to remove)."""
    logging.getLogger("ray").setLevel(logging.ERROR)
    if ray.is_initialized():
        return False, None
    temp = None
    kept = stop_handlers()  # ray.init replaces them: Ray's SIGTERM handler dumps a native stack and exits
    try:
        if os.environ.get("RAY_ADDRESS"):
            ray.init(logging_level=logging.ERROR, log_to_driver=False)
        else:
            temp = tempfile.mkdtemp(prefix="mcqa-ray-")  # short: Ray's socket paths must stay under 108 bytes
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                logging_level=logging.ERROR,
                log_to_driver=False,
                _temp_dir=temp,
            )
    except (Exception, SystemExit) as exc:
        import signal

        with contextlib.suppress(Exception):
            ray.shutdown()  # what ray.init started before it failed or was stopped
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        if isinstance(exc, SystemExit):  # Ray's handler, active while ray.init runs, turns a signal into exit
            code = exc.code if isinstance(exc.code, int) else 0
            if code in {int(s) for s in kept}:
                raise Stopped(signal.Signals(code).name) from None
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        raise McqaPrepError(
            f"cannot start or reach Ray: {type(exc).__name__}: {first}", reason="ray_failed"
        ) from None
    finally:
        set_stop_handlers(kept)
    return True, temp


def _run(
    ray: Any,
    input_path: str,
    staging: Path,
    settings: Settings,
    report: RescoreReport,
    workers: int,
    chunk_bytes: int | None,
    progress: bool,
) -> list[dict[str, Any]]:
    """Plan, count, rescore: shards written into `staging`, outcomes folded into `report` in input order."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = progress
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)

    counter_task = ray.remote(num_cpus=1)(count_newlines)

    def counter(ranges: list[tuple[str, int, int]]) -> list[tuple[int, bool]]:
        return ray.get([counter_task.remote(*r) for r in ranges])

    chunks = _plan(input_path, chunk_bytes, workers, counter)
    total = len(chunks)
    ref = ray.put(settings)
    items = [{**asdict(c), "row_groups": list(c.row_groups)} for c in chunks]
    rescorer = type(
        "ChunkRescorer", (_ChunkRescorer,), {"settings_ref": ref, "out_dir": str(staging), "total": total}
    )
    extra: dict[str, Any] = {}
    if "ray_remote_args_fn" in inspect.signature(ray.data.Dataset.map_batches).parameters:
        extra["ray_remote_args_fn"] = _no_restarts  # deprecated in Ray 2.5x, still the one way to set it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ds = ray.data.from_items(items, override_num_blocks=total).map_batches(
            rescorer,
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=min(workers, total)),
            num_cpus=1,
            **extra,
        )
    per_shard = [0] * total
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for o in outcomes(batch):
            report.add(o)
        for seq in batch.column("seq").to_pylist():
            per_shard[seq] += 1
    return [{"file": shard_name(c.seq, total), "rows": per_shard[c.seq]} for c in chunks]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _no_restarts() -> dict[str, Any]:
    """A worker that dies fails the run with one line, rather than being restarted without its arguments."""
    return {"max_restarts": 0}


def _own_error(exc: BaseException) -> McqaPrepError | None:
    """Our own error inside a Ray task error (Ray wraps what a worker raised), if any."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, McqaPrepError):
            return e
        todo += [getattr(e, "cause", None), e.__cause__, e.__context__]
    return None
