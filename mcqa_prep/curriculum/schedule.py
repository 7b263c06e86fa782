"""A curriculum schedule, as pure functions: training steps split into ranges, and per range the sampling weight
of every (domain, difficulty bucket) cell. Rows are drawn uniformly within a cell.

Kinds (`KINDS`):

- `gaussian` (the Nemotron 3 Nano recipe): a Gaussian over the pass rate (each row's posterior mean) whose
  mean falls linearly from `start_rate` to `end_rate` over the steps after the bootstrap; the steps are cut
  into `ranges` equal ranges, each with the Gaussian's mean at its midpoint. A bucket's weight within its
  domain is the Gaussian mass of its rows (so the weight follows both difficulty and how many rows there are).
  A bootstrap (`bootstrap_steps` > 0) is one first range with the mean held at `start_rate`.
- `easy-first`: a bootstrap on the `window` easiest buckets, then a shift to harder buckets: the window moves
  one bucket harder per range until it covers the hardest (the steps after the bootstrap split evenly among
  these ranges). Within the window a bucket weighs as many rows as it holds.
- `uniform`: one range, every bucket weighing its rows (no curriculum: domain ratios and the columns only).

Domains keep fixed ratios in every range (Nemotron: fixed domain ratios per batch). When a domain has no row
where a range puts weight (a window with none of its rows, a Gaussian whose mass underflows), its ratio goes
to its bucket nearest that place (ties: the easier), so a domain never silently drops out of a range.

Rows without evidence (no pass rate for the model) are their own stream, the cell `NO_EVIDENCE` of each
domain, never a difficulty bucket: their difficulty is unknown, so no schedule places them, and however many
they are they take the share `no_evidence_weight` of their domain in every range (all of it when the domain
has no measured row; none when it has no such row). The measured buckets share the rest.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError

KINDS = ("gaussian", "easy-first", "uniform")
NO_EVIDENCE = -1  # the cell of the rows without evidence (in the schedule file: "none")
NO_EVIDENCE_KEY = "none"
DEFAULT_NO_EVIDENCE_WEIGHT = 0.1

Cells = Mapping[str, Mapping[int, Sequence[float]]]  # domain -> bucket -> posterior means of its rows


@dataclass(frozen=True)
class ScheduleSpec:
    kind: str = "gaussian"
    steps: int = 1000
    bootstrap_steps: int = 0
    ranges: int = 10
    window: int | None = None
    start_rate: float = 0.8
    end_rate: float = 0.2
    sigma: float = 0.15
    no_evidence_weight: float = DEFAULT_NO_EVIDENCE_WEIGHT

    def check(self, buckets: int) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"schedule must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.steps < 1:
            raise UsageError(f"steps must be at least 1, got {self.steps}", reason="bad_schedule")
        if not 0 <= self.bootstrap_steps < self.steps:
            raise UsageError(
                f"bootstrap steps ({self.bootstrap_steps}) must be fewer than the steps ({self.steps})",
                reason="bad_schedule",
            )
        if self.ranges < 1:
            raise UsageError(f"ranges must be at least 1, got {self.ranges}", reason="bad_schedule")
        if self.window is not None and not 1 <= self.window <= buckets:
            raise UsageError(f"window must be 1..{buckets} buckets, got {self.window}", reason="bad_schedule")
        for name, v in (("start rate", self.start_rate), ("end rate", self.end_rate)):
            if not 0.0 <= v <= 1.0:
                raise UsageError(f"{name} must be in [0, 1], got {v}", reason="bad_schedule")
        if not self.sigma > 0:
            raise UsageError(f"sigma must be positive, got {self.sigma}", reason="bad_schedule")
        if not 0.0 <= self.no_evidence_weight <= 1.0:
            raise UsageError(
                f"the weight of rows without evidence must be in [0, 1], got {self.no_evidence_weight}",
                reason="bad_schedule",
            )

    def window_for(self, buckets: int) -> int:
        return self.window if self.window is not None else math.ceil(buckets / 2)

    def doc(self, buckets: int) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "steps": self.steps, "bootstrap_steps": self.bootstrap_steps}
        d["no_evidence_weight"] = self.no_evidence_weight
        if self.kind == "gaussian":
            d |= {"ranges": self.ranges, "start_rate": self.start_rate, "end_rate": self.end_rate}
            d["sigma"] = self.sigma
        elif self.kind == "easy-first":
            d["window"] = self.window_for(buckets)
        return d


@dataclass
class Range:
    index: int
    start: int  # first step (inclusive)
    end: int  # last step (exclusive)
    phase: str  # bootstrap / shift / main
    weights: dict[str, dict[int, float]]  # domain -> bucket -> weight; all sum to 1
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        buckets: dict[int, float] = {}
        for per in self.weights.values():
            for b, w in per.items():
                buckets[b] = buckets.get(b, 0.0) + w
        return {
            "range": self.index,
            "step_start": self.start,
            "step_end": self.end,
            "phase": self.phase,
            **self.extra,
            "weights": {
                d: {cell_key(b): w for b, w in sorted(per.items())} for d, per in sorted(self.weights.items())
            },
            "bucket_weights": {cell_key(b): w for b, w in sorted(buckets.items())},
            "domain_weights": {d: sum(per.values()) for d, per in sorted(self.weights.items())},
        }


def cell_key(bucket: int) -> str:
    """A cell's key in the schedule file: the bucket number, or "none" for the rows without evidence."""
    return NO_EVIDENCE_KEY if bucket == NO_EVIDENCE else str(bucket)


