"""The report's row pass on the row engine (mcqa_prep.engine): each chunk's rows tallied into a part
(`report_chunk`, in a worker), the parts folded into the report's tallies in input order (`Folder`, here).

A file's kind (dataset or rescored rows) is decided before its chunks run, from its first readable row
(`detect`: the rule of one pass, leading unreadable lines included), so every chunk of it is tallied one way
only. Per dataset section (grading contract), a part carries the chunk's counts (report/merge.py) and what the
cross-row rules and the findings need of each row: its line, its position in the chunk, its keys (as
`validate` hands them back), its row findings, its template, and the output_regex of a row with a regex
finding. The fold adds the duplicate findings (the section's validator, in input order) and then every
finding of a row, as one pass does: first examples and first messages keep input order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fields import contract_stamp, grading_contract, grading_of
from ..io.paths import STDIN, is_parquet, split_of
from ..io.readers import batch_records, parquet_batches
from ..parallel import Chunk
from ..records import Finding, Row
from ..validate.batch import BatchView, file_facts
from ..validate.crossrow import KeyColumns, RowKeys
from ..validate.row_checker import RowChecker
from ..validate.row_validator import at_index
from . import merge
from .dataset import REGEX_RULES, DatasetTally, output_regex
from .rescored import RescoredTally

DATASET = "dataset"
RESCORED = "rescored"
LEADING_MALFORMED = 1000  # unreadable lines held while a file's kind is still unknown


def detect(path: Any, split: str | None) -> str:
    """A file's kind from its first readable row (after at most LEADING_MALFORMED unreadable lines, the next
    line decides); raises what reading it raises."""
    if str(path) != STDIN and is_parquet(path):
        return _detect_parquet(Path(path), split)
    skipped = 0
    for rec, _ in file_facts(path, split):
        if rec.data is None and skipped < LEADING_MALFORMED:
            skipped += 1
            continue
        return RESCORED if grading_of(rec.data) is not None else DATASET
    return DATASET


def _detect_parquet(path: Path, split: str | None) -> str:
    """detect() of a Parquet file (every row of which is readable): its first batch read as file_facts reads
    it (so reading it raises what it raises), its first row's dict built only when it has a metadata column."""
    for batch in parquet_batches(path, None):
        if batch.num_rows == 0:
            continue
        if "metadata" not in batch.schema.names:
            return DATASET  # (grading_of: no metadata)
        row = next(batch_records(batch.slice(0, 1), str(path), split or split_of(path.name), 1, 0))
        return RESCORED if grading_of(row.data) is not None else DATASET
    return DATASET


@dataclass(frozen=True)
class Settings:
    """What every chunk gets: per input, its kind, whether it is a prepared directory's and its manifest's
    contract; the examples kept; the row checker (validate's)."""

    kinds: tuple[tuple[str, bool, str | None], ...]
    examples: int
    regex_timeout: float
    checker: RowChecker


@dataclass
class SectionRows:
    """One dataset section's rows of one chunk."""

    tally: DatasetTally
    positions: list[int] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    keys: list[RowKeys | None] = field(default_factory=list)
    found: dict[int, list[Finding]] = field(default_factory=dict)  # by position in this section's rows
    tids: list[int] = field(default_factory=list)  # index into names, -1 for an unreadable line
    names: list[str] = field(default_factory=list)
    orx: dict[int, Any] = field(default_factory=dict)  # output_regex of the rows with a regex finding
    cols: KeyColumns | None = None


@dataclass
class Part:
    rows: int = 0
    malformed: int = 0
    unscored: int = 0
    datasets: dict[str | None, SectionRows] = field(default_factory=dict)
    rescored: dict[str | None, RescoredTally] = field(default_factory=dict)


def report_chunk(chunk: Chunk, s: Settings) -> Part | InputError:
    """The engine's per-chunk work: the chunk's rows tallied into a part; the InputError when its bytes
    cannot be read (a damaged Parquet row group)."""
    kind, prepared, manifest = s.kinds[chunk.source]
    part = Part()
    try:
        if kind == DATASET:
            _dataset_rows(chunk, s, part, prepared, manifest)
        else:
            _rescored_rows(chunk, s, part)
    except InputError as exc:
        return exc
    for sec in part.datasets.values():
        sec.cols, sec.keys = KeyColumns.of(sec.keys), []
    return part


