"""From counts to a table's estimates: per model the fitted prior, per (question, model) the posterior and
bucket, per model pass@k / majority@k / no_answer. Used when a table is written (`measure`), when tables are
pooled (`pool`), and when a passrates.v1 table, which has no posterior, is read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .entries import Entry
from .kmetrics import Votes, model_metrics, round_metrics
from .posterior import DEFAULT_BUCKETS, DEFAULT_LEVEL, DIGITS, PosteriorCache, Prior, fit_prior


@dataclass(slots=True)
class Counts:
    """What was counted for one (question, model), under the table's rule."""

    rollouts: int
    samples: int
    passes: int
    reward_sum: float
    unanswered: int | None
    votes: Votes | None


def fit_priors(by_model: Mapping[str, Iterable[tuple[int, int]]]) -> dict[str, Prior]:
    return {m: fit_prior(pairs) for m, pairs in sorted(by_model.items())}


def estimate(
    cells: Mapping[tuple[str, str], Counts],
    rule: str | None,
    level: float = DEFAULT_LEVEL,
    buckets: int = DEFAULT_BUCKETS,
) -> tuple[list[tuple[str, str, Entry]], dict[str, Prior], dict[str, Any]]:
    """(entries sorted by (key, model), priors by model, metrics by model) of counted cells."""
    by_model: dict[str, list[tuple[int, int]]] = {}
    for (_, model), c in cells.items():
        by_model.setdefault(model, []).append((c.samples, c.passes))
    priors = fit_priors(by_model)
    caches = {m: PosteriorCache(p, level, buckets) for m, p in priors.items()}
    entries = []
    for (key, model), c in sorted(cells.items()):
        post = caches[model](c.samples, c.passes)
        entries.append(
            (
                key,
                model,
                Entry(
                    c.samples,
                    c.passes,
                    c.reward_sum / c.samples,
                    c.rollouts,
                    c.unanswered,
                    c.votes,
                    post.mean,
                    post.lower,
                    post.upper,
                    post.bucket,
                ),
            )
        )
    return entries, priors, metrics_of(entries, rule)


def metrics_of(entries: Iterable[tuple[str, str, Entry]], rule: str | None) -> dict[str, Any]:
    per: dict[str, list[Entry]] = {}
    for _, model, e in entries:
        per.setdefault(model, []).append(e)
    return {
        m: round_metrics(model_metrics((_view(e) for e in es), rule), DIGITS) for m, es in sorted(per.items())
    }


def _view(e: Entry) -> Entry:
    return e if e.rollouts is not None else e._replace(rollouts=e.samples)


def with_posterior(
    entries: Mapping[str, Mapping[str, Entry]], level: float = DEFAULT_LEVEL, buckets: int = DEFAULT_BUCKETS
) -> tuple[dict[str, dict[str, Entry]], dict[str, Prior]]:
    """The entries of a table without posterior (passrates.v1) with one computed here: the same estimate a
    v2 table records (priors fitted per model to these entries)."""
    by_model: dict[str, list[tuple[int, int]]] = {}
    for per in entries.values():
        for model, e in per.items():
            by_model.setdefault(model, []).append((e.samples, e.passes))
    priors = fit_priors(by_model)
    caches = {m: PosteriorCache(p, level, buckets) for m, p in priors.items()}
    out: dict[str, dict[str, Entry]] = {}
    for key, per in entries.items():
        row = out[key] = {}
        for model, e in per.items():
            post = caches[model](e.samples, e.passes)
            row[model] = e._replace(
                rollouts=e.samples,
                posterior_mean=post.mean,
                posterior_lower=post.lower,
                posterior_upper=post.upper,
                bucket=post.bucket,
            )
    return out, priors
