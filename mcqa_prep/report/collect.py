"""The inputs' rows, read on the row engine (report/chunked.py; stdin and pass-rate breakdowns in one streaming
pass here) -> the report document (a JSON-ready dict).

Inputs are resolved as every command resolves them (`sources.resolve`: pulled and prepared directories are
verified first). Each data file is a dataset file or a rescored file, decided by its first readable row:
a row that carries a `metadata.grading` object (what `rescore` writes on every output row) makes it a
rescored file; pulled and prepared directories always hold dataset rows.

Rows are never pooled across grading contracts. Dataset rows go to one section per contract: the manifest's
for a prepared directory, else the row's own stamp (`metadata.mcqa_prep.contract`), else the section of
rows that were not prepared. Rescored rows go to one section per `metadata.grading.contract`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .._perf import streaming_gc
from .._version import __version__
from ..engine import Job
from ..engine import run as run_job
from ..errors import InputError
from ..fields import contract_stamp, grading_contract, grading_of
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..io.paths import data_kind, is_special
from ..parallel import Chunk, InputMeter, rows_estimate
from ..passrates.positions import drift_of_tables
from ..passrates.table import read_table
from ..progress import Progress
from ..records import Finding, Row, display_name
from ..runs import RunRequest
from ..sources import KIND_PREPARED, KIND_PULLED, KIND_STDIN, Source, resolve
from ..validate.batch import file_facts
from ..validate.facts import Config
from ..validate.row_checker import RowChecker
from . import audit_view, breakdown_view, dataset_view, positions_view, rescored_view
from .breakdown import Breakdown, load_groups
from .chunked import DATASET, LEADING_MALFORMED, RESCORED, Folder, Settings, detect, report_chunk
from .dataset import DatasetTally
from .rescored import RescoredTally
from .spec import REPORT_VERSION

PASSRATES = "passrates"
TICK = 1024
DETECTION = (
    "A file is a rescored file when its first readable row carries a metadata.grading object (rescore "
    "writes one on every output row); otherwise, and always for pulled and prepared directories, it holds "
    "dataset rows."
)
POOLING = (
    "Rows graded or prepared under different grading contracts are never pooled: each contract has its own "
    "section, and numbers are only comparable within a section."
)


@dataclass
class _State:
    examples: int
    regex_timeout: float
    manifest_contracts: dict[str, str]
    datasets: dict[str | None, DatasetTally] = field(default_factory=dict)
    dataset_inputs: dict[str | None, list[str]] = field(default_factory=dict)
    rescored: dict[str | None, RescoredTally] = field(default_factory=dict)
    breakdowns: list[Breakdown] = field(default_factory=list)  # pass-rate tables (--pass-rates)

    def dataset(self, contract: str | None, name: str) -> DatasetTally:
        t = self.datasets.get(contract)
        if t is None:
            t = self.datasets[contract] = DatasetTally(
                examples=self.examples, regex_timeout=self.regex_timeout
            )
            self.dataset_inputs[contract] = []
        names = self.dataset_inputs[contract]
        if not names or names[-1] != name:
            if name not in names:
                names.append(name)
        return t

    def rescored_tally(self, contract: str | None) -> RescoredTally:
        t = self.rescored.get(contract)
        if t is None:
            t = self.rescored[contract] = RescoredTally(examples=self.examples)
        return t


def _display(src: Source) -> str:
    if src.kind in (KIND_PULLED, KIND_PREPARED):
        return display_name(f"{src.arg.rstrip('/')}/{src.name}")
    return "-" if src.kind == KIND_STDIN else display_name(src.path)


class _Reader:
    """Routes the rows of one source to the tallies, deciding the file's kind from its first readable row."""

    def __init__(self, state: _State, src: Source, entry: dict[str, Any], tick: Callable[[], None]):
        self.state = state
        self.src = src
        self.entry = entry
        self.tick = tick
        self.kind: str | None = DATASET if src.kind in (KIND_PULLED, KIND_PREPARED) else None
        self.prepared = src.kind == KIND_PREPARED
        self.contract = state.manifest_contracts.get(src.arg) if self.prepared else None
        self.name = entry["path"]
        self._tally: DatasetTally | None = None  # the section the previous row went to, and its contract
        self._tally_key: str | None = None

    def run(self) -> None:
        pending: list[Row] = []
        tick = self.tick
        for rec, facts in file_facts(self.src.path, self.src.split):
            tick()
            if self.kind is None:
                if rec.data is None and len(pending) < LEADING_MALFORMED:
                    pending.append(rec)
                    continue
                self.kind = RESCORED if grading_of(rec.data) is not None else DATASET
                self.entry["detected"] = self.kind
                for r in pending:
                    self.route(r)
                pending.clear()
            self.route(rec, facts)
        if self.kind is None:
            self.kind = self.entry["detected"] = DATASET
            for r in pending:
                self.route(r)

    def route(self, rec: Row, facts: Any = None) -> None:
        e = self.entry
        e["rows"] += 1
        d = rec.data
        if d is None:
            e["malformed"] += 1
        if self.kind == DATASET:
            contract = self.contract
            if contract is None and d is not None and not self.prepared:
                contract = contract_stamp(d).contract
            if self._tally is None or contract != self._tally_key:
                self._tally, self._tally_key = self.state.dataset(contract, self.name), contract
            self._tally.add(rec, facts)
            if d is not None:
                for b in self.state.breakdowns:
                    b.add_row(d)
            return
        g = grading_of(d)
        if g is None:
            if d is not None:
                e["unscored"] += 1  # a row without metadata.grading in a rescored file: not pooled
            return
        c = grading_contract(g)
        self.state.rescored_tally(c).add(rec, g)
        for b in self.state.breakdowns:
            if d is not None and b.table.contract_id == c:  # an example only under the table's contract
                b.add_rollout(d)