def split_steps(start: int, end: int, n: int) -> list[tuple[int, int]]:
    """[start, end) cut into n ranges as equal as whole steps allow (fewer when there are fewer steps)."""
    n = max(1, min(n, end - start))
    cuts = [start + round((end - start) * i / n) for i in range(n + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]  # noqa: B905 - equal lengths by construction


def _nearest(per: Mapping[int, Sequence[float]], lo: float, hi: float) -> int:
    """The non-empty bucket nearest the bucket interval [lo, hi] (ties: the easier)."""
    return min((b for b, rows in per.items() if rows), key=lambda b: (max(lo - b, b - hi, 0), b))


def _within(per: Mapping[int, Sequence[float]], spec: ScheduleSpec, phase_arg: Any) -> dict[int, float]:
    """Bucket weights within one domain (summing to 1)."""
    if spec.kind == "uniform":
        raw = {b: float(len(rows)) for b, rows in per.items()}
    elif spec.kind == "easy-first":
        lo, hi = phase_arg
        raw = {b: float(len(rows)) for b, rows in per.items() if lo <= b <= hi}
        if not sum(raw.values()):
            raw = {_nearest(per, lo, hi): 1.0}
    else:
        mu = phase_arg
        raw = {
            b: sum(math.exp(-((m - mu) ** 2) / (2 * spec.sigma**2)) for m in rows) for b, rows in per.items()
        }
        if not sum(raw.values()):
            best = min((abs(m - mu), b) for b, rows in per.items() for m in rows)
            raw = {best[1]: 1.0}
    total = sum(raw.values())
    return {b: w / total for b, w in raw.items() if w > 0}


def _phases(spec: ScheduleSpec, buckets: int) -> list[tuple[int, int, str, Any, dict[str, Any]]]:
    """(start, end, phase, argument of the bucket weights, extra fields) per range."""
    out: list[tuple[int, int, str, Any, dict[str, Any]]] = []
    after = spec.bootstrap_steps
    if spec.kind == "uniform":
        return [(0, spec.steps, "main", None, {})]
    if spec.kind == "easy-first":
        k = spec.window_for(buckets)
        if after:
            out.append((0, after, "bootstrap", (0, k - 1), {"window": [0, k - 1]}))
        shifts = list(range(1 if after else 0, buckets - k + 1)) or [buckets - k]
        for (a, b), s in zip(split_steps(after, spec.steps, len(shifts)), shifts):  # noqa: B905
            out.append((a, b, "shift", (s, s + k - 1), {"window": [s, s + k - 1]}))
        return out
    if after:
        out.append((0, after, "bootstrap", spec.start_rate, {"gaussian_mean": spec.start_rate}))
    parts = split_steps(after, spec.steps, spec.ranges)
    for i, (a, b) in enumerate(parts):
        mu = round(spec.start_rate + (spec.end_rate - spec.start_rate) * (i + 0.5) / len(parts), 9)
        out.append((a, b, "main", mu, {"gaussian_mean": mu}))
    return out


def build(spec: ScheduleSpec, buckets: int, cells: Cells, ratios: Mapping[str, float]) -> list[Range]:
    """The ranges of the schedule. `ratios` (one per domain of `cells`, summing to 1) are the domains'
    shares of every range."""
    ranges = []
    for i, (a, b, phase, arg, extra) in enumerate(_phases(spec, buckets)):
        weights = {}
        for d, per in cells.items():
            if ratios.get(d, 0.0) > 0 and any(per.values()):
                weights[d] = _domain_weights(per, spec, arg, ratios[d])
        ranges.append(Range(i, a, b, phase, weights, extra))
    return ranges


def _domain_weights(
    per: Mapping[int, Sequence[float]], spec: ScheduleSpec, arg: Any, ratio: float
) -> dict[int, float]:
    """One domain's cells in one range: the no-evidence stream its fixed share, the buckets the rest."""
    measured = {b: rows for b, rows in per.items() if b != NO_EVIDENCE and rows}
    unmeasured = bool(per.get(NO_EVIDENCE))
    if not measured:
        return {NO_EVIDENCE: ratio}
    share = spec.no_evidence_weight if unmeasured else 0.0
    out = {bk: ratio * (1.0 - share) * w for bk, w in _within(measured, spec, arg).items()}
    if share > 0:
        out[NO_EVIDENCE] = ratio * share
    return out


def row_weights(ranges: Sequence[Range], cells: Cells, steps: int) -> dict[tuple[str, int], float]:
    """The time-averaged sampling weight of one row of each (domain, bucket) cell, scaled so the rows' mean
    weight is 1 (a weight for a trainer that samples rows by a fixed weight)."""
    per_row: dict[tuple[str, int], float] = {}
    for r in ranges:
        share = (r.end - r.start) / steps
        for d, per in r.weights.items():
            for b, w in per.items():
                per_row[(d, b)] = per_row.get((d, b), 0.0) + share * w / len(cells[d][b])
    rows = sum(len(v) for per in cells.values() for v in per.values())
    total = sum(per_row.get((d, b), 0.0) * len(v) for d, per in cells.items() for b, v in per.items())
    scale = rows / total if total else 0.0
    return {k: v * scale for k, v in per_row.items()}


def quotas(weights: Mapping[str, Mapping[int, float]], per_step: int) -> dict[tuple[str, int], int]:
    """per_step draws split among cells by largest remainder (exactly per_step in all; ties in cell order)."""
    flat = sorted(((d, b), w * per_step) for d, per in weights.items() for b, w in per.items())
    base = {k: math.floor(x) for k, x in flat}
    left = per_step - sum(base.values())
    for k, _ in sorted(flat, key=lambda kx: (-(kx[1] - math.floor(kx[1])), kx[0]))[:left]:
        base[k] += 1
    return {k: n for k, n in base.items() if n}


def materialize(
    ranges: Sequence[Range], members: Mapping[tuple[str, int], Sequence[int]], per_step: int, seed: int
) -> Iterator[tuple[int, int]]:
    """(step, row index) for every step of the schedule, per_step rows a step: each cell's rows are drawn in a
    seeded random order, every row once before any row twice; a step's rows are shuffled together."""
    order = {k: _Cycle(v, random.Random(f"{seed}:{k[0]}:{k[1]}")) for k, v in members.items()}
    shuffle = random.Random(f"{seed}:steps")
    for r in ranges:
        q = quotas(r.weights, per_step)
        for step in range(r.start, r.end):
            picks = [i for k, n in q.items() for i in order[k].take(n)]
            shuffle.shuffle(picks)
            for i in picks:
                yield step, i


class _Cycle:
    def __init__(self, items: Sequence[int], rng: random.Random) -> None:
        self.items, self.rng = list(items), rng
        self.order: list[int] = []

    def take(self, n: int) -> list[int]:
        out = []
        for _ in range(n):
            if not self.order:
                self.order = self.items[:]
                self.rng.shuffle(self.order)
            out.append(self.order.pop())
        return out
