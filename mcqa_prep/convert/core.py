"""convert(): source rows -> NeMo Gym `mcqa` rows, streamed in one pass, written atomically.

Here: the arguments and paths checked, the sources planned, the outputs opened and committed (or removed
on any failure). The row loop is run.Run. Counts: read = written + rejected.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, McqaPrepError, UsageError
from ..io import AtomicFile
from ..io.paths import check_output, distinct_inputs, is_special
from ..io.writers import output_error
from ..progress import Progress
from ..runs import RunRequest
from .balance import norm_pin
from .chunked import engine_able, pristine, run_on_engine
from .orders import PermuteSpec
from .outputs import REPORT_NAME, Outputs
from .run import Mapping, Run, Ticker
from .shapes import REJECT_REASONS
from .shuffled import Replan
from .sources import Stream, plan_sources
from .template_files import load_templates
from .templates import Template


class ConvertError(McqaPrepError):
    """The conversion produced no usable output (every row rejected)."""


@dataclass
class ConvertReport:
    """What convert() did: the JSON report (also written as convert.json in directory mode) and the first
    rejects for display."""

    doc: dict[str, Any]
    rejects_shown: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.doc


# ------------------------------------------------------------------------------------------ paths


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except (ValueError, OSError):
        return False


def default_rejects(out: Path) -> Path:
    """`x.jsonl` -> `x.rejects.jsonl`; a directory `d` -> `d.rejects.jsonl` beside it (never inside, where
    `prepare` and `validate` would read it as data); a device or a pipe (`-o /dev/null`) -> /dev/null (no file
    is made beside a device; --rejects names one, and the report counts the rejected rows either way)."""
    if is_special(out):
        return Path(os.devnull)
    if out.suffix == ".jsonl":
        return out.with_name(out.name[: -len(".jsonl")] + ".rejects.jsonl")
    return out.with_name(out.name + ".rejects.jsonl")


def _check_paths(out: Path, rejects: Path, args: Sequence[str], sources: Sequence[Stream]) -> None:
    inputs: list[str | Path] = [*args, *(src.path for src in sources if src.path is not None)]
    check_output(out, inputs)
    check_output(rejects, inputs, "the rejects file")
    for src in sources:
        if src.path is not None and _inside(src.path, out):
            raise UsageError(f"the output {out} holds an input ({src.path})", reason="output_is_input")
    if _same(out, rejects) and not is_special(out):  # (both /dev/null: nothing is kept, nothing mixed)
        raise UsageError(
            f"the output and the rejects file are the same path ({out})", reason="output_is_rejects"
        )
    seen: dict[tuple[Any, ...], Stream] = {}
    for src in sources:
        key = (src.dataset, src.config, src.split, src.file, src.start_index)  # shards continue a numbering
        if key in seen:
            raise UsageError(
                f"{seen[key].label} and {src.label} have the same identity (dataset {src.dataset!r}, split "
                f"{src.split!r}, file {src.file!r}): their rows would get the same uuids",
                reason="same_source_identity",
            )
        seen[key] = src
    # (after the identity check, whose message names the uuids: the same bytes under another name and dataset)
    distinct_inputs((src.path for src in sources if src.path is not None), "source file")
    if out.suffix != ".jsonl" and out.exists() and not is_special(out):  # a device is written in place
        if not out.is_dir():
            raise UsageError(f"-o {out}: exists and is not a directory (a file output must end in .jsonl)")
        if any(out.iterdir()) and not (out / REPORT_NAME).is_file():
            raise UsageError(
                f"-o {out}: the directory exists and was not written by convert (no {REPORT_NAME}); "
                "choose a new output directory or remove it"
            )
    if out.suffix == ".jsonl" and out.is_dir():
        raise UsageError(f"-o {out}: is a directory")


# ------------------------------------------------------------------------------------------ convert


def convert(
    sources: Sequence[str],
    out: str | os.PathLike,
    *,
    preset: str | None = None,
    mapping: Sequence[str] = (),
    templates: Sequence[str] = (),
    shuffle: bool = False,
    seed: int = 0,
    pins: Sequence[str] = (),
    drop: Sequence[str] = (),
    revision: str | None = None,
    config: str | None = None,
    split: str | None = None,
    dataset: str | None = None,
    rejects: str | os.PathLike | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    max_shown: int = 20,
    permute: PermuteSpec | None = None,
    request: RunRequest | None = None,
) -> ConvertReport:
    """Convert SOURCES into NeMo Gym mcqa rows at `out` (a .jsonl file, or a directory of <split>.jsonl).
    Raises UsageError (bad option, missing input, template failing its controls), InputError (unreadable
    input), ConvertError (no row could be converted). Nothing is written under `out` unless it succeeds.
    `permute`: each row is written as its option orders, each rendered by its template (convert/permute.py).
    `request`: how to run it (workers, engine, resume; None: one worker); local JSONL and Parquet sources
    without --shuffle are converted in chunks on the row engine, any other run in this process
    (convert/chunked.py)."""
    out_p = Path(out)
    if str(out) == "-":
        raise UsageError("-o -: convert writes a file or a directory (output must be atomic), not stdout")
    rejects_p = Path(rejects) if rejects is not None else default_rejects(out_p)
    tmpls = load_templates(templates)
    uncompiled = pristine(tmpls)
    srcs = plan_sources(
        sources,
        revision=revision,
        config=config,
        split=split,
        dataset=dataset,
        verify=verify,
        progress=progress,
    )
    _check_paths(out_p, rejects_p, sources, srcs)
    _check_source_options(srcs, revision, config)
    run = Run(
        tmpls,
        shuffle=shuffle,
        seed=seed,
        pins=frozenset(norm_pin(p) for p in pins if p.strip()),
        max_shown=max_shown,
        permute=permute,
    )
    total = sum(s.num_rows() or 0 for s in srcs) if all(s.kind == "parquet" for s in srcs) else None
    bar = progress(total=total, desc="convert", unit="row") if progress is not None else None
    if request is None:
        request = RunRequest(tuple(str(s.path or s.label) for s in srcs), out_p, 1)
    on_engine = (
        (request, uncompiled) if engine_able(srcs, shuffle, permute is not None, out_p, request) else None
    )
    maps = Mapping(preset, tuple(mapping), tuple(drop))
    try:
        try:
            doc = _write(run, srcs, maps, out_p, rejects_p, Ticker(bar), on_engine)
        except Replan:
            # a row rejected after its --shuffle placement: one pass decides the placements after it
            run.checker.close()
            if bar is not None and hasattr(bar, "reset"):
                bar.reset()  # (the rows are read again from the first)
            run = Run(
                tmpls, shuffle=shuffle, seed=seed, pins=run.user_pins, max_shown=max_shown, permute=permute
            )
            doc = _write(run, srcs, maps, out_p, rejects_p, Ticker(bar))
    finally:
        run.checker.close()
        if bar is not None and hasattr(bar, "close"):
            bar.close()
    return ConvertReport(doc, run.shown)


def _check_source_options(srcs: Sequence[Stream], revision: str | None, config: str | None) -> None:
    if revision is not None and not any(s.kind == "hub" for s in srcs):
        raise UsageError("a revision applies to hub datasets (owner/name); no source is one", reason="usage")
    if config is not None and not any(s.kind == "hub" or s.commit is not None for s in srcs):
        raise UsageError(
            "a config applies to hub datasets and pulled directories; no source is one", reason="usage"
        )


def _write(
    run: Run,
    srcs: Sequence[Stream],
    mapping: Mapping,
    out: Path,
    rejects: Path,
    tick: Ticker,
    on_engine: tuple[RunRequest, list[Template]] | None = None,
) -> dict[str, Any]:
    """Stream every source through `run` into the outputs and the rejects file (in this process, or in
    chunks on the row engine: `on_engine`, the run's request and its templates not compiled), then commit
    both with the report; on any failure neither is left behind. Returns the report document."""
    outputs = Outputs(out)
    rejects_atomic = AtomicFile(rejects, "wb")
    rj = None
    got: dict[str, Any] = {}

    def commit() -> None:
        nonlocal rj
        tick.flush()
        if run.totals()[1] == 0:
            message, reason, details = run.nothing_converted()
            raise ConvertError(message, reason=reason, **details)
        doc = run.report(out, rejects, outputs)
        rejects_atomic.__exit__(None, None, None)
        rj = None
        try:
            outputs.commit(doc)
        except BaseException:
            # the rows could not be put in place: their rejects file must not stay, looking complete
            with contextlib.suppress(OSError):
                rejects.unlink()
            raise
        got["doc"] = doc

    try:
        outputs.open()
        rj = rejects_atomic.__enter__()
        if on_engine is not None:
            req, tmpls = on_engine
            run_on_engine(req, run, tmpls, srcs, mapping, outputs, rj, tick.bar, commit)
        else:
            for src in srcs:
                run.source(src, outputs, rj, tick, mapping)
            commit()
        return got["doc"]
    except BaseException as exc:
        if rj is not None:
            rejects_atomic.__exit__(type(exc), exc, exc.__traceback__)
        outputs.abort(exc)
        if isinstance(exc, OSError):  # a full disk, a read-only directory: a failure, not a crash
            raise _os_failure(exc, out) from None
        raise


def _os_failure(exc: OSError, out: Path) -> McqaPrepError:
    """An OSError that reached convert: an output error (with the writers' reason: disk full, read-only,
    permission) unless it names a file that is not one of the outputs."""
    name = exc.filename
    if name is None or str(name) == str(out) or str(name).startswith(str(out.parent / f".{out.name}.")):
        return output_error(exc, out)
    return InputError(f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable")


def reject_reasons() -> dict[str, str]:
    return dict(REJECT_REASONS)


def template_list() -> list[Template]:
    from .templates import BUILTIN

    return list(BUILTIN.values())