def _entry(src: Source) -> dict[str, Any]:
    if src.kind in (KIND_PULLED, KIND_PREPARED, KIND_STDIN):
        kind = src.kind
    else:
        kind = data_kind(src.path) or "jsonl"
    return {
        "path": _display(src),
        "argument": display_name(src.arg),
        "kind": kind,
        "split": src.split,
        "detected": DATASET if src.kind in (KIND_PULLED, KIND_PREPARED) else None,
        "rows": 0,
        "malformed": 0,
        "unscored": 0,
        "error": None,
    }


def build_report(
    paths: Iterable[str | os.PathLike],
    *,
    examples: int = 3,
    verify: bool = True,
    progress: Progress | None = None,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    title: str | None = None,
    pass_rates: Iterable[str | os.PathLike] = (),
    by: Iterable[str] = (),
    audits: Iterable[str | os.PathLike] = (),
    drift: tuple[str | os.PathLike, str | os.PathLike] | None = None,
    allow_stale: bool = False,
    workers: int | None = 1,
    run: RunRequest | None = None,
) -> dict[str, Any]:
    """The report document of datasets and rescored files: every number behind every plot. `pass_rates` are
    pass-rate tables (one section per table group and model, broken down by source and by each `by` column).
    `audits` are audit documents (`mcqa-prep audit -o FILE`), each shown as a section beside the datasets
    (audit_view.py). `drift`: two pass-rate tables (before, after: one model each), shown as the letter-prior
    drift between them (report/positions_view.py).
    `allow_stale`: a preparation of another preparation or grader version is read (listed in
    the document's `stale_preparations`) instead of refused.
    `workers` processes read chunks of the files (None: every core), with the same document for any number;
    `run` (runs.RunRequest), when given, says how instead (workers, engine, resume). Stdin, and a report
    with pass-rate tables, are read in this process, row by row.

    Raises InputError when no row could be read from any input, or an audit document is not one (and what
    sources.resolve raises)."""
    audit_docs = [(str(a), audit_view.load(a)) for a in audits]
    drift_doc = None
    if drift is not None:
        drift_doc = drift_of_tables(read_table(drift[0], progress), read_table(drift[1], progress))
    found = resolve(list(paths), verify=verify, progress=progress, allow_stale=allow_stale)
    state = _State(examples, regex_timeout, {arg: m.contract_id for arg, m in found.manifests})
    state.breakdowns = [Breakdown(t, list(by), examples) for t in load_groups(list(pass_rates), progress)]
    entries = [_entry(s) for s in found.sources]
    # a pipe (stdin, /dev/fd/N) is read once: its kind cannot be read ahead of its rows
    if not state.breakdowns and not any(s.kind == KIND_STDIN or is_special(s.path) for s in found.sources):
        _on_engine(state, found.sources, entries, progress, run or RunRequest((), workers=workers))
    else:
        _one_pass(state, found.sources, entries, progress)
    return _finish(state, entries, found, title, audit_docs, drift_doc)


def _one_pass(
    state: _State, sources: list[Source], entries: list[dict[str, Any]], progress: Progress | None
) -> None:
    """Every row in this process, in input order (stdin; pass-rate tables' breakdowns)."""
    bar = (
        progress(total=rows_estimate(s.path for s in sources), desc="report", unit="row")
        if progress
        else None
    )
    pending = [0]

    def tick() -> None:
        pending[0] += 1
        if pending[0] == TICK:
            if bar is not None:
                bar.update(TICK)
            pending[0] = 0

    try:
        with streaming_gc():
            for src, entry in zip(sources, entries, strict=True):
                try:
                    _Reader(state, src, entry, tick).run()
                except InputError as exc:
                    entry["error"] = str(exc)
                    _unreadable(state, entry, str(exc))
        if bar is not None and pending[0]:
            bar.update(pending[0])
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def _finish(
    state: _State,
    entries: list[dict[str, Any]],
    found: Any,
    title: str | None,
    audit_docs: list[tuple[str, Any]],
    drift_doc: Any,
) -> dict[str, Any]:
    if not any(e["rows"] - e["malformed"] for e in entries):  # a report of no row is no report
        first = next((e["error"] for e in entries if e["error"]), None)
        malformed = sum(e["malformed"] for e in entries)
        if first is None and malformed:
            first = f"{malformed} line(s), none of them a row (malformed_row)"
        raise InputError(
            "nothing could be read from the inputs" + (f": {first}" if first else ""), reason="no_rows"
        )
    doc = _document(state, entries, found, title)
    names = [e["path"] for e in entries]
    for k, (path, adoc) in enumerate(audit_docs, 1):
        doc["sections"].append(audit_view.section(f"audit-{k}", adoc, path, names))
    if drift_doc is not None:
        doc["sections"].append(positions_view.drift_section("drift-1", drift_doc))
    if found.stale:
        doc["stale_preparations"] = found.stale_report()
    return doc


