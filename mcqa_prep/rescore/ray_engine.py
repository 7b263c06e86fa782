"""`rescore` on Ray: the rows of a one-process run, graded on every core of a Ray cluster, surviving the loss
of a worker or a node.

- `rescore_batch(table, settings) -> table` is the grader as a pure batch function over Arrow tables: input rows
  (`file`, `line`, `json`: the row's JSONL bytes) in, rescored rows out (`line`: the rescored JSONL bytes, and the
  row's outcome columns). It is `rows.rescore_row` applied row by row, so a row is rescored to the same bytes
  wherever it runs; any Ray Data pipeline can `map_batches` it.
- `rescore_on_ray` runs one Ray task per chunk of the input (ray_plan.py): the task reads its chunk, rescores it
  with the `--workers` code, writes its shard whole (temporary name, then rename) into the job's work directory
  (ray_work.py) and hands back the report of its rows. Tasks are retried by Ray when their worker or node is
  lost (`max_retries`; our own errors are not retried), so a lost node costs its chunks, not the job; an
  interrupted job resumes from the chunks already complete.
- Order: the driver folds the chunks' reports in chunk order (`RescoreReport.merge`, exact in any grouping), so
  the summary is the one-process summary, and the shards read in name order are the one-process output.
- The settings (policy, the packed `--rows` join index) are put in the object store once; each worker process
  fetches them once and keeps them for every chunk it runs.
- Output: a directory of shards plus `summary.json`, renamed into place from the work directory beside it; so
  on a cluster the output (like the inputs) must be on storage every node reaches.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..errors import InputError, McqaPrepError, OutputError, UsageError
from ..extras import require
from ..io.readers import read_jsonl
from ..io.staging import commit
from ..io.writers import write_atomic_json
from ..progress import Progress
from . import ray_local
from .ray_plan import ChunkDone, chunk_size, numbered, plan, run_chunk, shard_name
from .ray_work import WorkDir, job_record, path_identities
from .rows import Outcome, Settings, rescore_row
from .run import RescoreReport, RescoreRequest, setup

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
_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))
RETRIES = 3  # attempts after the first, for a chunk whose worker or node was lost


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


# ---- the job -------------------------------------------------------------------------------------------


def _import_ray() -> Any:
    return require("ray", "the Ray engine")


@dataclass
class RayRun:
    """How the job ran: workers, the shards written (row counts per shard), chunks taken from an interrupted
    run, and where Ray's logs are."""

    workers: int
    address: str | None
    shards: list[dict[str, Any]]
    resumed: int = 0
    log_dir: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


def rescore_on_ray(req: RescoreRequest) -> tuple[RescoreReport, RayRun]:
    """Rescore the run's input on Ray (the running Ray session, else the cluster in RAY_ADDRESS, else a local
    instance) into the run's output directory: shards in input order plus summary.json. Same rows and the
    same report as `rescore.rescore`. The run's `resume` continues an interrupted run of the same job from its
    complete chunks; its `progress` bar is advanced in rows as chunks complete; `workers` None: what Ray
    offers."""
    import time

    from ..sources import resolve

    marks = {"start": time.perf_counter()}
    ray = _import_ray()
    req.run.check()
    input_path, output_dir = req.run.input, req.run.output
    if output_dir is None:
        raise UsageError("rescore on Ray needs an output directory")
    out = Path(output_dir)
    _check_output_dir(out, Path(input_path))
    workers = req.run.workers
    sources = resolve(
        [input_path],
        allow_stdin=False,
        reread="the Ray engine reads the input by byte ranges, in several passes",
    ).sources
    settings, report = setup(req)
    marks["setup"] = time.perf_counter()
    work = WorkDir(out)
    ok = keep = ray_failed = False
    try:
        session = ray_local.connect(ray, workers)
        marks["ray"] = time.perf_counter()
        with ray_local.quiet(ray, session.log_dir):
            try:
                run = _plan_and_run(ray, session, work, sources, settings, report, req, marks)
                if report.rows == 0:
                    raise InputError(f"{input_path}: no rows to rescore", reason="no_rows")
                work.finish()
                write_atomic_json(work.path / SUMMARY, {**report.to_dict(), "engine": _engine_doc(run)})
                commit(work.path, out, replace=out.exists())
                ok = True
                ray_local.disconnect(ray, session, keep_logs=False)
            except McqaPrepError:
                raise
            except KeyboardInterrupt:  # a stop (Ctrl-C, SIGTERM): the complete chunks stay for resuming
                keep = work.count_complete() > 0
                raise
            except Exception as exc:  # a Ray failure (the complete chunks stay), or our error in a worker
                failure = _job_failed(exc, work, session.log_dir)
                ray_failed = failure.reason.startswith("ray_failed")
                keep = failure.reason == "ray_failed_resumable"
                raise failure from None
            finally:
                if not ok:  # Ray's logs are kept only for the failure that names them
                    ray_local.disconnect(ray, session, keep_logs=ray_failed and bool(session.log_dir))
    finally:
        work.close(keep=ok or keep)
    marks["end"] = time.perf_counter()
    steps = ["start", "setup", "ray", "plan", "job", "end"]
    run.timings = {f"{b}_s": marks[b] - marks[a] for a, b in zip(steps, steps[1:], strict=False)}
    return report, run


