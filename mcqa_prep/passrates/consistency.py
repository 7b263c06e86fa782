"""A question across its variants: the consistent rate, the chance-corrected posterior, the gold positions.

A question's **variants** are its distinct rendered prompts under one key (`prepare --permute`'s option orders,
which share the question's uuid, or `metadata.mcqa_prep.permutation.question`; also NeMo Gym's renderings of
one uuid under several templates). Each variant is counted apart, with the position of its gold option
(`gold`, 0-based: A is 0) and the question's option count `k`, read from the rollout or from its dataset row
(`--rows`). A table entry (passrates.v3) then holds, beside the plain rate over every rollout:

- `variants`: per variant its prompt id, gold position, samples and passes (the per-position pass rate is their
  sum by position);
- **consistent**: the chance that one rollout of *each* variant passes, all of them: the product of the
  variants' pass probabilities (CircularEval's "solved under every rotation", for any number of samples).
  Observed: the product of the variants' observed rates (unbiased: the variants' rollouts are independent).
  Posterior: each variant's pass probability has the model's Beta prior and its own counts, independently;
  the product's mean and second moment are exact, and the credible interval is that of the Beta with those two
  moments. With one variant it is the plain posterior exactly;
- **chance-corrected**: (p - 1/k) / (1 - 1/k) of the pass probability p: 0 at guessing among k options, 1
  always right, negative below chance. Its posterior is the posterior of p mapped by that (increasing,
  linear) function, so its credible interval holds the true corrected rate exactly when the one of p holds p.
  That posterior of p has a prior of its own, fitted (as the plain one, by marginal maximum likelihood) per
  model *and option count*: chance is 1/4 for a 4-option question and 1/10 for a 10-option one, and one prior
  over both would pull a 4-option question that is guessed (1/4) below chance and a 10-option one above it.
  The header records these priors (`consistency.priors_by_options`);
- **at chance**: that credible interval holds 1/k, i.e. the evidence cannot tell the question from a guess;
  such a question gets its own bucket, `corrected_bucket` = the bucket count (after the hardest), the others
  the equal-width bucket of their corrected mean (clipped to [0, 1]; 0 the easiest). Unknown k: every
  corrected field null.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from ..grader.letters import normalize_gold
from .entries import Variant
from .posterior import DIGITS, Prior, beta_ppf, bucket_of

METHOD = {
    "variants": "distinct prompts of a question (option orders, templates), each counted apart",
    "consistent": "product of the variants' pass probabilities, each with the model's prior (independent); "
    "interval of the Beta with the product's exact mean and second moment",
    "corrected": "(p - 1/k) / (1 - 1/k) of the posterior of p under a prior fitted per model and option count k",
    "at_chance": "that credible interval holds 1/k: its own bucket, corrected_bucket = bucket count",
}


def layout(row: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    """(gold position, option count) of a row as graded: its options with a text, in order, and the position
    of its expected_answer among them; (None, None) when the row does not say."""
    if row is None:
        return None, None
    opts = row.get("options")
    if not isinstance(opts, list):
        return None, None
    letters = [
        str(k).upper()
        for o in opts
        if isinstance(o, Mapping)
        for k, v in o.items()
        if v is not None and isinstance(k, str)
    ]
    if len(letters) < 2:
        return None, None
    gold = row.get("expected_answer")
    g = normalize_gold(gold) if isinstance(gold, str) else None
    return (letters.index(g) if g in letters else None), len(letters)


def variant_of(
    row: Mapping[str, Any], joined: Mapping[str, Any] | None, key: bytes | None
) -> tuple[bytes, int | None, int | None]:
    """(prompt key, gold position, option count) of a rollout whose prompt key is `key`: its own options, else
    its dataset row's."""
    gold, k = layout(row)
    if k is None:
        gold, k = layout(joined)
    return (key if key is not None else b""), gold, k


