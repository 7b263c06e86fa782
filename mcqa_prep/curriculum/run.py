"""`curriculum`: pass-rate table(s) + dataset rows -> a schedule file a trainer reads, per-row difficulty
columns, and (for trainers that read rows in order) the rows in schedule order.

Every row is placed by its question's posterior under the chosen model (the table's posterior mean, rebucketed
when another bucket count is asked): a row without evidence is dropped (`no_evidence`), or scheduled in the
stream of rows without evidence (schedule.NO_EVIDENCE: its own weight, never a difficulty bucket; its per-row
column carries the prior, the posterior of no samples); solved / unsolved questions can be dropped. Every input row is scheduled, dropped
(counted by reason) or rejected (counted by reason with its first lines: `unreadable`, a line that is no JSON
object; `not_a_row`, an object that is not an mcqa-row.v1 row; `non_json_value`, NaN/Infinity or a Parquet
value JSON has no form for, which no output could hold). Rows stamped by `prepare` under
another grading contract than the table's are refused: that table is not evidence about them.

Outputs (each written atomically; a failed run leaves none of them):
- the schedule (JSONL): line 1 a header (`schemas/curriculum.v1.schema.json`), then one line per step range
  with the weight of every (domain, bucket) cell;
- rows_out: every scheduled row with a `column` object (posterior mean and bounds, bucket_index, bucket_count,
  expected_quantile, domain, weight, evidence, model, contract);
- ordered_out: steps x prompts_per_step rows in schedule order (NeMo RL reads rows in order when shuffling is
  off), at most MAX_ORDERED_ROWS: refused before anything is read or written.
Rows are read twice (positions, then writing); the ordered output holds the scheduled rows' lines in memory.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .._version import __version__
from ..columns import group_of
from ..errors import ContractMismatch, InputError, UsageError
from ..fields import contract_stamp
from ..io.hashing import check_unchanged, stamp
from ..io.paths import check_output
from ..io.readers import iter_file
from ..io.writers import AtomicFile, row_line
from ..passrates.pool import read_tables
from ..passrates.posterior import PosteriorCache, bucket_edges, bucket_of
from ..passrates.reading import hash_inputs
from ..passrates.table import PassRateTable
from ..policy import canonical_json
from ..progress import Progress
from ..records import display_name
from ..schema import json_path, schema_version, validator
from ..validate.facts import schema_quiet
from .epochs import EpochPlan
from .schedule import NO_EVIDENCE, ScheduleSpec, build, materialize, row_weights

SCHEMA = schema_version("curriculum")
# steps x prompts per step of --ordered-out (cli help, docs/design/curriculum.md)
MAX_ORDERED_ROWS = 50_000_000
CORRECTED = "corrected"
ESTIMATES = ("plain", CORRECTED)
ALL = "(all)"
WILDCARD = "*"
EXAMPLES = 5


@dataclass(frozen=True)
class CurriculumRequest:
    tables: Sequence[str | os.PathLike]
    rows: Sequence[str | os.PathLike]
    output: str | os.PathLike
    rows_out: str | os.PathLike | None = None
    ordered_out: str | os.PathLike | None = None
    prompts_per_step: int | None = None
    model: str | None = None
    by: str | None = None
    ratios: Mapping[str, float] | None = None
    spec: ScheduleSpec = ScheduleSpec()
    buckets: int | None = None
    drop_solved: bool = False
    drop_unsolved: bool = False
    no_evidence: str = "keep"
    column: str = "difficulty"
    seed: int = 0
    epochs: int | None = None  # deal each permuted question's option orders to epochs (epochs.py)
    estimate: str = "plain"  # what places a row: the plain posterior, or the chance-corrected one (v3 tables)

    def check(self) -> None:
        outs = [o for o in (self.output, self.rows_out, self.ordered_out) if o is not None]
        if len({os.path.abspath(o) for o in outs}) != len(outs):
            raise UsageError("the schedule, rows and ordered outputs must be three different files")
        for o in outs:
            check_output(o, [*self.tables, *self.rows])
        if (self.ordered_out is None) != (self.prompts_per_step is None):
            raise UsageError(
                "rows in schedule order need both an output and a number of prompts per step",
                reason="ordered_needs_prompts",
            )
        if self.prompts_per_step is not None and self.prompts_per_step < 1:
            raise UsageError(f"prompts per step must be at least 1, got {self.prompts_per_step}")
        if self.estimate not in ESTIMATES:
            raise UsageError(f"estimate must be one of {', '.join(ESTIMATES)}, got {self.estimate!r}")
        if self.epochs is not None and self.epochs < 1:
            raise UsageError(f"epochs must be at least 1, got {self.epochs}")
        if self.prompts_per_step is not None and self.prompts_per_step * self.spec.steps > MAX_ORDERED_ROWS:
            raise UsageError(
                f"rows in schedule order: {self.spec.steps:,} steps x {self.prompts_per_step:,} prompts per step "
                f"is {self.spec.steps * self.prompts_per_step:,} rows, over the limit of {MAX_ORDERED_ROWS:,}",
                reason="ordered_too_large",
            )
        if self.no_evidence not in ("keep", "drop"):
            raise UsageError(f"no_evidence must be keep or drop, got {self.no_evidence!r}")
        if not self.column or not self.rows:
            raise UsageError("a curriculum needs dataset rows and a column name")
        if self.ratios is not None:
            bad = {d: w for d, w in self.ratios.items() if not w >= 0}
            if bad or not sum(self.ratios.values()) > 0:
                raise UsageError(
                    f"domain ratios must be non-negative with a positive sum, got {dict(self.ratios)}"
                )


@dataclass
class _Placed:
    """One scheduled row: its domain, bucket and posterior."""

    domain: str
    bucket: int
    mean: float
    lower: float
    upper: float
    evidence: bool

    @property
    def cell(self) -> int:
        """The schedule cell: the bucket, or the stream of rows without evidence."""
        return self.bucket if self.evidence else NO_EVIDENCE


@dataclass
class _Pass:
    """The first pass over the rows: where each scheduled row goes, and what was left out."""

    placed: list[_Placed | None] = field(default_factory=list)  # per input row, None: not scheduled
    dropped: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    rejected_examples: list[str] = field(default_factory=list)
    other_contract: Counter = field(default_factory=Counter)
    other_contract_examples: list[str] = field(default_factory=list)
    read: int = 0


def _place(
    req: CurriculumRequest,
    table: PassRateTable,
    model: str,
    buckets: int,
    files: Sequence[Any],
    plan: EpochPlan | None = None,
) -> _Pass:
    prior = PosteriorCache(table.priors[model], table.level, buckets)(0, 0)
    out = _Pass()
    for f in files:
        for rec in iter_file(f.path, split=f.split):
            out.read += 1
            where = f"{display_name(rec.file)}:{rec.line}"
            refused = _not_a_row(rec)
            if refused is not None:
                out.placed.append(None)
                out.rejected[refused[0]] += 1
                if len(out.rejected_examples) < EXAMPLES:
                    out.rejected_examples.append(f"{where}: {refused[1]}")
                continue
            assert rec.data is not None  # (a line without data is refused above)
            out.placed.append(_place_row(req, table, model, buckets, prior, rec.data, where, out))
            if plan is not None and out.placed[-1] is not None:
                plan.add(len(out.placed) - 1, rec.data)
    if plan is not None:
        plan.finish()
    return out


def _not_a_row(rec: Any) -> tuple[str, str] | None:
    """(reason, message) when a line cannot be scheduled as a row: unreadable, not an mcqa-row.v1 row, or
    holding a value no JSON output can hold (written as null it would change the row)."""
    if rec.data is None:
        return "unreadable", rec.error or "not a JSON object"
    if rec.nonfinite or rec.foreign:
        return (
            "non_json_value",
            f"{(rec.nonfinite or rec.foreign)[0]}: a value JSON has no form for (NaN/Infinity)",
        )
    if not schema_quiet(rec.data):
        err = next(iter(validator("row").iter_errors(rec.data)), None)
        where = json_path(err.absolute_path) if err is not None else "$"
        return (
            "not_a_row",
            f"not an {schema_version('row')} row: {where}: {err.message if err else 'invalid'}",
        )
    return None


def _place_row(req, table, model, buckets, prior, data, where, out) -> _Placed | None:  # noqa: ANN001
    stamped = contract_stamp(data).contract
    if stamped is not None and stamped != table.contract_id:
        out.other_contract[stamped] += 1
        if len(out.other_contract_examples) < EXAMPLES:
            out.other_contract_examples.append(where)
        return None
    found = table.find(data)
    e = found[1].get(model) if found is not None else None
    domain = group_of(data, req.by) if req.by else ALL
    corrected = req.estimate == CORRECTED
    if e is None or (corrected and e.corrected_mean is None):
        if req.no_evidence == "drop":
            out.dropped["no_evidence"] += 1
            return None
        if corrected:  # without evidence (or k) nothing tells it from a guess: the bucket at chance
            return _Placed(domain, buckets - 1, 0.0, 0.0, 1.0, False)
        mean, lower, upper, evidence = prior.mean, prior.lower, prior.upper, False
    else:
        if req.drop_unsolved and e.passes == 0:
            out.dropped["unsolved"] += 1
            return None
        if req.drop_solved and e.passes == e.samples:
            out.dropped["solved"] += 1
            return None
        if corrected:  # the corrected posterior clipped to [0, 1]; at chance: the last bucket, its own
            mean, lower, upper = (
                min(1.0, max(0.0, x)) for x in (e.corrected_mean, e.corrected_lower, e.corrected_upper)
            )
            bucket = buckets - 1 if e.at_chance else bucket_of(mean, buckets - 1)
            return _Placed(domain, bucket, mean, lower, upper, True)
        mean, lower, upper, evidence = e.posterior_mean, e.posterior_lower, e.posterior_upper, True
    return _Placed(domain, bucket_of(mean, buckets), mean, lower, upper, evidence)


def _ratios(req: CurriculumRequest, rows: Counter) -> tuple[dict[str, float], str]:
    """Each domain's share of every range: as given (WILDCARD for the domains not named), else by row count."""
    if not req.ratios:
        total: float = sum(rows.values())
        return {d: n / total for d, n in sorted(rows.items())}, "rows"
    named = {d: w for d, w in req.ratios.items() if d != WILDCARD}
    unknown = sorted(set(named) - set(rows))
    if unknown:
        raise UsageError(
            f"domain ratio for {', '.join(map(repr, unknown))}: no scheduled row has that value; the rows have: "
            f"{', '.join(f'{d} ({n})' for d, n in rows.most_common(20))}"
            + (f" … and {len(rows) - 20} more" if len(rows) > 20 else ""),
            reason="domain_not_in_rows",
        )
    missing = sorted(set(rows) - set(named))
    if missing and WILDCARD not in req.ratios:
        raise UsageError(
            f"no ratio for domain(s) {', '.join(map(repr, missing[:10]))}"
            + (f" … and {len(missing) - 10} more" if len(missing) > 10 else "")
            + ": name each, or give a default with "
            f"'{WILDCARD}=W'",
            reason="domain_ratio_missing",
        )
    raw = {d: named.get(d, req.ratios.get(WILDCARD, 0.0)) for d in rows}
    total = sum(raw.values())
    if not total > 0:
        raise UsageError("the domain ratios of the scheduled rows sum to 0", reason="domain_ratio_missing")
    return {d: w / total for d, w in sorted(raw.items())}, "given"


