"""convert on the row engine (mcqa_prep.engine): each chunk's rows converted by a worker (`convert_chunk`),
the chunks folded in input order here (convert/merge.py), the output committed once every chunk is folded.

What may run on the engine (`engine_able`): local JSONL and Parquet files (pulled directories too).
CSV/TSV and `.json` documents are not cut into byte ranges (a quoted cell or a JSON document may span lines)
and a hub dataset is a stream of the `datasets` library: such runs convert their rows in one process
(run.Run.source). Option balancing (`--shuffle`) decides each row's order from the counts of every earlier
row, so it runs in two passes (convert/shuffled.py: the rows' facts, then their placements replayed here in
input order); `--shuffle --permute`, `--shuffle` into a device or on one local core, and any input of one
chunk stay in one process.

A row's index (its uuid, its template pick and its random choices derive from it) counts the rows before it
in its source: a Parquet chunk's comes from its first record number, a JSONL chunk's from the rows (non-blank
lines) of the chunks before it, counted by the engine as it cuts the file (the job's `count_rows`: one read of
the file plans the chunks and counts their rows, io.newlines.RowCount). The worker converts its
chunk's rows with the run's own row loop (run.Run.rows) into a shard (its output lines, then its reject
lines) and a part (its counts, its first rejects, the template controls its rows asked for first, and the
run-level error that stopped it, if any), which the fold merges as one pass would have counted.
"""

from __future__ import annotations

import io
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..engine import Job, Piece
from ..engine import run as engine_run
from ..engine.ray_run import held
from ..errors import McqaPrepError
from ..io.paths import is_special
from ..io.readers import batch_rows, read_jsonl
from ..parallel import Chunk, check_workers, chunk_bytes_for, count_chunks
from ..runs import RunRequest
from .balance import scan_pins
from .merge import Folder
from .orders import PermuteSpec
from .outputs import Outputs
from .run import Run, SourcePlan, row_hash
from .shapes import RowReject
from .shuffled import FACT, Facts, feeder, place
from .sources import SourceRow, Stream
from .templates import Template

COMMAND = "convert"


def engine_able(
    srcs: Sequence[Stream],
    shuffle: bool,
    permute: bool = False,
    out: Any = None,
    req: RunRequest | None = None,
) -> bool:
    """Whether the run's rows are converted in chunks on the engine: every source a local JSONL or Parquet
    file (a `.json` file may hold one JSON document), and more than one chunk (one chunk gains nothing, and
    its shard would take the output's room again). With --shuffle, not with --permute (each variant's gold
    counts for the balance: its orders would have to be drawn before the placements), not into a device, and
    not on one local core (its two passes pay off only in parallel)."""
    if not srcs or req is None:
        return False
    for s in srcs:
        if s.path is None or s.kind not in ("jsonl", "parquet"):
            return False
        if s.kind == "jsonl" and s.path.suffix.lower() == ".json":
            return False
    if shuffle and (permute or out is None or is_special(out)):
        return False
    if shuffle and req.engine == "local" and check_workers(req.workers) == 1:
        return False
    cb = req.chunk_bytes or chunk_bytes(srcs)
    try:
        return sum(count_chunks(str(s.path), cb) for s in srcs) > 1
    except McqaPrepError:  # (a file that cannot be read is reported where it is read)
        return False


@dataclass(frozen=True)
class Settings:
    """What every chunk gets: the run's templates (not compiled: each worker compiles its own) and options,
    per source its plan (None: planning it failed, and the fold raises that in its place) and its first row's
    index (a JSONL chunk's first is that plus its file's rows before it, counted as the engine cuts the file:
    Chunk.rows_before)."""

    token: str  # this run (a worker builds its Run once per run)
    tmpls: tuple[Template, ...]
    shuffle: bool
    seed: int
    pins: frozenset[str]
    max_shown: int
    permute: PermuteSpec | None
    plans: tuple[SourcePlan | None, ...]
    starts: tuple[int, ...]  # each source's first row index (a pulled directory's files continue a numbering)
    placements: str | None = None  # --shuffle: the directory of each chunk's placements (convert/shuffled.py)


@dataclass
class Part:
    """One chunk's conversion, for the fold: what one pass would have counted over its rows."""

    out_bytes: int = 0  # the shard: its output lines (this many bytes), then its reject lines
    read: int = 0
    written: int = 0
    lines: int = 0  # output lines (with --permute, several per row)
    ensures: list[tuple[int, int, Any]] = field(default_factory=list)  # (template, options, row), first seen
    error: McqaPrepError | None = None  # a run-level error that stopped the chunk (after its rows so far)
    by_reason: Counter[str] = field(default_factory=Counter)
    tpl_rows: Counter[str] = field(default_factory=Counter)
    n_rows: Counter[int] = field(default_factory=Counter)
    gold: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    pinned: tuple[int, int, int] = (0, 0, 0)  # rows with pins, gold pinned, unresolved references
    unresolved_shown: list[dict[str, Any]] = field(default_factory=list)
    shown: list[dict[str, Any]] = field(default_factory=list)
    permute: dict[str, Any] | None = None
    placed: int = 0  # --shuffle: rows that took their placement (written, or rejected after it)