class VariantTally:
    """(key, model) -> its variants' counts: one variant as one list [prompt key (16 bytes), gold, k, rollouts,
    passes, unanswered, unanswered passes] (most questions have one prompt: no dict for them), several as a
    dict by prompt key of such lists."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str], Any] = {}

    def add(
        self,
        key: str,
        model: str,
        where: tuple[bytes, int | None, int | None],
        ok: bool,
        answered: bool,
        n: int = 1,
    ) -> None:
        c = self.variant(key, model, where)
        c[3] += n
        c[4] += ok * n
        if not answered:
            c[5] += n
            c[6] += ok * n

    def variant(self, key: str, model: str, where: tuple[bytes, int | None, int | None]) -> list[Any]:
        """The counts of (key, model)'s variant `where` (made, without a rollout, when it is the first)."""
        prompt, gold, k = where
        km = (key, model)
        cell = self.cells.get(km)
        if cell is None:
            c = self.cells[km] = [prompt, gold, k, 0, 0, 0, 0]
        elif type(cell) is list:
            if cell[0] == prompt:
                c = cell
            else:
                c = [prompt, gold, k, 0, 0, 0, 0]
                self.cells[km] = {cell[0]: cell, prompt: c}
        else:
            c = cell.get(prompt)
            if c is None:
                c = cell[prompt] = [prompt, gold, k, 0, 0, 0, 0]
        return c

    def merge(self, other: VariantTally) -> None:
        """Fold in a later chunk's tally: the same cells as adding its rollouts here one by one (a variant's
        prompt, gold and option count are those of its first rollout, its counts the sum)."""
        for km, theirs in other.cells.items():
            for c in [theirs] if type(theirs) is list else theirs.values():
                mine = self.cells.get(km)
                if mine is None:
                    self.cells[km] = c
                    continue
                same = mine if type(mine) is list and mine[0] == c[0] else None
                if type(mine) is dict:
                    same = mine.get(c[0])
                    if same is None:
                        mine[c[0]] = c
                        continue
                elif same is None:
                    self.cells[km] = {mine[0]: mine, c[0]: c}
                    continue
                for i in range(3, 7):
                    same[i] += c[i]

    def counted(self, rule: str) -> dict[tuple[str, str], tuple[int | None, tuple[Variant, ...]]]:
        """Per (key, model): the option count (None when unknown or not one) and the variants as `rule` counts
        them (`fail`: every rollout a sample, an unanswered one failed; `exclude`: unanswered ones left out)."""
        out: dict[tuple[str, str], tuple[int | None, tuple[Variant, ...]]] = {}
        fail = rule == "fail"
        for km, cell in self.cells.items():
            if type(cell) is list:  # one variant (most questions): the loop below, unrolled
                prompt, gold, k, n, p, u, up = cell
                samples = n if fail else n - u
                out[km] = (k, (Variant(prompt.hex(), gold, samples, p - up),) if samples else ())
                continue
            per = sorted(cell.values(), key=lambda c: c[0])
            ks = {c[2] for c in per}
            vs = []
            for prompt, gold, _, n, p, u, up in per:
                samples = n if rule == "fail" else n - u
                if samples:
                    vs.append(Variant(prompt.hex(), gold, samples, p - up))
            out[km] = (ks.pop() if len(ks) == 1 else None, tuple(vs))
        return out


def consistent(prior: Prior, variants: Iterable[Variant], level: float) -> tuple[float, float, float, float]:
    """(observed, posterior mean, lower, upper) of the rate of passing every variant (module docstring); the
    product does not depend on the variants' order, so it is computed once per set of counts (cached)."""
    counts = tuple(sorted((v.samples, v.passes) for v in variants))
    return _consistent(prior.alpha, prior.beta, counts, level)


@functools.lru_cache(maxsize=1 << 16)
def _consistent(
    alpha: float, beta: float, counts: tuple[tuple[int, int], ...], level: float
) -> tuple[float, float, float, float]:
    observed, mean, second = 1.0, 1.0, 1.0
    for samples, passes in counts:
        observed *= passes / samples
        a = alpha + passes
        b = beta + samples - passes
        m = a / (a + b)
        mean *= m
        second *= m * (a + 1.0) / (a + b + 1.0)
    var = second - mean * mean
    m = round(mean, DIGITS)
    if var <= 1e-15 or not 0.0 < mean < 1.0:
        return round(observed, DIGITS), m, m, m
    t = mean * (1.0 - mean) / var - 1.0
    tail = (1.0 - level) / 2.0
    lo = min(round(beta_ppf(tail, mean * t, (1.0 - mean) * t), DIGITS), m)
    hi = max(round(beta_ppf(1.0 - tail, mean * t, (1.0 - mean) * t), DIGITS), m)
    return round(observed, DIGITS), m, lo, hi