def _on_engine(
    state: _State,
    sources: list[Source],
    entries: list[dict[str, Any]],
    progress: Progress | None,
    how: RunRequest,
) -> None:
    """Every row through the row engine (report/chunked.py): each file's kind decided first (from its first
    readable row), its chunks tallied in workers, the parts folded here in input order."""
    kinds: list[tuple[str, bool, str | None]] = []
    early: dict[int, str] = {}  # files that failed before their kind was known
    for k, (src, entry) in enumerate(zip(sources, entries, strict=True)):
        prepared = src.kind == KIND_PREPARED
        manifest = state.manifest_contracts.get(src.arg) if prepared else None
        kind = entry["detected"]
        if kind is None:
            try:
                kind = entry["detected"] = detect(src.path, src.split)
            except InputError as exc:
                early[k] = str(exc)
        kinds.append((kind or DATASET, prepared, manifest))
    meter = InputMeter(s.path for s in sources)
    bar = progress(total=meter.total, desc="report", unit=meter.unit) if progress is not None else None

    def failed(k: int, message: str) -> None:
        entries[k]["error"] = message
        _unreadable(state, entries[k], message)

    folder = Folder(state.dataset, state.rescored_tally, entries, failed)

    def fold(chunk: Chunk, part: Any, shard: Any) -> None:
        if chunk.source in early:
            folder.fail(chunk.source, early[chunk.source])
        folder(chunk, part, shard)
        if bar is not None and chunk.source not in folder.failed:
            bar.update(meter.step(chunk, getattr(part, "rows", 0)))

    checker = RowChecker(Config(state.regex_timeout))
    settings = Settings(tuple(kinds), state.examples, state.regex_timeout, checker)
    identity = {"examples": state.examples, "regex_timeout": state.regex_timeout, "kinds": kinds}
    job = Job("report", tuple((str(s.path), s.split) for s in sources), report_chunk, settings, identity)
    how = dataclasses.replace(how, inputs=tuple(str(s.path) for s in sources))
    try:
        with streaming_gc():
            run_job(how, job, fold)
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def _unreadable(state: _State, entry: dict[str, Any], message: str) -> None:
    """A file that cannot be read at all: an unreadable_file finding of its dataset section (as validate)."""
    if entry["detected"] == RESCORED:
        return
    f = Finding(
        entry["path"], None, None, "$", "unreadable_file", "error", f"{message}; the file was skipped"
    )
    state.dataset(None, entry["path"]).unreadable(f)


def _document(state: _State, entries: list[dict[str, Any]], found: Any, title: str | None) -> dict[str, Any]:
    sections = []
    for k, contract in enumerate(sorted(state.datasets, key=lambda c: (c is not None, c or "")), 1):
        tally = state.datasets[contract]
        tally.finish()
        prov = {
            "inputs": state.dataset_inputs[contract],
            "manifests": [
                {"path": display_name(arg), "manifest": m.to_dict()}
                for arg, m in found.manifests
                if m.contract_id == contract
            ],
            "locks": [
                {"path": display_name(arg), "lock": lock, "verified": verified}
                for arg, lock, verified in found.locks
                if contract is None
            ],
        }
        sections.append(dataset_view.section(f"dataset-{k}", contract, tally, prov))
    order = sorted(state.rescored, key=lambda c: (-state.rescored[c].rows, c or ""))
    for k, contract in enumerate(order, 1):
        sections.append(rescored_view.section(f"rescored-{k}", contract, state.rescored[contract]))
    sections += breakdown_view.sections(state.breakdowns, dataset_rows=bool(state.datasets))
    tables = [b.table.contract_id for b in state.breakdowns]
    contracts = {
        DATASET: [c for c in state.datasets],
        RESCORED: order,
        PASSRATES: tables,
    }
    n_contracts = len({c for c in [*state.datasets, *state.rescored, *tables] if c is not None})
    return {
        "report_version": REPORT_VERSION,
        "tool_version": __version__,
        "title": title or "mcqa-prep report",
        "inputs": entries,
        "contracts": contracts,
        "distinct_contracts": n_contracts,
        "detection": DETECTION,
        "pooling": POOLING,
        "sections": sections,
    }
