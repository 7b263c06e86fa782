"""The rows of a preparation on the row engine (mcqa_prep.engine): steps 1-3 per chunk (`prepare_work`:
validate, judge, stamp; the clean lines handed back as the chunk's shard), then, in input order in this
process, the cross-row checks and step 4 (each row to its shard or the rejects: the router, prepare/run.py)."""

from __future__ import annotations

import os
from typing import Any

from .._perf import streaming_gc
from ..engine import Job, Piece, Shard
from ..engine import run as run_job
from ..parallel import Chunk, InputMeter
from ..progress import Progress
from ..records import Row
from ..runs import RunRequest
from ..sources import Source
from .rows import Outcome, PreparedChunk, RowWork, prepare_chunk, settle


def rows_job(
    sources: list[Source],
    work: RowWork,
    provenance: list[dict[str, Any]],
    out: str | os.PathLike[str],
    policy: Any,
    settings: dict[str, Any],
    inputs: list[dict[str, Any]],
) -> Job:
    """The engine's job of a preparation: every chunk through `prepare_work`, its work directory beside the
    output directory; what makes it this job (a resume compares it): the contract, the preparation's
    settings, the validator's time bound, the difficulty and decontamination settings, the inputs' hashes."""
    judge, deco = work.difficulty, work.decontamination
    identity = {
        "contract": policy.contract_id(),
        "settings": settings,
        "regex_timeout": work.checker.cfg.regex_timeout,
        "difficulty": judge.settings() if judge is not None else None,
        "decontamination": deco.settings() if deco is not None else None,
        "provenance": inputs,
    }
    return Job(
        "prepare",
        tuple((str(s.path), s.split) for s in sources),
        prepare_work,
        (work, provenance),
        identity,
        out,
        shard_ext=".jsonl",
    )


IN_RUN = b""  # the line of a row whose line is written in its chunk's run (route(in_run=True) needs none)


def _route_chunk(
    chunk: Chunk, res: PreparedChunk, base: int, src: Source, validator: Any, router: Any
) -> None:
    """Step 4 for one chunk's rows, in order: the cross-row checks, then each row to its shard or the
    rejects. The lines of the rows written as they are (the blob's, but for a row a cross-row check
    rejects) go to the shard writer in runs as long as the rows between allow; each row with findings or a
    repair is counted on its own (route)."""
    found = validator.absorb_chunk(chunk.file, chunk.split, res.lines, base, res.keys, res.found)
    # written rows NeMo Gym would refuse: the clean ones no cross-row check rejects, and (below) the others
    gym = {i: p for i, p in res.gym_refused if not any(f.severity == "error" for f in found.get(i, ()))}
    sizes, blob = res.sizes, memoryview(res.blob)
    n = len(sizes)
    special = sorted(found.keys() | res.outcomes.keys() | res.repairs.keys())
    at = start = prev = 0  # at: where row prev's line starts in the blob; start: the first line not written
    run: list[int] = []  # the sizes of the lines from start to at
    for i in [*special, n]:
        if i > prev:  # the clean rows before this one
            router.count_clean(i - prev)
            run += sizes[prev:i]
            at += sum(sizes[prev:i])
        if i == n:
            break
        outcome = res.outcomes.get(i)
        in_blob = outcome is None  # a row written as it is, with findings (its own, or a cross-row check's)
        if outcome is None:  # its line is in the blob: written in the run unless settle() rejects it
            outcome = Outcome(IN_RUN, [], [], repair=res.repairs.get(i))
        final = settle(outcome, found.get(i, []))
        in_run = in_blob and final.line is not None
        if not in_run:  # what was held back goes first
            router.write_run(src, blob[start:at], run)
            run = []
        line = res.lines[i]
        stub = Row(chunk.file, line, base + i, None, None, chunk.split)
        router.route(chunk.row_at(line) if final.line is None and final.errors else stub, src, final, in_run)
        if in_run:
            run.append(sizes[i])
        at += sizes[i]
        if not in_run:
            start = at
        if final.line is not None and final.gym_problem is not None:
            gym[i] = final.gym_problem
        prev = i + 1
    router.write_run(src, blob[start:at], run)
    router.gym(gym)


def prepare_work(chunk: Chunk, settings: tuple[RowWork, list[dict[str, Any]]]) -> Piece:
    """The engine's per-chunk work (mcqa_prep.engine): `prepare_chunk`, its clean lines handed back as the
    chunk's shard."""
    work, provenance = settings
    res = prepare_chunk(work, provenance, chunk)
    return Piece(res.blob, res._replace(blob=b""))


def run_rows(
    sources: list[Source],
    validator: Any,
    job: Job,
    router: Any,
    progress: Progress | None,
    run: RunRequest,
) -> None:
    """Steps 1-3 for the rows of each chunk (on the engine), then, in input order, the cross-row checks and
    step 4 (in this process)."""
    meter = InputMeter(s.path for s in sources)
    bar = progress(total=meter.total, desc="prepare", unit=meter.unit) if progress is not None else None
    state = {"current": -1, "base": 0}

    def fold(chunk: Chunk, part: PreparedChunk | None, shard: Shard | None) -> None:
        if chunk.failure is not None:
            raise chunk.failure  # an unreadable input: nothing is committed
        assert part is not None and shard is not None
        if chunk.source != state["current"]:
            state["current"], state["base"] = chunk.source, 0
        res = part._replace(blob=shard.read())
        _route_chunk(chunk, res, state["base"], sources[chunk.source], validator, router)
        state["base"] += len(res.lines)
        if bar is not None:
            bar.update(meter.step(chunk, len(res.lines)))

    try:
        with streaming_gc():  # rows are acyclic: skip needless cyclic-GC scans
            run_job(run, job, fold)
    finally:
        if bar is not None:
            bar.close()