def corrected(x: float, k: int) -> float:
    """(x - 1/k) / (1 - 1/k)."""
    return round((k * x - 1.0) / (k - 1.0), DIGITS)


def fields(
    prior: Prior, level: float, buckets: int, post: tuple[float, float, float] | None, k: int | None,
    variants: tuple[Variant, ...], plain: tuple[float, float, float],
) -> tuple[Any, ...]:  # fmt: skip
    """The v3 fields of one entry, in Entry's order (k, variants, consistent_rate .. corrected_bucket), given
    the posterior (mean, lower, upper) of its pass probability under its model's and option count's prior
    (`post`, None without k) and under the model's prior (`plain`): with one variant, the consistent
    posterior is that plain one."""
    if len(variants) == 1:
        v = variants[0]
        rate, (c_mean, c_lo, c_hi) = round(v.passes / v.samples, DIGITS), plain
    else:
        rate, c_mean, c_lo, c_hi = consistent(prior, variants, level)
    if k is None or k < 2 or post is None:
        return k, variants, rate, c_mean, c_lo, c_hi, None, None, None, None, None
    mean, lo, hi = post
    at_chance = lo <= 1.0 / k <= hi
    cm = corrected(mean, k)
    bucket = buckets if at_chance else bucket_of(min(1.0, max(0.0, cm)), buckets)
    return k, variants, rate, c_mean, c_lo, c_hi, cm, corrected(lo, k), corrected(hi, k), at_chance, bucket


def by_position(variants: Iterable[Variant]) -> dict[int, tuple[int, int]]:
    """Samples and passes by gold position (variants of unknown gold left out)."""
    out: dict[int, list[int]] = {}
    for v in variants:
        if v.gold is not None:
            c = out.setdefault(v.gold, [0, 0])
            c[0] += v.samples
            c[1] += v.passes
    return {g: (n, p) for g, (n, p) in sorted(out.items())}


def merge(a: tuple[int | None, tuple[Variant, ...]], b: tuple[int | None, tuple[Variant, ...]]) -> Any:
    """The variant counts of one (question, model) in two tables, added by prompt (for pooling)."""
    k = a[0] if a[0] == b[0] else None
    acc: dict[tuple[str, int | None], list[int]] = {}
    for v in (*a[1], *b[1]):
        c = acc.setdefault((v.prompt, v.gold), [0, 0])
        c[0] += v.samples
        c[1] += v.passes
    return k, tuple(Variant(p, g, n, c) for (p, g), (n, c) in sorted(acc.items(), key=lambda kv: kv[0][0]))


def header_doc(
    entries: Iterable[tuple[str, str, Any]], buckets: int, priors_by_k: Mapping[str, Mapping[str, Prior]]
) -> dict[str, Any]:
    """The table header's `consistency` object."""
    with_k = with_variants = 0
    for _, _, e in entries:
        with_k += e.k is not None
        with_variants += len(e.variants) > 1
    return counts_doc(with_k, with_variants, buckets, priors_by_k)


def counts_doc(
    with_k: int, with_variants: int, buckets: int, priors_by_k: Mapping[str, Mapping[str, Prior]]
) -> dict[str, Any]:
    """The table header's `consistency` object, of the entries' counts (with an option count, with several
    variants) as `header_doc` counts them."""
    return {
        "method": dict(METHOD),
        "corrected_buckets": buckets,
        "chance_bucket": buckets,
        "questions_with_k": with_k,
        "questions_with_variants": with_variants,
        "priors_by_options": {
            m: {k: p.to_dict() for k, p in sorted(per.items(), key=lambda kv: int(kv[0]))}
            for m, per in sorted(priors_by_k.items())
        },
    }