# ---- the driver's plan ----------------------------------------------------------------------------------


def chunk_bytes(srcs: Sequence[Stream]) -> int:
    """The JSONL chunk size of the run (what the engine would choose for its JSONL files), fixed here so that
    `engine_able` counts the chunks the engine cuts."""
    jsonl = [s.path for s in srcs if s.kind == "jsonl" and s.path is not None]
    return chunk_bytes_for(sum(os.path.getsize(p) for p in jsonl))


def make_job(settings: Settings, srcs: Sequence[Stream], out: Path, identity: dict[str, Any]) -> Job:
    return Job(
        COMMAND,
        tuple((str(s.path), s.split) for s in srcs),
        convert_chunk,
        settings,
        identity,
        out,
        shard_ext=".jsonl",
        count_rows=True,  # (a JSONL chunk's first row index)
    )


def settings_for(
    run: Run, tmpls: Sequence[Template], plans: Sequence[SourcePlan | None], srcs: Sequence[Stream]
) -> Settings:
    """The chunks' settings: `tmpls` are copies the run has not compiled."""
    return Settings(
        uuid.uuid4().hex,
        tuple(tmpls),
        run.shuffle,
        run.seed,
        run.user_pins,
        run.max_shown,
        run.permute_spec,
        tuple(plans),
        tuple(s.start_index for s in srcs),
    )


def identity(run: Run, plans: Sequence[SourcePlan | None], mapping: Any) -> dict[str, Any]:
    """What makes the job this job (a resume under anything else is refused): the templates (their text),
    the options, each source's identity, output and column map."""
    return {
        "templates": [{**t.describe(), "source": t.source} for t in run.tmpls],
        "shuffle": run.shuffle,
        "seed": run.seed,
        "pins": sorted(run.user_pins),
        "max_shown": run.max_shown,
        "permute": run.permute_spec.doc() if run.permute_spec is not None else None,
        "mapping": [mapping.preset, list(mapping.pairs), list(mapping.drop)],
        "sources": [
            None if p is None else [p.ident, p.key, p.prefix, p.pname, p.cmap.to_dict() if p.cmap else None]
            for p in plans
        ],
    }


def pristine(tmpls: Sequence[Template]) -> list[Template]:
    """Copies of templates not compiled yet (a compiled one may hold a sandbox process: each worker starts
    its own)."""
    return [
        Template(**{f.name: getattr(t, f.name) for f in fields(t) if not f.name.startswith("_")})
        for t in tmpls
    ]


# ---- the worker -----------------------------------------------------------------------------------------

_RUN: dict[str, Any] = {}  # the worker's Run of the current run: (pid, token) -> Run


class Noted:
    """A worker's template checker: it runs no control, it notes each (template, option count) with the
    first row that asks for it, for the fold to run the controls in input order."""

    def __init__(self, templates: Sequence[Template]) -> None:
        self.templates = templates
        self.done: set[tuple[str, int]] = set()
        self.noted: list[tuple[int, int, Any]] = []

    def ensure(self, t: Template, n: int, data: Any = None) -> None:
        if (t.id, n) in self.done:
            return
        self.done.add((t.id, n))
        k = next(i for i, x in enumerate(self.templates) if x is t)
        self.noted.append((k, n, data))


def _run_for(s: Settings) -> Run:
    key = f"{os.getpid()}:{s.token}"
    run = _RUN.get(key)
    if run is None:
        _RUN.clear()
        tmpls = pristine(s.tmpls)
        run = _RUN[key] = Run(
            tmpls,
            shuffle=s.shuffle,
            seed=s.seed,
            pins=s.pins,
            max_shown=s.max_shown,
            permute=s.permute,
            checker=Noted(tmpls),
        )
    return run


