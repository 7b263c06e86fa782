"""`rescore` into a directory of shards (what `--engine ray` writes): the rows of the one-file run, cut at
the engine's chunks, each chunk's rows one shard, plus `summary.json`.

    rescored/
      rescored-00000-of-00042.jsonl   # rescored rows of input chunk 0, in input order
      ...
      summary.json                    # the report, plus "engine": {"name", "workers", "shards": [{file, rows}]}

The shards are the engine's own (written whole by whoever ran the chunk, in the work directory beside the
output); once every chunk is folded, the work directory keeps only them, gets summary.json and is renamed
into place, so a run that fails leaves nothing that looks like an output. An existing output directory is
replaced only if it is a previous rescore output (it has summary.json); any other non-empty one is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..engine import RunInfo, Shard
from ..engine import run as run_job
from ..errors import InputError, OutputError, UsageError
from ..io.staging import commit
from ..io.writers import write_atomic_json
from ..parallel import Chunk, InputMeter
from .run import RescoreReport, RescoreRequest, job, setup

__all__ = ["SUMMARY", "rescore_shards", "rescore_on_ray"]

SUMMARY = "summary.json"


def rescore_shards(req: RescoreRequest) -> tuple[RescoreReport, RunInfo]:
    """Rescore the run's input into its output directory: shards in input order plus summary.json, on the
    run's engine (Ray: the running Ray session, else the run's address, else RAY_ADDRESS, else a local
    instance). Same rows and the same report as `rescore.rescore`."""
    req.run.check()
    if req.run.output is None:
        raise UsageError("rescore into shards needs an output directory")
    out = Path(req.run.output)
    _check_output_dir(out, Path(req.run.input))
    settings, report = setup(req)
    progress = req.run.progress
    meter = InputMeter([req.run.input])
    bar = progress(total=meter.total, desc="rescore", unit=meter.unit) if progress is not None else None
    shards: list[dict[str, Any]] = []

    def fold(chunk: Chunk, part: RescoreReport, shard: Shard | None) -> None:
        assert shard is not None and shard.path is not None  # (a shard of this job is on disk)
        report.merge(part)
        shards.append({"file": os.path.basename(shard.path), "rows": part.rows})
        if bar is not None:
            bar.update(meter.step(chunk, part.rows))

    def then(work: Path, info: RunInfo) -> None:
        if report.rows == 0:
            raise InputError(f"{req.run.input}: no rows to rescore", reason="no_rows")
        info.shards = shards
        engine = {"name": info.engine, "workers": info.workers, "shards": shards}
        write_atomic_json(work / SUMMARY, {**report.to_dict(), "engine": engine})
        commit(work, out, replace=out.exists())

    try:
        with streaming_gc():
            info = run_job(req.run, job(req, settings, report, out), fold, then=then, keep_shards=True)
    finally:
        if bar is not None:
            bar.close()
    return report, info


rescore_on_ray = rescore_shards  # (the name of earlier releases)


def _check_output_dir(out: Path, inp: Path) -> None:
    """The output directory is new, empty, or a previous rescore output (which is replaced); it neither holds
    the input nor lies inside an input directory (a rerun would read its own output)."""
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