def _refuse_other_contract(p: _Pass, table: PassRateTable) -> None:
    if not p.other_contract:
        return
    listing = ", ".join(f"{c} ({n} row(s))" for c, n in p.other_contract.most_common(3))
    listing += f" … and {len(p.other_contract) - 3} more" if len(p.other_contract) > 3 else ""
    raise ContractMismatch(
        f"{sum(p.other_contract.values())} row(s) were prepared under another grading contract than the table's "
        f"({table.contract_id}): {listing}; first: {'; '.join(p.other_contract_examples[:3])}",
        expected=table.contract_id,
        reason="table_contract",
    )


def curriculum(req: CurriculumRequest, progress: Progress | None = None) -> dict[str, Any]:
    """Build and write the curriculum; returns the report (the schedule's header, and what became of rows)."""
    req.check()
    table = read_tables(req.tables, progress, variants=False)  # the estimates are all it reads
    model = table.choose_model(req.model, "schedule for")
    buckets = req.buckets or table.buckets
    if req.estimate == CORRECTED:
        if table.version != "passrates.v3" and not any(
            e.corrected_mean is not None for per in table.entries.values() for e in per.values()
        ):
            raise InputError(
                f"{table.path}: a {table.version} table records no chance-corrected posterior: measure the pass "
                "rates again",
                reason="table_version",
            )
        buckets += 1  # the last one: questions at chance
    req.spec.check(buckets)
    from ..sources import resolve

    files = resolve(
        req.rows,
        progress=progress,
        allow_stdin=False,
        reread="the schedule records the rows' hashes, then reads them twice (to place them, then to write them)",
        what="dataset file",
    ).sources
    stamps = {str(f.path): stamp(f.path) for f in files}
    inputs = hash_inputs(files, progress, "hash dataset rows")
    plan = EpochPlan(req.epochs, req.seed) if req.epochs is not None else None
    placed = _place(req, table, model, buckets, files, plan)
    _refuse_other_contract(placed, table)
    # the schedule's units: every scheduled row, or with epochs one row per question (its orders share it)
    kept = [
        p for i, p in enumerate(placed.placed) if p is not None and (plan is None or plan.representative(i))
    ]
    if not kept:
        raise InputError(
            f"no row to schedule: {placed.read} read, dropped {dict(placed.dropped)}, rejected "
            f"{dict(placed.rejected)}",
            reason="nothing_scheduled",
        )
    ratios, ratio_source = _ratios(req, Counter(p.domain for p in kept))
    cells: dict[str, dict[int, list[float]]] = {}
    for p in kept:
        cells.setdefault(p.domain, {}).setdefault(p.cell, []).append(p.mean)
    ranges = build(req.spec, buckets, cells, ratios)
    weights = row_weights(ranges, cells, req.spec.steps)
    header = _header(req, table, model, buckets, inputs, placed, kept, ratios, ratio_source, ranges, plan)
    check_unchanged(stamps)
    _write(req, table, model, buckets, files, placed, ranges, weights, header, stamps, plan)
    return {"output": str(req.output), "header": header, "ranges": [r.to_dict() for r in ranges]}