class _Lines:
    """The worker's outputs: one source's lines in memory (Outputs' interface, as run.Run.rows uses it)."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.rows: Counter[str] = Counter()

    def handle(self, _key: str) -> io.BytesIO:
        return self.buf


def _tick() -> None:
    pass


def convert_chunk(chunk: Chunk, s: Settings) -> Piece:
    """The engine's per-chunk work: the chunk's rows converted with the run's row loop; its output lines and
    reject lines as the shard, its counts as the part."""
    part = Part()
    plan = s.plans[chunk.source]
    if plan is None:  # planning the source failed: the fold raises that, in its place
        return Piece(b"", part)
    run = _run_for(s)
    noted = Noted(run.mix.templates)
    feed = feeder(s.placements, chunk, plan.label) if s.placements is not None else None
    run.reset(noted, feed)
    sdoc = {"read": 0, "written": 0, "rejected": 0}
    outs, rj = _Lines(), io.BytesIO()
    try:
        run.rows(plan, sdoc, _rows(chunk, plan, s), outs, rj, _tick)
    except McqaPrepError as exc:  # a run-level error (an empty prompt, a file that changed): the fold's
        part.error = exc
    part.ensures = noted.noted
    part.read, part.written = sdoc["read"], sdoc["written"]
    part.lines = outs.rows[plan.key]
    part.by_reason, part.tpl_rows, part.n_rows = run.by_reason, run.tpl_rows, run.n_rows
    part.gold = run.balancer.counts
    part.pinned = (run.n_pinned, run.n_gold_pinned, run.n_unresolved)
    part.unresolved_shown, part.shown = run.unresolved_shown, run.shown
    if run.permute is not None:
        p = run.permute
        part.permute = {"questions": p.questions, "variants": p.variants, "by_variants": p.by_variants,
                        "short": p.short, "anchored": p.anchored}  # fmt: skip
    part.placed = feed.used if feed is not None else 0
    out = outs.buf.getvalue()
    part.out_bytes = len(out)
    return Piece(out + rj.getvalue(), part)


def _rows(chunk: Chunk, plan: SourcePlan, s: Settings) -> Iterator[SourceRow]:
    """The chunk's rows as the source's stream yields them: (index, line, data, error)."""
    if chunk.is_parquet():
        start = s.starts[chunk.source]
        i = chunk.first_line - 1  # (records before the chunk in its file)
        cols = plan.projection
        keep = set(cols or ())
        for batch in chunk.batches():
            if cols is not None:
                names = batch.schema.names
                batch = batch.select([j for j, c in enumerate(names) if c in keep])
            for data in batch_rows(batch)[0]:
                yield start + i, i + 1, data, None
                i += 1
        return
    lines = chunk.jsonl_lines() or []
    assert chunk.rows_before is not None  # (the job counts them: make_job, shuffled.place)
    index = s.starts[chunk.source] + chunk.rows_before
    for rec in read_jsonl(lines, plan.label, plan.ident.get("split"), first_line=chunk.first_line,
                          first_index=index):  # fmt: skip
        yield rec.index, rec.line, rec.data, rec.error


# ---- the run --------------------------------------------------------------------------------------------


def run_on_engine(
    req: RunRequest,
    run: Run,
    tmpls: Sequence[Template],
    srcs: Sequence[Stream],
    mapping: Any,
    outputs: Outputs,
    rj: Any,
    bar: Any,
    commit: Callable[[], None],
) -> None:
    """Convert every source's rows on the engine into `outputs` and `rj`, then `commit()` (before the work
    directory goes). The sources are planned first, in order; a source that fails to plan is raised by the
    fold in its place (after the rows of the sources before it), and the sources after it are not planned,
    as one pass never reaches them."""
    plans: list[SourcePlan | None] = []
    errors: list[BaseException | None] = []
    for src in srcs:
        if any(e is not None for e in errors):
            plans.append(None)
            errors.append(None)
            continue
        try:
            plans.append(run.plan(src, outputs, mapping)[1])
            errors.append(None)
        except McqaPrepError as exc:
            plans.append(None)
            errors.append(exc)
    cb = req.chunk_bytes or chunk_bytes(srcs)
    req = replace(req, chunk_bytes=cb, output=outputs.out)
    settings = settings_for(run, tmpls, plans, srcs)
    ident = identity(run, plans, mapping)
    keys = [p.key if p is not None else "" for p in plans]

    def convert_all(placements: str | None) -> None:
        job = make_job(replace(settings, placements=placements), srcs, outputs.out, ident)
        folder = Folder(run, errors, outputs, rj, bar, shuffled=placements is not None)
        folder.keys = keys

        def then(_work: Path, _info: Any) -> None:
            folder.finish()
            commit()

        engine_run(req, job, folder, then=then)

    try:
        if not run.shuffle:
            convert_all(None)
            return
        sources = tuple((str(s.path), s.split) for s in srcs)
        with held(req):  # (on Ray, both passes run on one connection: its start is paid once)
            place(req, run, settings, sources, keys, ident, outputs.out, order_chunk, convert_all)
    finally:
        _RUN.clear()  # (the run's templates, when its chunks ran in this process)


def order_chunk(chunk: Chunk, s: Any) -> Facts:
    """Pass 1 of --shuffle, per chunk (convert/shuffled.py). A run-level failure (a file that changed) ends
    the chunk's facts: the conversion raises it in its place."""
    plan = s.plans[chunk.source]
    if plan is None or plan.cmap is None:  # (the source failed to plan, or no row held data)
        return Facts()
    extract = plan.extractor().extract
    salt = _run_for(s).seed_salt
    out = bytearray()
    facts = Facts()
    try:
        for index, _line, data, error in _rows(chunk, plan, s):
            if error is not None:
                continue
            try:
                _q, choices, gold, *_rest = extract(data)
            except RowReject:
                continue
            h = row_hash(plan.prefix, index, salt)[1]
            pinned, unresolved = scan_pins(choices, s.pins)
            mask = 0
            for p in pinned:
                mask |= 1 << p
            out += FACT.pack(len(choices), gold, unresolved is not None, mask, h[8:])
            if unresolved is not None and len(facts.unresolved) < s.max_shown:
                facts.unresolved.append((unresolved, list(choices)))
    except McqaPrepError:
        pass
    facts.rows = bytes(out)
    return facts
