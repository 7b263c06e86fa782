"""From counts to a table's estimates: per model the fitted prior, per (question, model) the posterior and
bucket, per model pass@k / majority@k / no_answer. Used when a table is written (`measure`), when tables are
pooled (`pool`), and when a passrates.v1 table, which has no posterior, is read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..evidence import key_kind
from .consistency import fields as v3_fields
from .entries import Entry, Variant
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


@dataclass
class Estimated:
    """What `estimated` works out in its passes over the cells, for the table and its report: the entries
    sorted by (key, model), priors by model, metrics by model, priors by model and option count; and what a
    header and a report count of them (gathered on the way, not in passes of their own): per model its
    (samples, passes) pairs in the cells' order and its (key, Entry) pairs in the entries' order, the questions
    by key kind, and the entries with an option count and with several variants."""

    entries: list[tuple[str, str, Entry]]
    priors: dict[str, Prior]
    metrics: dict[str, Any]
    priors_by_k: dict[str, dict[str, Prior]]
    pairs: dict[str, list[tuple[int, int]]]
    per_model: dict[str, list[tuple[str, Entry]]]
    # per entry its shape's estimates, shared by the entries of one shape (None: several variants), which
    # entries.entry_lines_shaped serialises once
    shapes: list[Any]
    keys_by_kind: dict[str, int]
    with_k: int
    with_variants: int


def estimated(
    cells: Mapping[tuple[str, str], Counts],
    variants: Mapping[tuple[str, str], tuple[int | None, tuple[Variant, ...]]],
    rule: str | None,
    level: float = DEFAULT_LEVEL,
    buckets: int = DEFAULT_BUCKETS,
) -> Estimated:
    """The estimates of counted cells and their variant counts (VariantTally.counted), in two passes: one over
    the cells (the priors' pairs), then one over them sorted making each entry once with its posterior and its
    fields across variants (consistency.v3_fields), and counting what the header and report need; an entry
    without variant counts gets one variant of unknown prompt and gold (its consistent rate is its plain rate)."""
    by_model: dict[str, list[tuple[int, int]]] = {}
    for (_, model), c in cells.items():
        by_model.setdefault(model, []).append((c.samples, c.passes))
    priors = fit_priors(by_model)
    caches = {m: PosteriorCache(p, level, buckets) for m, p in priors.items()}
    rows = [(km, cells[km], variants.get(km, _NO_VARIANTS)) for km in sorted(cells)]  # (str pairs: fast)
    pairs: dict[
        tuple[str, int], list[tuple[int, int]]
    ] = {}  # the option count's prior: fitted in entry order
    for (_, model), c, (k, _) in rows:
        if k is not None and k >= 2:
            pairs.setdefault((model, k), []).append((c.samples, c.passes))
    by_k = {mk: fit_prior(ps) for mk, ps in sorted(pairs.items())}
    caches_k = {mk: PosteriorCache(p, level, buckets) for mk, p in by_k.items()}
    # an entry's estimates depend on its model, option count and counts alone (and its variants' counts):
    # worked out once per distinct ones of a question with one variant (nearly all), the same values
    shapes: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
    entries: list[tuple[str, str, Entry]] = []
    shaped: list[Any] = []
    per_model: dict[str, list[tuple[str, Entry]]] = {m: [] for m in sorted(by_model)}
    kinds: dict[str, int] = {}
    last, with_k, with_variants = None, 0, 0
    for (key, model), c, (k, vs) in rows:
        if not vs:
            vs = (Variant("", None, c.samples, c.passes),)
        if len(vs) == 1:
            shape = (model, k, c.samples, c.passes, vs[0].samples, vs[0].passes)
            found = shapes.get(shape)
            if found is None:
                found = shapes[shape] = _estimates(
                    c, k, vs, priors[model], caches[model], caches_k, model, level, buckets
                )
            shaped.append(found)  # (shared by the entries of this shape, made once per shape)
        else:
            with_variants += 1
            found = _estimates(c, k, vs, priors[model], caches[model], caches_k, model, level, buckets)
            shaped.append(None)
        head, tail = found
        e = Entry._make(
            (c.samples, c.passes, c.reward_sum / c.samples, c.rollouts, c.unanswered, c.votes, *head, vs, *tail)
        )  # fmt: skip
        entries.append((key, model, e))
        per_model[model].append((key, e))
        with_k += k is not None
        if key != last:  # (entries sorted by key: a question's entries are together)
            kind = key_kind(key)
            kinds[kind] = kinds.get(kind, 0) + 1
            last = key
    doc: dict[str, dict[str, Prior]] = {}
    for (model, k), prior in by_k.items():
        doc.setdefault(model, {})[str(k)] = prior
    metrics = {
        m: round_metrics(model_metrics((e for _, e in es), rule), DIGITS) for m, es in per_model.items()
    }
    return Estimated(
        entries,
        priors,
        metrics,
        doc,
        by_model,
        per_model,
        shaped,
        dict(sorted(kinds.items())),
        with_k,
        with_variants,
    )


_NO_VARIANTS: tuple[None, tuple[Variant, ...]] = (None, ())


def _estimates(
    c: Counts, k: int | None, vs: tuple[Variant, ...], prior: Prior, cache: PosteriorCache,
    caches_k: Mapping[tuple[str, int], PosteriorCache], model: str, level: float, buckets: int,
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:  # fmt: skip
    """An entry's fields from its posterior mean to k, and from consistent_rate on (its variants between)."""
    post = cache(c.samples, c.passes)
    by_k = caches_k.get((model, k)) if k is not None else None
    post_k = None
    if by_k is not None:
        p = by_k(c.samples, c.passes)
        post_k = (p.mean, p.lower, p.upper)
    plain = (post.mean, post.lower, post.upper)
    fields = v3_fields(prior, level, buckets, post_k, k, vs, plain)
    return (*plain, post.bucket, fields[0]), fields[2:]


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