def _header(
    req, table, model, buckets, inputs, placed, kept, ratios, ratio_source, ranges, plan
) -> dict[str, Any]:  # noqa: ANN001
    per_bucket = Counter(p.bucket for p in kept if p.evidence)  # the rows without evidence are no bucket's
    scheduled = [p for p in placed.placed if p is not None]
    doc = {
        "curriculum_schema": SCHEMA,
        "tool": {"name": "mcqa-prep", "version": __version__},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "tables": table.identities(),
        "contract_id": table.contract_id,
        "counting": table.counting,
        "credible_level": table.level,
        "model": model,
        "prior": table.priors[model].to_dict(),
        "rows": {
            "inputs": inputs,
            "read": placed.read,
            "scheduled": len(scheduled),
            "without_evidence": sum(not p.evidence for p in scheduled),
            "dropped": dict(sorted(placed.dropped.items())),
            "rejected": dict(sorted(placed.rejected.items())),
            "rejected_examples": placed.rejected_examples,
        },
        "buckets": {
            "count": buckets,
            "by": "posterior_mean",
            "order": "easiest_first",
            "edges": bucket_edges(buckets),
            "rows": [per_bucket.get(b, 0) for b in range(buckets)],
        },
        "domains": {
            "column": req.by,
            "ratios": ratios,
            "ratio_source": ratio_source,
            "rows": dict(sorted(Counter(p.domain for p in kept).items())),
        },
        "schedule": req.spec.doc(buckets),
        "ranges": len(ranges),
        "column": req.column,
        "ordered": None
        if req.ordered_out is None
        else {
            "prompts_per_step": req.prompts_per_step,
            "rows": req.prompts_per_step * req.spec.steps,
            "seed": req.seed,
        },
    }
    if plan is not None:  # only when asked: a schedule without epochs is as before
        doc["epochs"] = plan.doc()
    if req.estimate == CORRECTED:  # likewise
        doc["buckets"].update(by="corrected_mean", edges=bucket_edges(buckets - 1), chance_bucket=buckets - 1)
    errors = list(validator("curriculum").iter_errors(doc))
    if errors:  # a bug here, not bad input
        raise ValueError(f"curriculum header invalid: {errors[0].message}")
    return doc


