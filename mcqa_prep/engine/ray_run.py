"""The engine on Ray: one Ray task per chunk, results handed back in input order, a lost worker or node
costing its chunks, not the job.

- Each chunk is one task (`num_cpus=1`): it runs the command's per-chunk function on its chunk (the chunk is
  an address: a byte range or a row group the task reads itself, from storage every node reaches; a batch
  of a large Parquet row group travels in the object store), writes the chunk's bytes, if any, as its shard
  into the run's work directory (which must be on that storage too) and hands back the rest.
- The job's function and settings are put in the object store once; each worker process fetches them on its
  first chunk and keeps them for the next ones (numpy buffers zero-copy from the node's object store).
- Tasks are retried by Ray when their worker or node is lost (`max_retries`); errors of our own (an
  unreadable input, one that changed) are not retried and end the run in one line, as in one process.
- At most a few tasks per worker are queued at a time; the driver folds results in input order as they
  complete, so memory stays bounded whatever the input's size.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import McqaPrepError
from ..parallel import Chunk
from ..runs import RunRequest
from . import ray_session
from .work import run_chunk
from .workdir import Done, Recorded

RETRIES = 3  # attempts after the first, for a chunk whose worker or node was lost


def import_ray() -> Any:
    """Ray, or MissingExtra naming the `ray` extra (extras.require: exit 1, the pip line as its hint)."""
    from ..extras import require

    return require("ray", "the Ray engine")


_WORKER_STATE: dict[str, Any] = {}


def _chunk_task(
    box: list[Any], shard_of: Callable[[int], str], records: str | None, cwd: str, chunk: Chunk
) -> Done | Recorded:
    """A Ray task: one chunk. The job's function and settings (in `box`, unresolved) are fetched once per
    worker process. The task runs in the driver's working directory `cwd` where the node has it: the job's
    paths (inputs, output, work directory) are the user's, relative ones included, and a cluster's workers
    start wherever `ray start` ran."""
    with contextlib.suppress(OSError):  # (not on this node: a relative path is then not found, in one line)
        os.chdir(cwd)
    key = box[0].hex()
    if key not in _WORKER_STATE:
        import ray

        from ..parallel import _keep_freed_memory

        _WORKER_STATE.clear()
        _WORKER_STATE[key] = ray.get(box[0])
        _keep_freed_memory()
    work, settings = _WORKER_STATE[key]
    return run_chunk(work, settings, shard_of, -1, False, records, chunk)


@contextlib.contextmanager
def held(req: RunRequest) -> Iterator[None]:
    """One Ray connection for the engine runs of one command (convert --shuffle's two passes): each run's own
    connection finds it and leaves it up, so the job's driver and worker processes start once, not per run;
    Ray is left as it was found at the end. Nothing for the local engine."""
    if req.engine != "ray":
        yield
        return
    ray = import_ray()
    session = ray_session.connect(ray, req.workers, req.address)
    failed = False
    try:
        yield
    except McqaPrepError as exc:
        failed = str(exc.reason).startswith("ray_failed")
        raise
    finally:  # Ray's logs are kept only for the failure that names them
        ray_session.disconnect(ray, session, keep_logs=failed and bool(session.log_dir))


def ray_results(
    req: RunRequest,
    job: Any,
    todo: Iterator[tuple[Chunk, Done | None]],
    shard_of: Callable[[int], str],
    info: Any,
    marks: dict[str, float],
    complete: Callable[[], int],
) -> Iterator[tuple[Chunk, Done | None, bool]]:
    """The chunks' results in input order, computed as Ray tasks (see the module docstring); Ray reached as
    `ray_session.connect` says and left as it was found."""
    ray = import_ray()
    session = ray_session.connect(ray, req.workers, req.address)
    marks["ray"] = time.perf_counter()
    info.address, info.log_dir = session.address, session.log_dir
    ok = ray_failed = False
    try:
        with ray_session.quiet(ray, session.log_dir):
            info.workers = req.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            try:
                # a job with an output has its work directory on the storage every node reaches (where its
                # shards go too): the tasks record their chunks; else (the user's cache) the driver does
                records = info.work_dir if job.output is not None and info.records else None
                yield from _tasks(ray, job, todo, shard_of, info.workers, records)
                ok = True
            except McqaPrepError:
                raise
            except Exception as exc:  # a Ray failure (the complete chunks stay), or our error in a worker
                failure = _job_failed(exc, info.work_dir, complete(), session.log_dir)
                ray_failed = failure.reason.startswith("ray_failed")
                raise failure from None
    finally:  # Ray's logs are kept only for the failure that names them
        ray_session.disconnect(ray, session, keep_logs=not ok and ray_failed and bool(session.log_dir))


def _tasks(
    ray: Any,
    job: Any,
    todo: Iterator[tuple[Chunk, Done | None]],
    shard_of: Callable[[int], str],
    workers: int,
    records: str | None,
) -> Iterator[tuple[Chunk, Done | None, bool]]:
    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(_chunk_task)
    box = [ray.put((job.work, job.settings))]
    cwd = os.getcwd()
    window = max(8, 4 * workers)
    order: deque[tuple[Chunk, Any]] = deque()  # in input order: (chunk, its task, its known result or None)
    running: set[Any] = set()
    ready: dict[Any, Done] = {}

    def collect() -> None:  # wait for one task or more (a second at a time: Ctrl-C stays responsive)
        refs = list(running)
        got, _ = ray.wait(refs, num_returns=1, timeout=1.0)
        if got and len(refs) > 1:
            got, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in got:
            ready[ref] = ray.get(ref)
            running.discard(ref)

    def head() -> Iterator[tuple[Chunk, Done | None, bool]]:  # the complete results at the head, in order
        while order:
            chunk, r = order[0]
            if r is None or isinstance(r, Done):
                yield chunk, r, False
            elif r in ready:
                yield chunk, ready.pop(r), True
            else:
                return
            order.popleft()

    try:
        for chunk, done in todo:
            if chunk.failure is not None or done is not None:
                order.append((chunk, done))
            else:
                ref = task.remote(box, shard_of, records, cwd, chunk)
                running.add(ref)
                order.append((chunk, ref))
            yield from head()
            # a window of tasks running, and of results waiting behind the head (a resumed job's chunks)
            while running and (len(running) >= window or len(order) >= 4 * window):
                collect()
                yield from head()
        while order:
            if running:
                collect()
            yield from head()
    except BaseException:
        for ref in running:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise


def _job_failed(exc: BaseException, work_dir: str | None, done: int, log_dir: str | None) -> McqaPrepError:
    """A Ray failure as one line: our own error when a worker raised one, else what Ray said (its first
    line), how much of the job is kept for resuming, and where Ray's logs are."""
    own = _own_error(exc)
    if own is not None:
        return own
    first = (str(exc).strip().splitlines() or [""])[0]
    keep = done > 0
    kept = f"; {done} complete chunk(s) kept in {work_dir}" if keep else ""
    logs = f"; Ray's logs: {log_dir}" if log_dir else ""
    return McqaPrepError(
        f"the Ray job failed: {type(exc).__name__}: {first}{kept}{logs}",
        reason="ray_failed_resumable" if keep else "ray_failed",
        partial=str(work_dir) if keep else None,
        logs=log_dir,
    )


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
