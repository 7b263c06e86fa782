"""pass@k, majority@k and no_answer from a question's rollouts, under one stated rule for unanswered rollouts.

The rule (`NO_ANSWER_RULES`, recorded in a table's `counting`) says what a rollout without an extracted answer
is, everywhere at once:

- `fail` (the default): an attempt that failed. It is a sample in the pass rate and in pass@k, and a failure
  there even if its reward said otherwise; in majority@k it is a vote for "no answer", a candidate that is
  never right (a model that mostly does not answer has a wrong majority).
- `exclude`: not an attempt. It is left out of the samples everywhere: the pass rate, pass@k and majority@k
  count the answered rollouts only; a question none of whose rollouts answered has no evidence.

NeMo Gym 0.7.0's `compute_pass_majority_metrics` mixes the two (pass@k scores such rollouts by their reward,
majority@k lets them abstain and scores a task with no valid answer 0: its issue #2574), so the same rollouts
can read 100 there and 0 here. A table says which rule it counted with, and tables that count differently
are never pooled (`passrates/pool.py`).

- pass@k of a question with n samples and c passes is the unbiased estimator 1 - C(n - c, k) / C(n, k) (the
  chance that a random k of its n samples hold a pass), defined for k <= n: the exact ratio of the two
  integers up to EXACT_SAMPLES samples, beyond that from log-factorials at 40 significant digits (Stirling's
  series, in decimal arithmetic: the same digits on every platform), so its cost does not grow with the
  sample counts (pooling two tables of 10^9 samples per question computed binomials of a billion digits).
- majority@k is the expected majority-vote score of a random k of its n samples: candidates are the answers
  (with whether that answer passed, as NeMo Gym keys votes by (answer, score)), and, under `fail`, "no
  answer"; tied candidates share the point (NeMo Gym's tie rule). Exact, by dynamic programming over the
  candidates (a question's score depends only on the sorted sizes of its vote groups, so it is memoised),
  for k up to MAJORITY_MAX_K: the programme's work grows with the cube of k, so larger k are not reported.
- no_answer is the share of a model's rollouts without an extracted answer (rule-independent).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import compress
from math import comb, factorial
from typing import Any

EXACT_SAMPLES = 4096  # pass@k as the exact ratio of binomials up to here; beyond, log-factorials
MAJORITY_MAX_K = 64  # majority@k is reported for k up to here (docs/design/passrates.md)
NO_ANSWER_RULES = ("fail", "exclude")
DEFAULT_NO_ANSWER = "fail"
RULE_TEXT = {
    "fail": "an unanswered rollout is a failed sample (and a vote for 'no answer' in majority@k)",
    "exclude": "an unanswered rollout is not a sample (left out of pass rates, pass@k and majority@k)",
    None: "not recorded (a passrates.v1 table: every graded rollout a sample, a pass is reward >= 1)",
}

Votes = tuple[
    tuple[int, ...], tuple[int, ...]
]  # (sizes of passing answer groups, of failing ones), sorted desc


def counting_doc(no_answer: str) -> dict[str, Any]:
    """A table header's `counting` object: what a sample and a pass are."""
    return {"no_answer": no_answer, "pass_threshold": 1.0, "answer": "extracted_answer"}


def describe_rule(no_answer: str | None) -> str:
    return f"no_answer={no_answer or 'unrecorded'} ({RULE_TEXT.get(no_answer, 'unknown rule')})"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of a question with `n` samples and `c` passes (k <= n)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    if n <= EXACT_SAMPLES:
        return 1.0 - comb(n - c, k) / comb(n, k)
    return _pass_at_k_large(n, c, k)


@functools.lru_cache(maxsize=65536)
def _pass_at_k_large(n: int, c: int, k: int) -> float:
    """1 - C(n - c, k) / C(n, k) = 1 - (n - c)! (n - k)! / (n! (n - c - k)!), from log-factorials."""
    with localcontext() as ctx:
        ctx.prec = 40
        log_r = _log_factorial(n - c) + _log_factorial(n - k) - _log_factorial(n) - _log_factorial(n - c - k)
        if log_r < -60:  # the ratio is below 1e-26: 1 - it is 1.0 in a float
            return 1.0
        return float(1 - log_r.exp())


# Stirling's series of ln Gamma(z + 1) - ln(2 pi) / 2, the coefficients B_2j / (2j (2j - 1)); from z >= 30 on
# the first term left out is below 1e-25
_STIRLING = tuple(
    Decimal(a) / Decimal(b)
    for a, b in (
        (1, 12),
        (-1, 360),
        (1, 1260),
        (-1, 1680),
        (1, 1188),
        (-691, 360360),
        (1, 156),
        (-3617, 122400),
    )
)
_STIRLING_FROM = 30


