"""validate_paths: the `validate` command's run over files, directories, stdin and pulled snapshots."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .. import schema
from .._perf import streaming_gc
from .._version import __version__
from ..engine import Job, Shard
from ..engine import run as run_job
from ..errors import InputError, UsageError
from ..findings import FindingGroups
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..io.paths import data_kind
from ..parallel import Chunk, InputMeter
from ..progress import Progress
from ..records import Finding, display_name
from ..runs import RunRequest
from .batch import chunk_facts
from .crossrow import KeyColumns, RowKeys
from .registry import ERROR, RULES, WARNING
from .row_checker import RowChecker
from .row_validator import SUMMARY_FILE, RowValidator, check_timeout

REPORT_VERSION = schema.schema_version("validate_report")
PROGRESS_EVERY = 1024


@dataclass
class ValidateReport:
    """The result of validate_paths: the shown findings (capped) and the summary."""

    summary: dict[str, Any]
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return bool(self.summary["ok"])

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    @property
    def more(self) -> int:
        return self.summary["findings_total"] - self.summary["findings_shown"]

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "findings": [f.to_dict() for f in self.findings]}


@dataclass
class _Source:
    file: Path | str
    split: str | None
    entry: dict[str, Any]


def _entry(src: Any, locks: dict[str, Any]) -> dict[str, Any]:
    from ..sources import KIND_PREPARED, KIND_PULLED, KIND_STDIN

    if src.kind == KIND_PULLED:
        lock, verified = locks[src.arg]
        return {
            "path": display_name(src.arg),
            "kind": "pulled",
            "rows": 0,
            "repo": lock["repo"],
            "repo_type": lock["repo_type"],
            "commit": lock["commit"],
            "verified": verified,
        }
    if src.kind == KIND_PREPARED:
        return {"path": display_name(src.arg), "kind": "prepared", "rows": 0}
    if src.kind == KIND_STDIN:
        return {"path": "-", "kind": "stdin", "rows": 0, "split": None}
    kind = data_kind(src.path) or "jsonl"
    return {"path": display_name(src.path), "kind": kind, "rows": 0, "split": src.split}


def _plan(paths: Iterable[str | os.PathLike], verify: bool, progress: Progress | None) -> list[_Source]:
    """The files to read (sources.resolve) with the summary entry each one's rows are counted in."""
    from ..sources import KIND_PREPARED, KIND_PULLED, resolve

    found = resolve(paths, verify=verify, progress=progress)
    locks = {arg: (lock, verified) for arg, lock, verified in found.locks}
    entries: dict[str, dict[str, Any]] = {}
    out: list[_Source] = []
    for src in found.sources:
        key = src.arg if src.kind in (KIND_PULLED, KIND_PREPARED) else str(src.path)
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = _entry(src, locks)
        out.append(_Source(src.path, src.split, entry))
    return out


class _Keeper:
    """Counts every finding, groups them (findings.FindingGroups) and keeps the first `cap` (0: all); `strict`
    turns warnings into errors. Called with one row's findings at a time."""

    def __init__(self, cap: int, strict: bool) -> None:
        self.cap = cap
        self.strict = strict
        self.total = 0
        self.kept: list[Finding] = []
        self.groups = FindingGroups()

    def __call__(self, fs: list[Finding]) -> None:
        if self.strict:
            fs = [dataclasses.replace(f, severity=ERROR) if f.severity == WARNING else f for f in fs]
        self.groups.add(fs)
        for f in fs:
            self.total += 1
            if self.cap <= 0 or len(self.kept) < self.cap:
                self.kept.append(f)


class CheckedChunk(NamedTuple):
    """A worker's share of one chunk: the line of every row (row i is the chunk's i-th row), the row
    findings of the rows with any (by position), and every row's RowKeys as columns. Plain lists and a
    small dict cross the pipe: a tuple per row would cost more to pickle than most rows cost to check."""

    lines: list[int]
    found: dict[int, list[Finding]]
    keys: KeyColumns


def check_chunk(checker: RowChecker, chunk: Chunk) -> CheckedChunk | InputError:
    """Every row of a chunk through the row rules; the InputError when the worker cannot read the chunk's
    bytes (a damaged Parquet row group)."""
    lines: list[int] = []
    keys: list[RowKeys | None] = []
    found: dict[int, list[Finding]] = {}
    try:
        for i, (row, f) in enumerate(chunk_facts(chunk, checker.cfg)):
            findings, k = checker.check(row) if f is None else checker.check_facts(f)
            lines.append(row.line)
            keys.append(k)
            if findings:
                found[i] = findings
    except InputError as exc:
        return exc
    return CheckedChunk(lines, found, KeyColumns.of(keys))