def _quantiles(kept: Sequence[_Placed]) -> Any:
    """The row's hardness quantile among the scheduled rows: the share of rows easier than it (higher posterior
    mean), ties counted half (0: the easiest, towards 1: the hardest)."""
    means = sorted(p.mean for p in kept)
    n = len(means)

    def q(mean: float) -> float:
        above = n - bisect.bisect_right(means, mean)
        ties = bisect.bisect_right(means, mean) - bisect.bisect_left(means, mean)
        return round((above + (ties - 1) / 2) / max(n - 1, 1), 6) if n > 1 else 0.0

    return q


def _write(req, table, model, buckets, files, placed, ranges, weights, header, stamps, plan) -> None:  # noqa: ANN001
    quantile = _quantiles([p for p in placed.placed if p is not None])
    with contextlib.ExitStack() as stack:
        sched = stack.enter_context(AtomicFile(req.output, "wb"))
        rows_fh = stack.enter_context(AtomicFile(req.rows_out, "wb")) if req.rows_out is not None else None
        ordered = (
            stack.enter_context(AtomicFile(req.ordered_out, "wb")) if req.ordered_out is not None else None
        )
        sched.write(canonical_json(header) + b"\n")
        for r in ranges:
            sched.write(canonical_json(r.to_dict()) + b"\n")
        if rows_fh is None and ordered is None:
            return
        try:
            _write_rows(
                req, table, model, buckets, files, placed, ranges, weights, rows_fh, ordered, quantile, plan
            )
        except _Reread:
            check_unchanged(stamps)  # the file changed between the two reads: its one-line error
            raise InputError(
                "the rows changed between the two reads (a row placed by the first read is not there now); "
                "nothing was written",
                reason="input_changed",
            ) from None
        check_unchanged(stamps)  # before anything is committed: rows read twice must be the same rows


