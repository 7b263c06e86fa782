"""The one executor of every row-parallel command: a job's inputs cut into chunks, each chunk through the
command's pure per-chunk function, the results folded in input order, on local processes or on Ray, with
every complete chunk recorded so that an interrupted run resumes.

A command is a client: it passes the run's settings (`runs.RunRequest`: inputs, output, workers, engine,
resume, chunking), a `Job` (its per-chunk function `work(chunk, settings) -> result` and those settings,
what makes the job this job, where it writes), and its fold `fold(chunk, result, shard)`, called once per
chunk in input order in this process. What `work` hands back crosses processes (pickled) and is recorded
(pickled) in the run's work directory; a result that carries bulky bytes (rescored rows, prepared lines)
hands them back as a `Piece(data, part)`: the bytes are written as the chunk's shard in the work directory
by the process that ran the chunk, and the fold gets `part` and the `Shard` (its path; its bytes when still
in memory).

Why the output is the same on every engine and for every number of workers: the chunks depend on the input
alone (`parallel.chunks`, `parallel.chunk_bytes_for`), `work` is a pure function of a chunk and the
settings, and the fold sees the chunks in input order, whoever ran them and whenever they completed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._perf import release_memory
from ..errors import McqaPrepError, OutputError, UsageError
from ..io.paths import STDIN, is_special
from ..parallel import (
    Chunk,
    check_workers,
    chunk_bytes_for,
    chunks_of,
    count_chunks,
    ordered_map,
)
from ..runs import RunRequest
from .work import run_chunk
from .workdir import Done, Shard, WorkDir, job_record, shard_name, work_path

ENGINES = ("local", "ray")
SLOW_ENV = (
    "MCQA_PREP_TEST_CHUNK_SLEEP"  # test hook: seconds each chunk waits before its result is handed back
)


Fold = Callable[[Chunk, Any, "Shard | None"], None]


@dataclass(frozen=True)
class Job:
    """What a command runs: its name, its resolved inputs in reading order ((path, split); '-' is stdin), the
    per-chunk function (a module-level function: it is sent to Ray by name) and the settings every chunk
    gets (picklable; shared by the workers: forked, or put in Ray's object store once), what makes this job
    this job (JSON: a resume under other settings is refused), and the output it writes (its work directory
    goes beside it; None: the user's cache directory)."""

    command: str
    sources: tuple[tuple[str, str | None], ...]
    work: Callable[[Chunk, Any], Any]
    settings: Any
    identity: dict[str, Any] = field(default_factory=dict)
    output: str | os.PathLike[str] | None = None
    shard_stem: str | None = None  # shards are named <stem>-00007-of-00042<ext> (stem: the command)
    shard_ext: str = ".bin"
    stream: bool = False  # the output is the shards in order: appended to one stream as they are folded
    count_rows: bool = False  # each JSONL chunk comes with its file's rows before it (Chunk.rows_before)


@dataclass
class RunInfo:
    """How a run ran: the engine, its workers, the chunks (and how many were taken over from an interrupted
    run), the work directory, Ray's address and logs, and the time of each step."""

    engine: str
    workers: int
    chunks: int = 0
    resumed: int = 0
    work_dir: str | None = None
    address: str | None = None
    log_dir: str | None = None
    stream: str | None = None  # a streaming job's output, complete, for `then` to put in place
    records: bool = False  # every complete chunk is recorded (a run from files: it can be resumed)
    shards: list[dict[str, Any]] = field(default_factory=list)  # a command's account of its shards, if any
    timings: dict[str, float] = field(default_factory=dict)


def _resumable(sources: Sequence[tuple[str, str | None]]) -> bool:
    for path, _ in sources:
        if str(path) == STDIN or not os.path.isfile(path):
            return False
    return True


def _cache_work_path(job: Job) -> Path:
    """A run without an output of its own (validate, an audit printed): its work directory in the user's
    cache, named by the command and its inputs."""
    from ..prepared.cache import default_root, private_dir

    key = hashlib.sha256(
        "\0".join([job.command, *(os.path.abspath(p) for p, _ in job.sources)]).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()[:24]
    return private_dir(default_root() / "runs") / f"{job.command}-{key}"


def _place(job: Job) -> Path:
    if job.output is not None and str(job.output) != "-" and not is_special(job.output):
        return work_path(job.output)
    try:
        return _cache_work_path(job)
    except McqaPrepError:  # no usable cache: a private temporary directory (the run cannot be resumed)
        import tempfile

        return Path(tempfile.mkdtemp(prefix=f".{job.command}-", suffix=".mcqa-run"))


def _open_work(job: Job, resumable: bool) -> tuple[WorkDir, bool]:
    """The run's work directory, locked; whether the run records its chunks there. A command without an
    output whose cache directory another run of the same inputs holds now (two `validate` of one file) runs
    in a private temporary directory instead, unrecorded: two such runs are no conflict."""
    what = str(job.output or ", ".join(p for p, _ in job.sources))
    try:
        return WorkDir(_place(job), what), resumable
    except OutputError as exc:
        if job.output is not None or exc.reason != "output_busy":
            raise
    import tempfile

    return WorkDir(Path(tempfile.mkdtemp(prefix=f".{job.command}-", suffix=".mcqa-run")), what), False


def check_engine(req: RunRequest) -> None:
    if req.engine not in ENGINES:
        raise UsageError(
            f"engine must be one of {', '.join(ENGINES)}, got {req.engine!r}", reason="bad_engine"
        )
    if req.address is not None and req.engine != "ray":
        raise UsageError("a Ray address needs the Ray engine", reason="address_without_ray")


def run(
    req: RunRequest,
    job: Job,
    fold: Fold,
    *,
    then: Callable[[Path, RunInfo], None] | None = None,
    keep_shards: bool = False,
) -> RunInfo:
    """Run `job` as `req` says and fold every chunk's result in input order (see the module docstring).

    `then(work_dir, info)`, when given, runs once every chunk is folded and before the work directory goes: where a
    command commits its output, so that no moment loses both. `keep_shards`: the shards are the command's
    output (a directory of rescored shards): before `then`, the work directory is left with only them, for
    `then` to put in place. Raises what the work or the fold raises; a run that is stopped, or loses a worker
    or Ray, keeps its complete chunks for `resume`."""
    marks = {"start": time.perf_counter()}
    req.check()
    check_engine(req)
    resumable = _resumable(job.sources)
    if req.resume and not resumable:
        raise UsageError("a run that reads stdin or a pipe cannot be resumed", reason="resume_stdin")
    if req.engine == "ray" and not resumable:
        raise UsageError(
            "the Ray engine reads files every node reaches: stdin and pipes are read by the local engine only",
            reason="ray_stdin",
        )
    work, resumable = _open_work(job, resumable)
    keep = False
    info = RunInfo(req.engine, 0, work_dir=str(work.path), records=resumable)
    try:
        cb, total = _plan(req, job, work, resumable)
        info.chunks = total or 0
        stream, consumed = work.open_stream(req.resume and resumable) if job.stream else (None, 0)
        marks["plan"] = time.perf_counter()
        todo = _with_known(
            chunks_of(job.sources, cb, job.count_rows), work, req.resume and resumable, info, consumed
        )
        stem = job.shard_stem or job.command
        shard_of = functools.partial(_shard_path, str(work.path), stem, total, job.shard_ext)
        try:
            if req.engine == "ray":
                from .ray_run import ray_results

                results = ray_results(req, job, todo, shard_of, info, marks, work.count_complete)
            else:
                info.workers = check_workers(req.workers)
                records = str(work.path) if resumable else None
                results = _local_results(job, todo, shard_of, info.workers, records)
            try:
                _fold_all(results, work, fold, resumable, stream)
            finally:
                if stream is not None:
                    stream.close()
        except KeyboardInterrupt:  # a stop (Ctrl-C, SIGTERM): the complete chunks stay for resuming
            keep = resumable and work.count_complete() > 0
            raise
        except McqaPrepError as exc:
            keep = resumable and exc.reason in RESUMABLE and work.count_complete() > 0
            raise
        marks["job"] = time.perf_counter()
        if keep_shards:
            work.finish()
        if stream is not None:
            info.stream = str(work.stream_path)
        if then is not None:
            then(work.path, info)
    finally:
        work.close(keep=keep)
    marks["end"] = time.perf_counter()
    steps = [s for s in ("start", "plan", "ray", "job", "end") if s in marks]
    info.timings = {f"{b}_s": marks[b] - marks[a] for a, b in zip(steps, steps[1:], strict=False)}
    return info


# failures that cost the run, not its chunks: a lost worker (killed, out of memory), a lost Ray
RESUMABLE = ("worker_died", "ray_failed_resumable")


def _plan(req: RunRequest, job: Job, work: WorkDir, resumable: bool) -> tuple[int | None, int | None]:
    """The chunk size (the recorded one when resuming) and the number of chunks; the job recorded (or the
    interrupted one taken over)."""
    if not resumable:
        return req.chunk_bytes, None
    paths = [str(p) for p, _ in job.sources]
    old = work.recorded() if req.resume else None
    cb = req.chunk_bytes or (old or {}).get("chunk_bytes")
    if not isinstance(cb, int) or cb < 1:
        jsonl = [p for p in paths if not p.lower().endswith(".parquet")]
        cb = chunk_bytes_for(sum(os.path.getsize(p) for p in jsonl))
    total = sum(_count(p, cb) for p in paths)
    settings = json.loads(json.dumps(job.identity, sort_keys=True, default=str))
    work.start(job_record(job.command, settings, paths, cb, total), req.resume)
    return cb, total


def _count(path: str, cb: int) -> int:
    try:
        return count_chunks(path, cb)
    except McqaPrepError:  # unreadable: the chunk that carries its failure, when the run reaches it
        return 1


def _with_known(
    chunks: Iterator[Chunk], work: WorkDir, resume: bool, info: RunInfo, consumed: int
) -> Iterator[tuple[Chunk, Done | None]]:
    """Each chunk with its result when an interrupted run of this job completed it (the first `consumed`
    are in the stream already)."""
    for c in chunks:
        done = work.completed(c, consumed) if resume and c.failure is None else None
        if done is not None:
            info.resumed += 1
        yield c, done


def _shard_path(work_dir: str, command: str, total: int | None, ext: str, seq: int) -> str:
    return os.path.join(work_dir, shard_name(command, seq, total, ext))


def _fold_all(
    results: Iterator[tuple[Chunk, Done | None, bool]], work: WorkDir, fold: Fold, record: bool, stream: Any
) -> None:
    """Fold each chunk's result in order; record the chunks this run completed (a resumed chunk is recorded
    already; a chunk that could not be read is not complete); append a streaming job's shards."""
    try:
        for chunk, done, fresh in results:
            if done is None:  # the chunk's file could not be read this far (chunk.failure)
                fold(chunk, None, None)
                continue
            if fresh and record and not done.recorded:
                work.record(chunk, done)
            fold(chunk, done.part, done.shard)
            if stream is not None and done.shard is not None:
                work.consume(stream, chunk.seq, done.shard, record)
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


# ---- local processes ----------------------------------------------------------------------------------


def _local_results(
    job: Job,
    todo: Iterator[tuple[Chunk, Done | None]],
    shard_of: Callable[[int], str],
    workers: int,
    records: str | None,
) -> Iterator[tuple[Chunk, Done | None, bool]]:
    """The chunks' results in input order, computed by `workers` forked processes (or here, for one), each
    recorded in `records` (the work directory) by the process that ran it."""
    known: dict[int, Done] = {}

    def chunks() -> Iterator[Chunk]:
        for c, done in todo:
            if done is not None:
                known[c.seq] = done
            yield c

    fn = functools.partial(run_chunk, job.work, job.settings, shard_of, os.getpid(), job.stream, records)
    if workers > 1:
        release_memory()  # a forked worker's resident memory starts as this process's: give back what is free
    results = ordered_map(fn, chunks(), workers, skip=lambda c: c.seq in known)
    try:
        for chunk, done in results:
            if chunk.failure is not None:
                yield chunk, None, False
            elif chunk.seq in known:
                yield chunk, known.pop(chunk.seq), False
            else:
                yield chunk, done, True
    finally:
        with contextlib.suppress(Exception):
            results.close()
