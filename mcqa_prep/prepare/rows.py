"""prepare's per-row work (steps 1-3: validate, judge the difficulty, stamp, serialise), a pure function of
the row and the run's settings, so that a pool of worker processes can do it; the parent adds what needs the
rows in order (duplicates across the input) and routes each row (prepare.Router)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..binding import STAMP_KEY, digests, normalise_options
from ..fields import permutation_link, template_id
from ..grader.letters import normalize_gold
from ..grader.modes import ROW_MODES
from ..io.writers import WideInteger, row_line
from ..parallel import Chunk
from ..passrates.difficulty import PROFILE_RULE, Difficulty
from ..policy import GradingPolicy
from ..prepared import manifest as mf
from ..records import Finding, Row
from ..runtimes import NEMO_GYM, row_problem
from ..validate.batch import chunk_facts
from ..validate.crossrow import KeyColumns

ERROR = "error"
RULE_RUNTIME = "runtime_nemo_gym"  # a row stock NeMo Gym would refuse, under `prepare --runtime nemo-gym`
_RUNTIME_REFUSAL = "NeMo Gym 0.7.0's request model refuses this row: "
REPAIR_RULE = (
    "regex_audit"  # the rule whose rows `repair_regexes` repairs (validate.row_checker.REPAIRABLE_RULE)
)


class Stamper:
    """Turns a valid input row into a prepared row in place (key order kept, every other field kept)."""

    def __init__(
        self, policy: GradingPolicy, output_format: str, runtime: str | None = None, permuter: Any = None
    ):
        self.runtime = runtime  # NEMO_GYM: a row that runtime would refuse cannot be written
        self.permuter = permuter  # prepare/permute.Permuter: each row written as its option orders
        self.override = policy.grading_mode_override
        self.default = policy.grading_mode_default
        self.contract = policy.contract_id()
        # Parquet has one type per column: a pattern list grades exactly like the one pattern it holds
        self.regex_as_list = output_format == "parquet"
        self.ints_64 = output_format == "parquet"  # Parquet holds 64-bit integers only (no exact wider form)

    def stamp(
        self,
        data: dict[str, Any],
        source: dict[str, Any],
        options_normal: bool = False,
        repair: Repair | None = None,
    ) -> str | None:
        """Rewrite `data`; return why it cannot carry the stamp, or None. `options_normal`: the reader built
        the options in the normal shape (a row with a hint), nothing to normalise. `repair`: the row's
        output_regex was replaced by the audit's fix (already in `data`); the stamp records the original."""
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
        link = permutation_link(data)
        md = dict(md) if md else {}
        md["mcqa_prep"] = {
            "contract": self.contract,
            "row_schema": mf.ROW_SCHEMA,
            "grading_mode": effective,
            "source": source,
            STAMP_KEY: digests(data, options_normal=True),  # what grades the row, as written (binding.py)
        }
        if link is not None:  # one order of a permuted question (convert --permute, or prepared before)
            md["mcqa_prep"]["permutation"] = link
        if repair is not None and repair.fixed is not None:
            original = repair.original
            if self.regex_as_list and isinstance(original, str):  # one type per Parquet column, as above
                original = [original]
            md["mcqa_prep"]["repaired"] = {"output_regex": original, "rule": REPAIR_RULE}
        data["metadata"] = md
        if self.runtime == NEMO_GYM:
            problem = row_problem(data)
            if problem is not None:
                return _RUNTIME_REFUSAL + problem
        return None


@dataclass(frozen=True)
class Repair:
    """A row whose output_regex the regex audit errs on and can fix: its template_id (None when it has none),
    its output_regex as given and the fix as written in the row (`fixed`), or None when the run does not
    repair (the row is rejected; the fix is counted so the failure can name the remedy)."""

    template: str | None
    original: Any
    fixed: Any


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
    gym_problem: str | None = None  # why stock NeMo Gym would refuse the written row (None: it takes it)
    repair: Repair | None = None  # the audit's fix of the row's output_regex (applied when `fixed` is set)
    contaminated: str | None = None  # a valid row dropped by decontamination: the benchmark question it holds
    variants: Any = None  # prepare/permute.Variants: `line` holds the lines of the row's option orders


def _finding(rec: Row, rule: str, message: str) -> Finding:
    return Finding(rec.file, rec.line, rec.index, "$", rule, "error", message)