class _Reread(Exception):
    """The second read of the rows does not line up with the first (the file changed in between)."""


def _write_rows(
    req, table, model, buckets, files, placed, ranges, weights, rows_fh, ordered, quantile, plan
) -> None:  # noqa: ANN001
    lines: list[bytes] = []
    at: dict[int, int] = {}  # placed row index -> its position in `lines`
    members: dict[tuple[str, int], list[int]] = {}
    i = 0
    for f in files:
        for rec in iter_file(f.path, split=f.split):
            if i >= len(placed.placed):
                raise _Reread
            p = placed.placed[i]
            i += 1
            if p is None:
                continue
            if rec.data is None:  # placed by the first read, so readable then: the file changed since
                raise _Reread
            data = dict(rec.data)
            data[req.column] = {
                "posterior_mean": p.mean,
                "posterior_lower": p.lower,
                "posterior_upper": p.upper,
                "bucket_index": p.bucket,
                "bucket_count": buckets,
                "expected_quantile": quantile(p.mean),
                "domain": p.domain,
                "weight": round(weights.get((p.domain, p.cell), 0.0), 9),
                "evidence": p.evidence,
                "model": model,
                "contract": table.contract_id,
            }
            if plan is not None:
                data[req.column]["epochs"] = plan.epochs_of(i - 1)
            if req.estimate == CORRECTED:
                data[req.column]["estimate"] = CORRECTED
                data[req.column]["at_chance"] = p.bucket == buckets - 1
            line = row_line(data)
            if rows_fh is not None:
                rows_fh.write(line)
            if ordered is not None:
                if plan is None or plan.representative(i - 1):
                    members.setdefault((p.domain, p.cell), []).append(i - 1)
                at[i - 1] = len(lines)
                lines.append(line)
    if ordered is not None:
        draws: Counter[int] = Counter()
        for _, j in materialize(ranges, members, req.prompts_per_step, req.seed):
            if plan is not None:  # the question's order for its next epoch
                draws[j] += 1
                j = plan.order_for(j, draws[j] - 1)
            ordered.write(lines[at[j]])