def _dataset_rows(chunk: Chunk, s: Settings, part: Part, prepared: bool, manifest: str | None) -> None:
    stamped = manifest is None and not prepared  # each row's contract is its stamp's
    w = _Sections(s, part)
    pos = 0
    for view, rows in _read(chunk, s.checker.cfg, stamped):
        if view is not None:
            w.batch(pos, view, manifest)
            pos += view.n
            continue
        for rec, f in rows:
            d = rec.data
            w.row(pos, rec, f, contract_stamp(d).contract if stamped and d is not None else manifest)
            pos += 1


class _Sections:
    """A chunk's rows into its part's dataset sections, in order."""

    def __init__(self, s: Settings, part: Part) -> None:
        self.s, self.part = s, part
        self.sec: SectionRows | None = None
        self.key: Any = ()
        self.names: dict[str, int] = {}

    def section(self, contract: str | None) -> SectionRows:
        if self.sec is None or contract != self.key:
            sec, self.key = self.part.datasets.get(contract), contract
            if sec is None:
                sec = self.part.datasets[contract] = SectionRows(
                    DatasetTally(examples=self.s.examples, part=True)
                )
                self.names = {}
            else:
                self.names = {n: i for i, n in enumerate(sec.names)}
            self.sec = sec
        return self.sec

    def tid(self, sec: SectionRows, tid: str) -> int:
        n = self.names.get(tid)
        if n is None:
            n = self.names[tid] = len(sec.names)
            sec.names.append(tid)
        return n

    def row(self, pos: int, rec: Row, f: Any, contract: str | None) -> None:
        """One row as read (its facts, when its batch's columns give them, `f`)."""
        self.part.rows += 1
        d = rec.data
        if d is None:
            self.part.malformed += 1
        sec = self.section(contract)
        checker = self.s.checker
        findings, keys = checker.check(rec) if f is None else checker.check_facts(f)
        i = len(sec.lines)
        sec.positions.append(pos)
        sec.lines.append(rec.line)
        sec.keys.append(keys)
        if findings:
            sec.found[i] = findings
        t = sec.tally.count(rec)
        if t is None or d is None:
            sec.tids.append(-1)
            return
        sec.tids.append(self.tid(sec, sec.tally.last_tid or ""))
        if findings and any(x.rule in REGEX_RULES for x in findings):
            sec.orx[i] = output_regex(d)

    def batch(self, pos: int, view: BatchView, contract: str | None) -> None:
        """A batch every row of which has its facts in the columns: each row checked from them (as validate
        checks it), the tallies counted from the columns at once (DatasetTally.count_batch)."""
        n = view.n
        self.part.rows += n
        sec = self.section(contract)
        cfg, check = self.s.checker.cfg, self.s.checker.check_facts
        base = len(sec.lines)
        sec.positions.extend(range(pos, pos + n))
        keys, found, facts = sec.keys, sec.found, view.facts
        for j in range(n):
            findings, k = check(facts(j, cfg))  # type: ignore[arg-type]
            keys.append(k)
            if findings:
                found[base + j] = findings
        sec.lines.extend(range(view.first_line, view.first_line + n))
        rps = _column(view.batch, "reward_profiles")
        prompts: list[str] = view.prompts  # type: ignore[assignment]  # (every row is fast: each has one)
        tids = sec.tally.count_batch(
            view.split, [h[0] for h in view.hints], view.golds, view.tms, view.modes, prompts, rps
        )
        names = self.names
        for t in dict.fromkeys(tids):  # (first-seen order)
            if t not in names:
                self.tid(sec, t)
        sec.tids.extend(map(names.__getitem__, tids))
        for i in range(base, base + n):
            fs = found.get(i)
            if fs and any(x.rule in REGEX_RULES for x in fs):
                tm = view.tms[i - base]
                sec.orx[i] = tm.get("output_regex") if type(tm) is dict else None  # (output_regex)


