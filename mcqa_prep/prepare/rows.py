"""prepare's per-row work (steps 1-3: validate, judge the difficulty, stamp, serialise), a pure function of
the row and the run's settings, so that a pool of worker processes can do it; the parent adds what needs the
rows in order (duplicates across the input) and routes each row (prepare.Router)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..grader.letters import normalize_gold
from ..grader.modes import ROW_MODES
from ..io.writers import WideInteger, row_line
from ..parallel import Chunk
from ..passrates.difficulty import PROFILE_RULE, Difficulty
from ..policy import GradingPolicy
from ..prepared import manifest as mf
from ..records import Finding, Row
from ..validate.crossrow import KeyColumns

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
        self.ints_64 = output_format == "parquet"  # Parquet holds 64-bit integers only (no exact wider form)

    def stamp(self, data: dict[str, Any], source: dict[str, Any], options_normal: bool = False) -> str | None:
        """Rewrite `data`; return why it cannot carry the stamp, or None. `options_normal`: the reader built
        the options in the normal shape (a row with a hint), nothing to normalise."""
        md = data.get("metadata")
        if md is not None and not isinstance(md, dict):
            return f"metadata must be an object to carry the preparation stamp, got {type(md).__name__}"
        if not options_normal:
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
    contaminated: str | None = None  # a valid row dropped by decontamination: the benchmark question it holds


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
    line, message = _stamped_line(rec, stamper, source)
    if line is not None:
        return Outcome(line, errors, warnings, verdict)
    return _unwritable(rec, message, warnings)


def _unwritable(rec: Row, message: str, warnings: list[Finding]) -> Outcome:
    extra = [_finding(rec, "prepare.unwritable", message)]
    return Outcome(None, extra, warnings, extra=extra)


def _stamped_line(rec: Row, stamper: Stamper, source: dict[str, Any]) -> tuple[bytes | None, str]:
    """The row stamped and serialised, or (None, why not)."""
    message = stamper.stamp(rec.data, {**source, "row": rec.line}, rec.hint is not None)  # type: ignore[arg-type]
    if message is not None:
        return None, message
    try:
        return row_line(rec.data, wide_ints=not stamper.ints_64), ""
    except WideInteger:
        return None, (
            "an integer beyond 64 bits cannot be stored in Parquet (Arrow would round it to a float and turn "
            "the field's other integers into floats); --output-format jsonl holds it exactly"
        )
    except (TypeError, ValueError) as exc:
        return None, f"the row cannot be written as JSON: {exc}"


@dataclass(frozen=True)
class RowWork:
    """What every worker needs: the validator's per-row half, the stamper, the difficulty judge."""

    checker: Any  # validate.engine.RowChecker
    stamper: Stamper
    difficulty: Difficulty | None
    decontamination: Any = (
        None  # audit.decontaminate.Decontamination: drops rows holding a benchmark question
    )


class PreparedChunk(NamedTuple):
    """A worker's share of one chunk, shaped to cross the pipe cheaply: the validator's `CheckedChunk`
    fields, the serialised lines of the clean rows (no finding, no verdict) concatenated in `blob` with
    each row's line length in `sizes` (0 for the other rows), and the `Outcome` of every other row by
    position, decided as if no later duplicate check objects (the parent re-decides when one does)."""

    lines: list[int]
    found: dict[int, list[Finding]]
    keys: KeyColumns
    blob: bytes
    sizes: list[int]
    outcomes: dict[int, Outcome]


def prepare_chunk(work: RowWork, sources: list[dict[str, Any]], chunk: Chunk) -> PreparedChunk:
    """Every row of a chunk through the validator's row rules, the difficulty judge and the stamper.
    `sources` is the provenance of each input, as the rows of `chunk.source` record it."""
    source = sources[chunk.source]
    lines: list[int] = []
    keys: list[Any] = []
    found: dict[int, list[Finding]] = {}
    clean: list[bytes] = []
    sizes: list[int] = []
    outcomes: dict[int, Outcome] = {}
    rows = list(chunk.rows()) if work.decontamination is not None else None
    hit = work.decontamination.check_rows(rows) if rows is not None else {}  # before the rows are stamped
    for i, rec in enumerate(rows if rows is not None else chunk.rows()):
        findings, k = work.checker.check(rec)
        lines.append(rec.line)
        keys.append(k)
        if i in hit and not any(f.severity == ERROR for f in findings):  # valid, but a benchmark question
            if findings:
                found[i] = findings
            outcomes[i] = Outcome(None, [], findings, contaminated=hit[i])
        elif findings:
            found[i] = findings
            outcomes[i] = prepare_row(rec, findings, work.stamper, source, work.difficulty)
        elif work.difficulty is None and rec.data is not None:  # most rows: a clean line, no Outcome
            line, message = _stamped_line(rec, work.stamper, source)
            if line is not None:
                clean.append(line)
                sizes.append(len(line))
                continue
            outcomes[i] = _unwritable(rec, message, [])
        else:  # a verdict to carry (difficulty), or a row that could not be read
            outcomes[i] = prepare_row(rec, findings, work.stamper, source, work.difficulty)
        sizes.append(0)
    return PreparedChunk(lines, found, KeyColumns.of(keys), b"".join(clean), sizes, outcomes)


def settle(outcome: Outcome, findings: list[Finding]) -> Outcome:
    """The final outcome of a row once the validator's findings include the cross-row ones: a row with an
    error is rejected (never judged: no verdict), else the worker's outcome stands."""
    errors = [f for f in findings if f.severity == ERROR] + outcome.extra
    warnings = [f for f in findings if f.severity != ERROR]
    if errors:
        return Outcome(None, errors, warnings)
    return Outcome(outcome.line, [], warnings, outcome.verdict, contaminated=outcome.contaminated)