def prepare_row(
    rec: Row,
    findings: list[Finding],
    stamper: Stamper,
    source: dict[str, Any],
    difficulty: Difficulty | None,
    repair: Repair | None = None,
) -> Outcome:
    """Given the validator's findings of one row: judge its difficulty (drop it, or stamp its measured
    profiles), stamp it and serialise it, or say why not. `repair` goes with the outcome (see Repair)."""
    out = _prepare_row(rec, findings, stamper, source, difficulty, repair)
    out.repair = repair
    return out


def _prepare_row(
    rec: Row,
    findings: list[Finding],
    stamper: Stamper,
    source: dict[str, Any],
    difficulty: Difficulty | None,
    repair: Repair | None,
) -> Outcome:
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
    if stamper.permuter is not None:
        return _permuted(rec, stamper, source, repair, warnings, verdict)
    line, message = _stamped_line(rec, stamper, source, repair)
    if line is not None:
        return Outcome(line, errors, warnings, verdict, gym_problem=row_problem(rec.data))
    return _unwritable(rec, message, warnings)


def _permuted(
    rec: Row,
    stamper: Stamper,
    source: dict[str, Any],
    repair: Repair | None,
    warnings: list[Finding],
    verdict: Any,
) -> Outcome:
    """A valid row stamped, then written as its option orders (prepare/permute.py), or rejected saying why."""
    message = stamper.stamp(rec.data, {**source, "row": rec.line}, rec.hint is not None, repair)  # type: ignore[arg-type]
    if message is not None:
        return _unwritable(rec, message, warnings)
    blob, made = stamper.permuter.lines(rec, not stamper.ints_64)
    if blob is None:
        rule, why = made
        extra = [_finding(rec, rule, why)]
        return Outcome(None, extra, warnings, extra=extra)
    return Outcome(blob, [], warnings, verdict, gym_problem=row_problem(rec.data or {}), variants=made)


def _unwritable(rec: Row, message: str, warnings: list[Finding]) -> Outcome:
    rule = RULE_RUNTIME if message.startswith(_RUNTIME_REFUSAL) else "prepare.unwritable"
    extra = [_finding(rec, rule, message)]
    return Outcome(None, extra, warnings, extra=extra)


def _stamped_line(
    rec: Row, stamper: Stamper, source: dict[str, Any], repair: Repair | None = None
) -> tuple[bytes | None, str]:
    """The row stamped and serialised, or (None, why not)."""
    message = stamper.stamp(rec.data, {**source, "row": rec.line}, rec.hint is not None, repair)  # type: ignore[arg-type]
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
    """What every worker needs: the validator's per-row half, the stamper, the difficulty judge, and whether
    rows the regex audit errs on get its fix in place of their output_regex (`repair_regexes`)."""

    checker: Any  # validate.row_checker.RowChecker
    stamper: Stamper
    difficulty: Difficulty | None
    repair_regexes: bool = False
    decontamination: Any = None  # audit.decontaminate.Decontamination: drops benchmark questions


def repaired(work: RowWork, rec: Row, findings: list[Finding], keys: Any, fix: Any) -> tuple[Any, ...]:
    """(row, findings, keys, Repair or None) for a row the regex audit errs on and can fix (`fix`:
    validate.row_checker.RegexFix, the output_regex with the fixes, from RowChecker.check_repair). Without
    `repair_regexes` the row stays as it is and the Repair only says that it could be fixed. With it, the row
    with the fix is checked again by every row rule (RowChecker.check_fixed): when no error is left it
    replaces the row, else the row as given keeps its findings (and is rejected for them)."""
    tm = rec.data["template_metadata"]  # type: ignore[index]
    template = template_id(rec.data)  # type: ignore[arg-type]
    if not work.repair_regexes:
        return rec, findings, keys, Repair(template, tm["output_regex"], None)
    data = dict(rec.data)  # type: ignore[arg-type]
    data["template_metadata"] = {**tm, "output_regex": fix.value}
    fixed_rec = dataclasses.replace(rec, data=data)
    again, fixed_keys = work.checker.check_fixed(fix, fixed_rec)
    if any(f.severity == ERROR for f in again):
        return rec, findings, keys, None
    return fixed_rec, again, fixed_keys, _shared(template, tm["output_regex"], fix.value)


