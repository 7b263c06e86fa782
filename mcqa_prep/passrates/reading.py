"""Rollouts read into a measurement on the row engine (mcqa_prep.engine): each chunk's rollouts read (and
graded, when the measurement rescores) into a measurement of their own (`read_chunk`), folded into the whole
one in input order (`Measurement.absorb`: the same pools, tallies and examples as reading row by row)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..engine import Job
from ..engine import run as run_job
from ..io.hashing import sha256_file
from ..parallel import Chunk, InputMeter
from ..progress import Progress
from ..records import display_name
from ..runs import RunRequest
from .fastread import fast_part


def read(
    run: Any,
    files: Sequence[Any],
    progress: Progress | None,
    how: RunRequest,
    command: str,
    identity: dict[str, Any],
) -> None:
    """Every rollout of `files` into `run`, chunk by chunk on the engine (read_chunk), folded in input
    order."""
    meter = InputMeter(f.path for f in files)
    bar = progress(total=meter.total, desc=command, unit=meter.unit) if progress is not None else None

    def fold(chunk: Chunk, part: Any, _shard: Any) -> None:
        if chunk.failure is not None:
            raise chunk.failure
        assert part is not None
        run.absorb(part)
        if bar is not None:
            bar.update(meter.step(chunk, part.rows))

    job = Job(
        command, tuple((str(f.path), f.split) for f in files), read_chunk, run.fresh(), identity, how.output
    )
    try:
        with streaming_gc():
            run_job(how, job, fold)
    finally:
        if bar is not None:
            bar.close()


def read_chunk(chunk: Chunk, template: Any) -> Any:
    """The engine's per-chunk work: a chunk's rollouts read (graded, when the measurement rescores) into a
    measurement of their own, handed back without its settings (the fold has them)."""
    part = fast_part(chunk, template)  # the common case, without a dict per rollout (fastread.py)
    if part is None:
        part = template.fresh()
        for rec in chunk.rows():
            part.add(rec)
    part.rescore = part.index = None
    return part


def reading_identity(run: Any) -> dict[str, Any]:
    """What makes a reading of rollouts this reading (compared when a run resumes)."""
    return {
        "rescore": run.rescore.policy.contract_id() if run.rescore is not None else None,
        "index": run.index.summary() if run.index is not None else None,
        "default_model": run.default_model,
        "key_by": run.key_by,
        "pool": getattr(run.pool, "__name__", str(run.pool)),
        "keep_graded": run.keep_graded,
        "profile_contract": run.profile_contract,
    }


def hash_inputs(paths: Sequence[Any], progress: Progress | None, desc: str) -> list[dict[str, Any]]:
    """{name, sha256, bytes} of each file (sources.Source), before any row is read."""
    if not paths:
        return []
    bar = (
        progress(total=sum(Path(p.path).stat().st_size for p in paths), desc=desc, unit="B")
        if progress
        else None
    )
    out = []
    try:
        for p in paths:
            digest, size, _ = sha256_file(p.path, bar.update if bar is not None else None)
            out.append({"name": display_name(p.name), "sha256": digest, "bytes": size})
    finally:
        if bar is not None:
            bar.close()
    return out
