"""Difficulty with uncertainty: the beta-binomial posterior of a question's pass probability, with its prior
fitted to the table (empirical Bayes), a credible interval and a difficulty bucket.

Model: for one model, question i has an unknown pass probability p_i ~ Beta(alpha, beta) (the prior, shared by
the model's questions), and its c_i passes out of n_i samples are Binomial(n_i, p_i). The posterior of p_i is
Beta(alpha + c_i, beta + n_i - c_i): its mean, and an equal-tailed credible interval at `level`.

The prior is fitted per model by **marginal maximum likelihood** of the beta-binomial (`fit_prior`): the
(alpha, beta) that make the observed counts most likely, with p_i integrated out. Why not the method of
moments: questions have different sample counts (partial collections, mixed runs), which the moment
equations handle only with an arbitrary weighting and can answer with a negative variance (no valid prior);
the likelihood takes every question with its own n, and it depends on the counts only through the distinct
(n, c) pairs, so fitting a million questions costs as much as fitting a few hundred. The maximiser is
Nelder-Mead on (logit of the prior mean, log of the prior strength alpha + beta), from several starts.

Boundaries, stated rather than hidden: the strength is kept within [STRENGTH_MIN, STRENGTH_MAX] (all-or-nothing
counts push it towards 0, identical rates towards infinity); when no question has two or more samples the
strength cannot be estimated at all (a beta-binomial of n = 1 is a Bernoulli of the prior mean), so it is
fixed at FIXED_STRENGTH (two pseudo-samples) and the fit says so. Every number written is rounded to DIGITS
decimals (the prior's parameters first, then the posterior computed from the rounded prior), so a table's bytes
and content hash are the same on every platform.

scipy is not a dependency: the regularized incomplete beta function is its continued fraction (evaluated by
the modified Lentz method) and its inverse a bracketed Newton iteration; tests compare both with closed forms
and with numerical integration.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DIGITS = 6
DEFAULT_LEVEL = 0.9
DEFAULT_BUCKETS = 5
STRENGTH_MIN = 0.01
STRENGTH_MAX = 1e4
FIXED_STRENGTH = 2.0
MEAN_EPS = 1e-6
METHOD = "beta-binomial marginal maximum likelihood (empirical Bayes, one prior per model)"
INTERVAL = "equal-tailed"
BUCKETS_BY = "posterior_mean"
BUCKET_ORDER = "easiest_first"


# ---- the beta function and its distribution ----------------------------------------------------------------


def log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for coef in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + coef * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + coef / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b): P(X <= x) for X ~ Beta(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = a * math.log(x) + b * math.log1p(-x) - log_beta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        return min(1.0, math.exp(log_front) * _beta_cf(a, b, x) / a)
    return max(0.0, 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b)


def beta_ppf(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b): the x in [0, 1] with I_x(a, b) = q (Newton steps kept inside a bracket
    that halves whenever a step would leave it)."""
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    x = a / (a + b)
    lb = log_beta(a, b)
    for _ in range(300):
        f = beta_cdf(x, a, b) - q
        if f == 0.0:
            return x
        if f < 0.0:
            lo = x
        else:
            hi = x
        if hi - lo <= 1e-15 * max(hi, 1e-300):
            break
        log_pdf = (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - lb if 0.0 < x < 1.0 else -math.inf
        step = f / math.exp(log_pdf) if log_pdf > -700 else math.inf
        nxt = x - step
        x = nxt if lo < nxt < hi and math.isfinite(nxt) else (lo + hi) / 2.0
    return x


# ---- the prior -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prior:
    """A model's fitted Beta(alpha, beta) prior and how it was obtained."""

    alpha: float
    beta: float
    questions: int  # entries the fit used
    fit: str  # "marginal_ml", "fixed_strength" (no question with 2+ samples), "none" (no entries)
    at_bound: str | None = None  # "strength_min" / "strength_max" when the optimum lies on a bound
    log_likelihood: float | None = None

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def strength(self) -> float:
        return self.alpha + self.beta

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "beta": self.beta,
            "mean": round(self.mean, DIGITS),
            "strength": round(self.strength, DIGITS),
            "questions": self.questions,
            "fit": self.fit,
            "at_bound": self.at_bound,
            "log_likelihood": self.log_likelihood,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Prior:
        return cls(
            d["alpha"], d["beta"], d["questions"], d["fit"], d.get("at_bound"), d.get("log_likelihood")
        )


def _sig(x: float, digits: int = DIGITS) -> float:
    """x rounded to `digits` significant digits (a prior's parameters span several orders of magnitude)."""
    if x == 0.0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def _log_likelihood(counts: Mapping[tuple[int, int], int], alpha: float, beta: float) -> float:
    base = log_beta(alpha, beta)
    return sum(w * (log_beta(alpha + c, beta + (n - c)) - base) for (n, c), w in counts.items())


def _clamp(theta: tuple[float, float]) -> tuple[float, float]:
    lo_m, hi_m = math.log(MEAN_EPS / (1 - MEAN_EPS)), math.log((1 - MEAN_EPS) / MEAN_EPS)
    return (
        min(max(theta[0], lo_m), hi_m),
        min(max(theta[1], math.log(STRENGTH_MIN)), math.log(STRENGTH_MAX)),
    )


def _params(theta: tuple[float, float]) -> tuple[float, float]:
    m, ls = _clamp(theta)
    mean, strength = 1.0 / (1.0 + math.exp(-m)), math.exp(ls)
    return mean * strength, (1.0 - mean) * strength


def _nelder_mead(f: Any, start: tuple[float, float], step: float = 1.0) -> tuple[tuple[float, float], float]:
    """Minimise f over R^2 (a few hundred evaluations at most; deterministic)."""
    pts = [start, (start[0] + step, start[1]), (start[0], start[1] + step)]
    vals = [f(p) for p in pts]
    for _ in range(400):
        order = sorted(range(3), key=vals.__getitem__)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if abs(vals[2] - vals[0]) < 1e-12 * (1.0 + abs(vals[0])) and _spread(pts) < 1e-9:
            break
        cx, cy = (pts[0][0] + pts[1][0]) / 2, (pts[0][1] + pts[1][1]) / 2
        refl = (2 * cx - pts[2][0], 2 * cy - pts[2][1])
        fr = f(refl)
        if fr < vals[0]:
            exp_ = (3 * cx - 2 * pts[2][0], 3 * cy - 2 * pts[2][1])
            fe = f(exp_)
            pts[2], vals[2] = (exp_, fe) if fe < fr else (refl, fr)
        elif fr < vals[1]:
            pts[2], vals[2] = refl, fr
        else:
            con = ((cx + pts[2][0]) / 2, (cy + pts[2][1]) / 2)
            fc = f(con)
            if fc < vals[2]:
                pts[2], vals[2] = con, fc
            else:  # shrink towards the best point
                for i in (1, 2):
                    pts[i] = ((pts[0][0] + pts[i][0]) / 2, (pts[0][1] + pts[i][1]) / 2)
                    vals[i] = f(pts[i])
    best = min(range(3), key=vals.__getitem__)
    return pts[best], vals[best]


def _spread(pts: list[tuple[float, float]]) -> float:
    return max(abs(p[k] - pts[0][k]) for p in pts[1:] for k in (0, 1))


def fit_prior(pairs: Iterable[tuple[int, int]]) -> Prior:
    """The marginal-maximum-likelihood Beta prior of (samples, passes) pairs (one pair per question)."""
    counts: dict[tuple[int, int], int] = {}
    for n, c in pairs:
        counts[(n, c)] = counts.get((n, c), 0) + 1
    questions = sum(counts.values())
    if not questions:
        return Prior(1.0, 1.0, 0, "none")
    total_n = sum(n * w for (n, _), w in counts.items())
    total_c = sum(c * w for (_, c), w in counts.items())
    mean0 = min(max(total_c / total_n, MEAN_EPS), 1 - MEAN_EPS)
    if all(n < 2 for n, _ in counts):
        a, b = _sig(mean0 * FIXED_STRENGTH), _sig((1 - mean0) * FIXED_STRENGTH)
        return Prior(a, b, questions, "fixed_strength", None, round(_log_likelihood(counts, a, b), DIGITS))

    def nll(theta: tuple[float, float]) -> float:
        return -_log_likelihood(counts, *_params(theta))

    logit0 = math.log(mean0 / (1 - mean0))
    best, best_val = None, math.inf
    for ls in (math.log(0.5), math.log(4.0), math.log(50.0)):
        theta, val = _nelder_mead(nll, (logit0, ls))
        if val < best_val:
            best, best_val = theta, val
    assert best is not None
    m, ls = _clamp(best)
    bound = None
    if ls <= math.log(STRENGTH_MIN) + 1e-6:
        bound = "strength_min"
    elif ls >= math.log(STRENGTH_MAX) - 1e-6:
        bound = "strength_max"
    a, b = (_sig(v) for v in _params((m, ls)))
    return Prior(a, b, questions, "marginal_ml", bound, round(_log_likelihood(counts, a, b), DIGITS))


# ---- the posterior ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Posterior:
    mean: float
    lower: float
    upper: float
    bucket: int


def bucket_of(mean: float, count: int = DEFAULT_BUCKETS) -> int:
    """The difficulty bucket of a posterior mean: `count` equal-width bins of the pass probability, each holding
    the means in (low, high], 0 the easiest ((1 - 1/count, 1]) and count - 1 the hardest ([0, 1/count])."""
    return min(count - 1, max(0, math.floor(round((1.0 - mean) * count, 9))))


def bucket_edges(count: int = DEFAULT_BUCKETS) -> list[list[float]]:
    """[low, high] of the posterior mean for each bucket, easiest first (a bucket holds (low, high]; the hardest
    also holds 0)."""
    return [[round(1 - (i + 1) / count, 9), round(1 - i / count, 9)] for i in range(count)]


class PosteriorCache:
    """Posteriors of one model's prior, computed once per distinct (samples, passes) pair."""

    def __init__(self, prior: Prior, level: float = DEFAULT_LEVEL, buckets: int = DEFAULT_BUCKETS) -> None:
        self.prior = prior
        self.level = level
        self.buckets = buckets
        self._memo: dict[tuple[int, int], Posterior] = {}

    def __call__(self, samples: int, passes: int) -> Posterior:
        key = (samples, passes)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = posterior(self.prior, samples, passes, self.level, self.buckets)
        return found


def posterior(prior: Prior, samples: int, passes: int, level: float, buckets: int) -> Posterior:
    a = prior.alpha + passes
    b = prior.beta + (samples - passes)  # (the integers first: beta + 10^9 - 10^9 is 0.0 in floats)
    mean = round(a / (a + b), DIGITS)
    tail = (1.0 - level) / 2.0
    lower = min(round(beta_ppf(tail, a, b), DIGITS), mean)
    upper = max(round(beta_ppf(1.0 - tail, a, b), DIGITS), mean)
    return Posterior(mean, lower, upper, bucket_of(mean, buckets))


def settings_doc(level: float, buckets: int, priors: Mapping[str, Prior]) -> dict[str, Any]:
    """The table header's `posterior` object."""
    return {
        "method": METHOD,
        "credible_level": level,
        "interval": INTERVAL,
        "buckets": {
            "count": buckets,
            "by": BUCKETS_BY,
            "order": BUCKET_ORDER,
            "edges": bucket_edges(buckets),
        },
        "priors": {m: p.to_dict() for m, p in sorted(priors.items())},
    }