def _log_factorial(x: int) -> Decimal:
    """ln(x!) - ln(2 pi) / 2 in the current decimal context (the constant cancels in pass@k's ratio: two
    factorials over two). Below _STIRLING_FROM, ln((x + s)!) of the series less the log of the exact product."""
    shift = max(0, _STIRLING_FROM - x)
    z = Decimal(x + shift)
    out = (z + Decimal("0.5")) * z.ln() - z
    zz, p = z * z, z
    for coef in _STIRLING:
        out += coef / p
        p *= zz
    if shift:
        out -= Decimal(factorial(x + shift) // factorial(x)).ln()
    return out


def vote_groups(votes: Votes, unanswered: int, rule: str) -> tuple[tuple[int, bool], ...]:
    """The candidates of a question's vote, as (size, passes), in a canonical order."""
    groups = [(s, True) for s in votes[0]] + [(s, False) for s in votes[1]]
    if rule == "fail" and unanswered:
        groups.append((unanswered, False))
    return tuple(sorted(groups, reverse=True))


@functools.lru_cache(maxsize=65536)
def _majority(groups: tuple[tuple[int, bool], ...], k: int) -> Fraction:
    n = sum(s for s, _ in groups)
    if not 0 < k <= n:
        raise ValueError(f"majority@k needs 0 < k <= n, got k={k}, n={n}")
    # state: (drawn, max group count drawn, groups tied at the max, passing groups among them) -> ways
    states: dict[tuple[int, int, int, int], int] = {(0, 0, 0, 0): 1}
    for size, passes in groups:
        nxt: dict[tuple[int, int, int, int], int] = {}
        for (j, m, ta, tp), ways in states.items():
            for x in range(min(size, k - j) + 1):
                if x > m:
                    key = (j + x, x, 1, int(passes))
                elif x == m and x > 0:
                    key = (j + x, m, ta + 1, tp + passes)
                else:
                    key = (j + x, m, ta, tp)
                nxt[key] = nxt.get(key, 0) + ways * comb(size, x)
        states = nxt
    total = Fraction(0)
    for (j, _, ta, tp), ways in states.items():
        if j == k and tp:
            total += Fraction(ways * tp, ta)
    return total / comb(n, k)


def majority_at_k(votes: Votes, unanswered: int, k: int, rule: str) -> float:
    """Expected majority-vote score of a random k of the question's samples under `rule`."""
    return float(_majority(vote_groups(votes, unanswered, rule), k))


def ks_for(max_samples: int) -> list[int]:
    """The k reported: powers of two up to the largest sample count, and that count itself."""
    ks, k = [], 1
    while k <= max_samples:
        ks.append(k)
        k *= 2
    if max_samples >= 1 and ks[-1] != max_samples:
        ks.append(max_samples)
    return ks


class EntryView:
    """What the metrics read of one (question, model) entry."""

    __slots__ = ("samples", "passes", "rollouts", "unanswered", "votes")

    def __init__(self, samples: int, passes: int, rollouts: int, unanswered: int | None, votes: Votes | None):
        self.samples, self.passes, self.rollouts = samples, passes, rollouts
        self.unanswered, self.votes = unanswered, votes


def model_metrics(entries: Iterable[Any], rule: str | None, ks: list[int] | None = None) -> dict[str, Any]:
    """pass@k, majority@k (when every entry's votes are known) and no_answer of one model's entries (objects
    with samples, passes, rollouts, unanswered, votes). Each k averages over the questions with at least k
    samples (their number is given with it)."""
    items = list(entries)
    if not items:
        return {"questions": 0, "rollouts": 0, "pass_at_k": {}, "majority_at_k": None, "no_answer": None}
    ks = ks if ks is not None else ks_for(max(e.samples for e in items))
    pass_k: dict[str, Any] = {}
    maj_k: dict[str, Any] | None = (
        {} if rule is not None and all(e.votes is not None for e in items) else None
    )
    # each entry's value looked up by its counts, computed once per distinct counts: the same floats, summed
    # in the same order, as calling pass_at_k / majority_at_k per entry (each entry's counts numbered once)
    samples = [e.samples for e in items]
    nc_of, nc = _numbered([(e.samples, e.passes) for e in items])
    vu_of, vu = _numbered([(e.votes, e.unanswered or 0) for e in items]) if maj_k is not None else ([], [])
    for k in ks:
        keep = list(map(k.__le__, samples))
        eligible = list(compress(nc_of, keep))
        if not eligible:
            continue
        passing = [pass_at_k(n, c, k) if n >= k else 0.0 for n, c in nc]
        pass_k[str(k)] = {
            "value": sum(map(passing.__getitem__, eligible)) / len(eligible),
            "questions": len(eligible),
        }
        if maj_k is not None and k <= MAJORITY_MAX_K:
            assert rule is not None  # maj_k is only built when a rule is given
            groups = list(compress(vu_of, keep))
            voted = [0.0] * len(vu)
            for g in dict.fromkeys(groups):
                voted[g] = majority_at_k(vu[g][0], vu[g][1], k, rule)
            maj_k[str(k)] = {
                "value": sum(map(voted.__getitem__, groups)) / len(groups),
                "questions": len(eligible),
            }
    rollouts = sum(e.rollouts for e in items)
    known = all(e.unanswered is not None for e in items)
    return {
        "questions": len(items),
        "rollouts": rollouts,
        "pass_at_k": pass_k,
        "majority_at_k": maj_k,
        "no_answer": (sum(e.unanswered for e in items) / rollouts) if known and rollouts else None,
    }


def _numbered(values: list[Any]) -> tuple[list[int], list[Any]]:
    """Each value's number (its distinct values numbered in order of first appearance), and those values."""
    ids: dict[Any, int] = {}
    numbers = [ids.setdefault(v, len(ids)) for v in values]
    return numbers, list(ids)


def round_metrics(doc: Mapping[str, Any], digits: int = 6) -> dict[str, Any]:
    """The metrics with every value rounded (a table's bytes are the same on every platform)."""
    out = dict(doc)
    for name in ("pass_at_k", "majority_at_k"):
        if out.get(name) is not None:
            out[name] = {k: {**v, "value": round(v["value"], digits)} for k, v in out[name].items()}
    if out.get("no_answer") is not None:
        out["no_answer"] = round(out["no_answer"], digits)
    return out
