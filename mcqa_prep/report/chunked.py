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
from typing import Any

from ..errors import InputError
from ..fields import contract_stamp, grading_contract, grading_of
from ..parallel import Chunk
from ..records import Finding, Row
from ..validate.batch import BatchView, file_facts
from ..validate.crossrow import KeyColumns, RowKeys
from ..validate.row_checker import RowChecker
from ..validate.row_validator import at_index
from . import merge
from .dataset import REGEX_RULES, DatasetTally
from .rescored import RescoredTally

DATASET = "dataset"
RESCORED = "rescored"
LEADING_MALFORMED = 1000  # unreadable lines held while a file's kind is still unknown


def detect(path: Any, split: str | None) -> str:
    """A file's kind from its first readable row (after at most LEADING_MALFORMED unreadable lines, the next
    line decides); raises what reading it raises."""
    skipped = 0
    for rec, _ in file_facts(path, split):
        if rec.data is None and skipped < LEADING_MALFORMED:
            skipped += 1
            continue
        return RESCORED if grading_of(rec.data) is not None else DATASET
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
    checker = s.checker
    sec: SectionRows | None = None
    key: Any = ()
    names: dict[str, int] = {}
    stamped = manifest is None and not prepared  # each row's contract is its stamp's
    for pos, (rec, f, cols) in enumerate(_read(chunk, checker.cfg, stamped)):
        part.rows += 1
        d = rec.data
        if d is None and cols is None:
            part.malformed += 1
        contract = manifest
        if stamped and d is not None:
            contract = contract_stamp(d).contract
        if sec is None or contract != key:
            sec, key = part.datasets.get(contract), contract
            if sec is None:
                sec = part.datasets[contract] = SectionRows(DatasetTally(examples=s.examples, part=True))
                names = {}
            else:
                names = {n: i for i, n in enumerate(sec.names)}
        findings, keys = checker.check(rec) if f is None else checker.check_facts(f)
        i = len(sec.lines)
        sec.positions.append(pos)
        sec.lines.append(rec.line)
        sec.keys.append(keys)
        if findings:
            sec.found[i] = findings
        if cols is not None:
            t = sec.tally.count_columns(rec.split, *cols)
            tm = cols[2]
        else:
            t = sec.tally.count(rec)
            if t is None or d is None:
                sec.tids.append(-1)
                continue
            tm = d.get("template_metadata")
        tid = sec.tally.last_tid or ""
        n = names.get(tid)
        if n is None:
            n = names[tid] = len(sec.names)
            sec.names.append(tid)
        sec.tids.append(n)
        if findings and any(x.rule in REGEX_RULES for x in findings):
            sec.orx[i] = tm.get("output_regex") if type(tm) is dict else None  # (dataset.output_regex)


def _read(chunk: Chunk, cfg: Any, stamped: bool) -> Iterator[tuple[Row, Any, tuple | None]]:
    """The chunk's rows as validate's chunk_facts gives them, each with what the tallies read of it
    (DatasetTally.count_columns's arguments) when its batch's columns give its facts: such a row's dict is
    not built (None: tally the Row as read). A batch with a metadata column is read whole when each row's
    contract is its stamp's."""
    if not chunk.is_parquet():
        for row in chunk.rows():
            yield row, None, None
        return
    i = 0
    for batch in chunk.batches():
        view = BatchView(batch, chunk.file, chunk.split, chunk.first_line + i, i)
        i += view.n
        whole = stamped and view.linked
        if whole or not any(view.fast):
            for j in range(view.n):
                f = view.facts(j, cfg, True)
                yield (view.row(j), None, None) if f is None else (f.row, f, None)
            continue
        rps = _column(batch, "reward_profiles")
        for j in range(view.n):
            f = view.facts(j, cfg)
            if f is None:
                yield view.row(j), None, None
            else:
                cols = (view.hints[j][0], view.golds[j], view.tms[j], view.modes[j], view.prompts[j], rps[j])
                yield f.row, f, cols


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