_REPAIRS: dict[tuple[Any, Any, Any], Repair] = {}  # one object per distinct repair: pickled once a chunk
_REPAIRS_KEPT = 4096


def _shared(template: str | None, original: Any, fixed: Any) -> Repair:
    key = (template, original, fixed)
    try:
        kept = _REPAIRS.get(key)
    except TypeError:  # an output_regex held as a list: not hashable
        return Repair(template, original, fixed)
    if kept is None:
        kept = Repair(template, original, fixed)
        if len(_REPAIRS) < _REPAIRS_KEPT:
            _REPAIRS[key] = kept
    return kept


class PreparedChunk(NamedTuple):
    """A worker's share of one chunk, shaped to cross the pipe cheaply: the validator's `CheckedChunk`
    fields, the serialised lines of the rows written as they are (no error, no verdict: most rows, those
    with warnings or a repaired output_regex included) concatenated in `blob` with each row's line length in
    `sizes` (0 for the other rows), the Repair of each such row whose output_regex was repaired by position,
    and the `Outcome` of every other row by position, decided as if no later duplicate check objects (the
    parent re-decides when one does)."""

    lines: list[int]
    found: dict[int, list[Finding]]
    keys: KeyColumns
    blob: bytes
    sizes: list[int]
    outcomes: dict[int, Outcome]
    gym_refused: list[tuple[int, str]]  # rows in the blob stock NeMo Gym would refuse: (position, why)
    repairs: dict[int, Repair] = {}  # rows in the blob written with a repaired output_regex


def _has_error(findings: list[Finding]) -> bool:
    return any(f.severity == ERROR for f in findings)


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
    gym: list[tuple[int, str]] = []
    repairs: dict[int, Repair] = {}
    read = chunk_facts(chunk, work.checker.cfg, whole=True)  # (row, its facts when its columns give them)
    if work.decontamination is not None:
        read = list(read)  # type: ignore[assignment]
        hit = work.decontamination.check_rows([rec for rec, _ in read])  # before the rows are stamped
    else:
        hit = {}
    plain = work.difficulty is None and work.stamper.permuter is None  # each valid row written as it is
    for i, (rec, f) in enumerate(read):
        findings, k, fix = work.checker.check_repair(rec) if f is None else work.checker.check_repair_facts(f)
        repair = None
        if fix is not None:
            rec, findings, k, repair = repaired(work, rec, findings, k, fix)
        lines.append(rec.line)
        keys.append(k)
        if findings:
            found[i] = findings
        if i in hit and not _has_error(findings):  # valid, but a benchmark question
            outcomes[i] = Outcome(None, [], findings, contaminated=hit[i])
        elif plain and rec.data is not None and not (findings and _has_error(findings)):  # most rows
            line, message = _stamped_line(rec, work.stamper, source, repair)
            if line is not None:
                clean.append(line)
                sizes.append(len(line))
                if repair is not None:
                    repairs[i] = repair
                problem = row_problem(rec.data, rec.hint is not None)  # a hint: the reader built the options
                if problem is not None:
                    gym.append((i, problem))
                continue
            outcomes[i] = _unwritable(rec, message, findings)
            outcomes[i].repair = repair
        else:  # an error, a verdict to carry (difficulty), option orders (permute), or an unreadable row
            outcomes[i] = prepare_row(rec, findings, work.stamper, source, work.difficulty, repair)
        sizes.append(0)
    blob = b"".join(clean)
    return PreparedChunk(lines, found, KeyColumns.of(keys), blob, sizes, outcomes, gym, repairs)


def settle(outcome: Outcome, findings: list[Finding]) -> Outcome:
    """The final outcome of a row once the validator's findings include the cross-row ones: a row with an
    error is rejected (never judged: no verdict), else the worker's outcome stands."""
    errors = [f for f in findings if f.severity == ERROR] + outcome.extra
    warnings = [f for f in findings if f.severity != ERROR]
    if errors:
        return Outcome(None, errors, warnings, repair=outcome.repair)
    return Outcome(
        outcome.line,
        [],
        warnings,
        outcome.verdict,
        gym_problem=outcome.gym_problem,
        repair=outcome.repair,
        contaminated=outcome.contaminated,
        variants=outcome.variants,
    )
