"""prepare's per-row work (steps 1-3: validate, judge the difficulty, stamp, serialise), a pure function of
the row and the run's settings, so that a pool of worker processes can do it; the parent adds what needs the
rows in order (duplicates across the input) and routes each row (prepare.Router)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import manifest as mf
from .difficulty import PROFILE_RULE, Difficulty
from .grader.letters import normalize_gold
from .grader.modes import ROW_MODES
from .parallel import Chunk
from .policy import GradingPolicy
from .records import Finding, Row

ERROR = "error"


_DICT_ONLY = {dict}


def normalise_options(options: Any) -> Any:
    """Drop null-valued keys (the Parquet all-letters shape), keep letter order; other shapes pass through
    unchanged (validate reports them)."""
    if not isinstance(options, list):
        return options
    # the usual case, already normal (JSONL rows, and Parquet rows as the reader builds them): a few
    # C-level passes instead of a dict comprehension per option
    if set(map(type, options)) == _DICT_ONLY and None not in itertools.chain.from_iterable(
        map(dict.values, options)
    ):
        if all(options):
            return options
    out = []
    for opt in options:
        if isinstance(opt, dict):
            kept = {k: v for k, v in opt.items() if v is not None}
            if kept:
                out.append(kept)
        else:
            out.append(opt)
    return out


class Stamper:
    """Turns a valid input row into a prepared row in place (key order kept, every other field kept)."""

    def __init__(self, policy: GradingPolicy, output_format: str):
        self.override = policy.grading_mode_override
        self.default = policy.grading_mode_default
        self.contract = policy.contract_id()
        # Parquet has one type per column: a pattern list grades exactly like the one pattern it holds
        self.regex_as_list = output_format == "parquet"

    def stamp(self, data: dict[str, Any], source: dict[str, Any]) -> str | None:
        """Rewrite `data`; return why it cannot carry the stamp, or None."""
        md = data.get("metadata")
        if md is not None and not isinstance(md, dict):
            return f"metadata must be an object to carry the preparation stamp, got {type(md).__name__}"
        data["options"] = normalise_options(data.get("options"))
        if "expected_answer" in data:
            data["expected_answer"] = normalize_gold(data["expected_answer"])
        row_mode = data.get("grading_mode") or self.default
        effective = self.override or row_mode
        # An override-only mode (lenient_answer_colon_md) is not a valid row mode: the row keeps its own,
        # and the stamp records the mode that grades it.
        data["grading_mode"] = effective if effective in ROW_MODES else row_mode
        tm = data.get("template_metadata")
        if self.regex_as_list and isinstance(tm, dict) and isinstance(tm.get("output_regex"), str):
            data["template_metadata"] = {**tm, "output_regex": [tm["output_regex"]]}
        md = dict(md) if md else {}
        md["mcqa_prep"] = {
            "contract": self.contract,
            "row_schema": mf.ROW_SCHEMA,
            "grading_mode": effective,
            "source": source,
        }
        data["metadata"] = md
        return None


@dataclass
class Outcome:
    """What became of one row: its JSONL line (None when rejected or dropped), its findings, and what the
    pass-rate evidence said of it (None without a difficulty request; `verdict.dropped` names why a row with
    no line and no error was dropped). `extra` are prepare's own errors (not the validator's): an unreadable
    row, a row that cannot carry the stamp, bad reward_profiles."""

    line: bytes | None
    errors: list[Finding]
    warnings: list[Finding]
    verdict: Any = None
    extra: list[Finding] = field(default_factory=list)


def _finding(rec: Row, rule: str, message: str) -> Finding:
    return Finding(rec.file, rec.line, rec.index, "$", rule, "error", message)


def prepare_row(
    rec: Row, findings: list[Finding], stamper: Stamper, source: dict[str, Any], difficulty: Difficulty | None
) -> Outcome:
    """Given the validator's findings of one row: judge its difficulty (drop it, or stamp its measured
    profiles), stamp it and serialise it, or say why not."""
    errors = [f for f in findings if f.severity == ERROR]
    warnings = [f for f in findings if f.severity != ERROR]
    if rec.data is None:
        if errors:
            return Outcome(None, errors, warnings)
        # a row that could not be parsed is never written, whatever the validator says
        extra = [_finding(rec, "row.parse", rec.error or "row could not be read")]
        return Outcome(None, errors + extra, warnings, extra=extra)
    if errors:
        return Outcome(None, errors, warnings)
    verdict = None
    if difficulty is not None:
        verdict, problem = difficulty.judge(rec.data)
        if verdict is None:
            extra = [_finding(rec, PROFILE_RULE, problem or "bad reward_profiles")]
            return Outcome(None, extra, warnings, extra=extra)
        if verdict.dropped is not None:
            return Outcome(None, [], warnings, verdict)
        difficulty.apply(rec.data, verdict)
    message = stamper.stamp(rec.data, {**source, "row": rec.line})
    if message is None:
        try:
            return Outcome(orjson.dumps(rec.data) + b"\n", errors, warnings, verdict)
        except (TypeError, orjson.JSONEncodeError) as exc:
            message = f"the row cannot be written as JSON: {exc}"
    extra = [_finding(rec, "prepare.unwritable", message)]
    return Outcome(None, extra, warnings, extra=extra)


@dataclass(frozen=True)
class RowWork:
    """What every worker needs: the validator's per-row half, the stamper, the difficulty judge."""

    checker: Any  # validate.engine.RowChecker
    stamper: Stamper
    difficulty: Difficulty | None


def prepare_chunk(work: RowWork, sources: list[dict[str, Any]], chunk: Chunk) -> list[tuple[Any, ...]]:
    """(line, index within the chunk, validator findings, RowKeys, outcome) of every row of a chunk, the
    outcome decided as if no later duplicate check objects (the parent re-decides when one does).
    `sources` is the provenance of each input, as the rows of `chunk.source` record it."""
    source = sources[chunk.source]
    out = []
    for rec in chunk.rows():
        findings, keys = work.checker.check(rec)
        out.append(
            (
                rec.line,
                rec.index,
                findings,
                keys,
                prepare_row(rec, findings, work.stamper, source, work.difficulty),
            )
        )
    return out


def settle(outcome: Outcome, findings: list[Finding]) -> Outcome:
    """The final outcome of a row once the validator's findings include the cross-row ones: a row with an
    error is rejected (never judged: no verdict), else the worker's outcome stands."""
    errors = [f for f in findings if f.severity == ERROR] + outcome.extra
    warnings = [f for f in findings if f.severity != ERROR]
    if errors:
        return Outcome(None, errors, warnings)
    return Outcome(outcome.line, [], warnings, outcome.verdict)