def _unreadable(src: _Source, exc: Exception) -> list[Finding]:
    r = RULES["unreadable_file"]
    return [Finding(str(src.file), None, None, "$", r.name, r.severity, msg) for _, msg in r.check(exc)]


def validate_chunk(chunk: Chunk, checker: RowChecker) -> CheckedChunk | InputError:
    """The engine's per-chunk work (mcqa_prep.engine): `check_chunk`."""
    return check_chunk(checker, chunk)


def _read_all(
    sources: list[_Source], v: RowValidator, keep: _Keeper, progress: Progress | None, run: RunRequest
) -> None:
    """Every chunk of every input through the engine, in input order; the cross-row half here."""
    meter = InputMeter(s.file for s in sources)
    bar = progress(total=meter.total, desc="validate", unit=meter.unit) if progress is not None else None
    state = {"current": -1, "base": 0}
    failed: set[int] = set()

    def fold(chunk: Chunk, results: Any, _shard: Shard | None) -> None:
        src = sources[chunk.source]
        if chunk.source != state["current"]:
            state["current"], state["base"] = chunk.source, 0
        if chunk.source in failed:
            return  # the file could not be read further: its later chunks do not count
        failure = chunk.failure if chunk.failure is not None else results
        if isinstance(failure, Exception):
            failed.add(chunk.source)
            fs = _unreadable(src, failure)
            v.add(fs)
            keep(fs)
            return
        n = len(results.lines)
        found = v.absorb_chunk(
            chunk.file, chunk.split, results.lines, state["base"], results.keys, results.found
        )
        for i in sorted(found):
            keep(found[i])
        state["base"] += n
        src.entry["rows"] += n
        if bar is not None:
            bar.update(meter.step(chunk, n))

    job = Job(
        "validate",
        tuple((str(s.file), s.split) for s in sources),
        validate_chunk,
        v.checker,
        {"regex_timeout": v.regex_timeout},
    )
    try:
        with streaming_gc():
            run_job(run, job, fold)
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def validate_paths(
    paths: Iterable[str | os.PathLike],
    *,
    max_findings: int = 50,
    strict: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    workers: int | None = 1,
    run: RunRequest | None = None,
) -> ValidateReport:
    """Validate every row of every input. `max_findings` caps the findings kept (0 keeps all; the summary
    counts all); `strict` turns warnings into errors; `verify=False` skips the pulled-directory hash check;
    `progress` is a bar factory (mcqa_prep.progress.Progress);
    `workers` processes check chunks of the input (None: every core), with the same report for any number;
    `run` (runs.RunRequest), when given, says how instead (workers, engine, resume; its inputs are `paths`).
    Raises UsageError for a negative max_findings or a regex_timeout that is not a number > 0."""
    if isinstance(max_findings, bool) or not isinstance(max_findings, int) or max_findings < 0:
        raise UsageError(
            f"max_findings must be an integer >= 0 (0 keeps all), got {max_findings!r}",
            reason="invalid_max_findings",
            value=max_findings,
        )
    check_timeout(regex_timeout)
    sources = _plan(paths, verify, progress)
    v = RowValidator(regex_timeout=regex_timeout)
    keep = _Keeper(max_findings, strict)
    run = run or RunRequest(tuple(str(s.file) for s in sources), workers=workers)
    _read_all(sources, v, keep, progress, run)
    keep(v.finish())
    no_rows = RULES["no_rows"]
    empty = [
        Finding(SUMMARY_FILE, None, None, "$", no_rows.name, no_rows.severity, msg)
        for _, msg in no_rows.check(v.rows)
    ]
    v.add(empty)
    keep(empty)

    summ = v.summary()
    if strict:
        summ["errors"] += summ["warnings"]
        summ["warnings"] = 0
        summ["rows_with_errors"] += summ["rows_with_warnings"]
        summ["rows_with_warnings"] = 0
    inputs: list[dict[str, Any]] = []
    for src in sources:
        if not any(e is src.entry for e in inputs):
            inputs.append(src.entry)
    summary = {
        "report_version": REPORT_VERSION,
        "tool_version": __version__,
        "ok": summ["errors"] == 0,
        "strict": strict,
        **summ,
        "findings_total": keep.total,
        "findings_shown": len(keep.kept),
        "finding_groups": keep.groups.to_list(),
        "inputs": inputs,
    }
    return ValidateReport(summary, keep.kept)