def _read(chunk: Chunk, cfg: Any, stamped: bool) -> Iterator[tuple[BatchView | None, Any]]:
    """The chunk in order, as validate's chunk_facts reads it: (view, None) for a Parquet batch every row
    of which has its facts in its columns (no row's dict is built there), else (None, its rows with their
    facts or None). A batch with a metadata column is read whole when each row's contract is its stamp's."""
    if not chunk.is_parquet():
        yield None, ((row, None) for row in chunk.rows())
        return
    i = 0
    for batch in chunk.batches():
        view = BatchView(batch, chunk.file, chunk.split, chunk.first_line + i, i)
        i += view.n
        if all(view.fast) and not (stamped and view.linked):
            yield view, None
        else:
            yield None, _whole(view, cfg)


def _whole(view: BatchView, cfg: Any) -> Iterator[tuple[Row, Any]]:
    for j in range(view.n):
        f = view.facts(j, cfg, True)
        yield (view.row(j), None) if f is None else (f.row, f)


def _rescored_rows(chunk: Chunk, s: Settings, part: Part) -> None:
    for rec in chunk.rows():
        part.rows += 1
        d = rec.data
        if d is None:
            part.malformed += 1
        g = grading_of(d)
        if g is None:
            if d is not None:
                part.unscored += 1  # a row without metadata.grading in a rescored file: not pooled
            continue
        c = grading_contract(g)
        t = part.rescored.get(c)
        if t is None:
            t = part.rescored[c] = RescoredTally(examples=s.examples, part=True)
        t.add(rec, g)


def _column(batch: Any, name: str) -> list[Any]:
    """A column's values as the reader's rows hold them (None where the batch has no such column)."""
    if name not in batch.schema.names:
        return [None] * batch.num_rows
    return list(batch.column(name).to_pylist())


class Folder:
    """The fold: each chunk's part into the report's tallies, in input order. `dataset(contract, name)` and
    `rescored(contract)` give the report's section tallies; `failed(source, message)` records a file that
    could not be read (from this chunk on)."""

    def __init__(
        self,
        dataset: Callable[[str | None, str], DatasetTally],
        rescored: Callable[[str | None], RescoredTally],
        entries: list[dict[str, Any]],
        failed: Callable[[int, str], None],
    ) -> None:
        self.dataset = dataset
        self.rescored = rescored
        self.entries = entries
        self.failed_cb = failed
        self.failed: set[int] = set()
        self.base: dict[int, int] = {}  # per input: rows folded so far (the index of the chunk's first row)

    def fail(self, source: int, message: str) -> None:
        if source not in self.failed:
            self.failed.add(source)
            self.failed_cb(source, message)

    def __call__(self, chunk: Chunk, part: Any, _shard: Any) -> None:
        if chunk.source in self.failed:
            return  # the file could not be read further: its later chunks do not count
        failure = chunk.failure if chunk.failure is not None else part
        if isinstance(failure, Exception):
            self.fail(chunk.source, str(failure))
            return
        e = self.entries[chunk.source]
        e["rows"] += part.rows
        e["malformed"] += part.malformed
        e["unscored"] += part.unscored
        base = self.base.get(chunk.source, 0)
        self.base[chunk.source] = base + part.rows
        for contract, sec in part.datasets.items():
            self._section(self.dataset(contract, e["path"]), sec, chunk, base)
        for contract, rt in part.rescored.items():
            merge.rescored(self.rescored(contract), rt)

    def _section(self, t: DatasetTally, sec: SectionRows, chunk: Chunk, base: int) -> None:
        merge.dataset(t, sec.tally)
        v = t.validator
        cols = sec.cols
        assert cols is not None
        n = len(sec.lines)
        if sec.positions and sec.positions[-1] == n - 1:  # the chunk's rows, all of them: at once
            found = v.absorb_chunk(chunk.file, chunk.split, sec.lines, base, cols, sec.found)
        else:  # rows of several sections: one at a time, at their index in the file
            found = {}
            missing = set(cols.missing)
            for i in range(n):
                pos = base + sec.positions[i]
                rec = Row(chunk.file, sec.lines[i], pos, None, split=chunk.split)
                fs = at_index(sec.found.get(i, []), pos)
                fs = v.absorb(rec, fs, None if i in missing else cols.row(i))
                if fs:
                    found[i] = fs
        for i in sorted(found):
            tid = sec.tids[i]
            tt = merge.template_of(t, sec.names[tid]) if tid >= 0 else None
            t.findings(found[i], sec.orx.get(i), tt)