def _plan_and_run(
    ray: Any,
    session: Any,
    work: WorkDir,
    sources: list[Any],
    settings: Settings,
    report: RescoreReport,
    req: RescoreRequest,
    marks: dict[str, float],
) -> RayRun:
    """Plan the chunks, record the job (or take over the interrupted one), run what is left."""
    import time

    resume = req.run.resume
    n = req.run.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    cb = req.run.chunk_bytes or _recorded_chunk_bytes(work, resume)
    cb = cb or chunk_size(sum(os.path.getsize(s.path) for s in sources), n)
    chunks = plan(sources, cb)
    doc = {"examples": report.examples, "explain": settings.explain, "compare_contract": report.compare_contract,
           "compare_mode": report.compare_mode, "index": report.index}  # fmt: skip
    work.start(job_record(report, doc, chunks, path_identities(req.rows), cb), resume)
    done = work.completed(chunks) if resume else {}
    marks["plan"] = time.perf_counter()
    shards = _run(ray, chunks, done, settings, report, str(work.path), n, req.run.progress)
    marks["job"] = time.perf_counter()
    return RayRun(n, session.address, shards, len(done), session.log_dir)


def _recorded_chunk_bytes(work: WorkDir, resume: bool) -> int | None:
    old = work.recorded() if resume else None
    cb = old.get("chunk_bytes") if old is not None else None
    return cb if isinstance(cb, int) and cb > 0 else None


def _job_failed(exc: BaseException, work: WorkDir, log_dir: str | None) -> McqaPrepError:
    """A Ray failure as one line: our own error when a worker raised one, else what Ray said (its first
    line), how much of the job is kept for resuming, and where Ray's logs are."""
    own = _own_error(exc)
    if own is not None:
        return own
    first = (str(exc).strip().splitlines() or [""])[0]
    done = work.count_complete()
    keep = done > 0
    kept = f"; {done} complete chunk(s) kept in {work.path}" if keep else ""
    logs = f"; Ray's logs: {log_dir}" if log_dir else ""
    return McqaPrepError(
        f"the Ray job failed: {type(exc).__name__}: {first}{kept}{logs}",
        reason="ray_failed_resumable" if keep else "ray_failed",
        partial=str(work.path) if keep else None,
        logs=log_dir,
    )


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


_WORKER_STATE: dict[str, Any] = {}


def _chunk_task(box: list[Any], chunk: Any, work_dir: str, total: int) -> ChunkDone:
    """A Ray task: one chunk. The settings (in `box`, unresolved) are fetched once per worker process."""
    key = box[0].hex()
    if key not in _WORKER_STATE:
        import ray

        from ..parallel import _keep_freed_memory

        _WORKER_STATE.clear()
        _WORKER_STATE[key] = ray.get(box[0])
        _keep_freed_memory()
    settings, empty = _WORKER_STATE[key]
    return run_chunk(chunk, settings, empty, work_dir, total)


def _run(
    ray: Any,
    chunks: list[Any],
    done: dict[int, ChunkDone],
    settings: Settings,
    report: RescoreReport,
    work_dir: str,
    workers: int,
    progress: Progress | None,
) -> list[dict[str, Any]]:
    """Every chunk not in `done` as a Ray task (at most a few per worker queued at a time), the reports
    folded into `report` in chunk order; the shards' names and row counts."""
    total = len(chunks)
    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(_chunk_task)
    box = [ray.put((settings, report.empty()))]
    parts: dict[int, ChunkDone] = dict(done)
    rows = [0] * total
    pending: dict[Any, int] = {}
    window = max(8, 4 * workers)
    bar = progress(total=None, desc="rescore", unit="row") if progress is not None else None
    state = {"next": 0}

    def fold() -> None:  # the reports of the chunks complete so far, in chunk order
        while state["next"] in parts:
            d = parts.pop(state["next"])
            report.merge(d.report)
            rows[state["next"]] = d.rows
            state["next"] += 1

    def collect() -> None:  # wait for one task or more (a second at a time: Ctrl-C stays responsive)
        refs = list(pending)
        ready, _ = ray.wait(refs, num_returns=1, timeout=1.0)
        if ready and len(refs) > 1:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            d = ray.get(ref)
            parts[pending.pop(ref)] = d
            if bar is not None:
                bar.update(d.rows)
        fold()

    try:
        if bar is not None and done:
            bar.update(sum(d.rows for d in done.values()))
        for c in numbered(chunks):
            if c.seq not in done:
                pending[task.remote(box, c, work_dir, total)] = c.seq
            while len(pending) >= window:
                collect()
        while pending:
            collect()
        fold()
    except BaseException:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    return [{"file": shard_name(i, total), "rows": rows[i]} for i in range(total)]


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
