"""The posterior's arithmetic (beta distribution, prior fit, buckets) and the pass@k / majority@k definitions,
checked against closed forms, numerical integration and brute force."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from mcqa_prep.passrates.kmetrics import NO_ANSWER_RULES, ks_for, majority_at_k, model_metrics, pass_at_k
from mcqa_prep.passrates.posterior import (
    FIXED_STRENGTH,
    STRENGTH_MIN,
    Prior,
    beta_cdf,
    beta_ppf,
    bucket_edges,
    bucket_of,
    fit_prior,
    log_beta,
    posterior,
)


def _integrate(x: float, a: float, b: float, n: int = 20000) -> float:
    lb, h = log_beta(a, b), x / n
    return h * sum(
        math.exp((a - 1) * math.log((i + 0.5) * h) + (b - 1) * math.log1p(-(i + 0.5) * h) - lb)
        for i in range(n)
    )


@pytest.mark.parametrize(
    "x, a, b, expected",
    [
        (0.3, 1.0, 1.0, 0.3),  # uniform
        (0.3, 2.5, 1.0, 0.3**2.5),  # Beta(a, 1): x^a
        (0.3, 1.0, 3.5, 1 - 0.7**3.5),  # Beta(1, b): 1 - (1 - x)^b
        (0.5, 7.0, 7.0, 0.5),  # symmetric
        (0.25, 2.0, 2.0, 3 * 0.25**2 - 2 * 0.25**3),
    ],
)
def test_beta_cdf_closed_forms(x, a, b, expected):
    assert beta_cdf(x, a, b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "x, a, b", [(0.4, 2.3, 5.1), (0.9, 10.5, 3.2), (0.35, 40.0, 60.0), (0.05, 1.5, 30.0)]
)
def test_beta_cdf_against_numerical_integration(x, a, b):
    assert beta_cdf(x, a, b) == pytest.approx(_integrate(x, a, b), abs=1e-7)


@pytest.mark.parametrize("a, b", [(2.0, 3.0), (0.5, 0.5), (100.5, 3.5), (1.2, 80.0), (0.3, 0.2)])
@pytest.mark.parametrize("q", [0.025, 0.05, 0.5, 0.95, 0.975])
def test_beta_ppf_inverts_the_cdf(a, b, q):
    x = beta_ppf(q, a, b)
    assert 0.0 <= x <= 1.0 and beta_cdf(x, a, b) == pytest.approx(q, abs=1e-9)


def test_beta_ppf_edges():
    assert beta_ppf(0.0, 2, 3) == 0.0 and beta_ppf(1.0, 2, 3) == 1.0
    assert beta_ppf(0.05, 0.005, 8.0) < 1e-12  # mass piled at 0: the lower quantile rounds to 0


def test_fit_prior_recovers_a_known_beta():
    rng = random.Random(3)
    pairs = []
    for _ in range(4000):
        p = rng.betavariate(2.0, 5.0)
        n = rng.choice([4, 8, 16])  # varying sample counts: what the likelihood handles and moments do not
        pairs.append((n, sum(rng.random() < p for _ in range(n))))
    prior = fit_prior(pairs)
    assert prior.fit == "marginal_ml" and prior.questions == 4000
    assert prior.mean == pytest.approx(2 / 7, abs=0.01) and prior.strength == pytest.approx(7.0, rel=0.15)


def test_fit_prior_boundaries_are_stated():
    assert fit_prior([]).fit == "none"
    single = fit_prior([(1, 1), (1, 0), (1, 1)])  # no question with 2+ samples: strength not identifiable
    assert single.fit == "fixed_strength" and single.strength == pytest.approx(FIXED_STRENGTH, rel=1e-5)
    assert single.mean == pytest.approx(2 / 3, abs=1e-6)
    allornothing = fit_prior([(8, 0)] * 50 + [(8, 8)] * 50)  # bimodal counts: the strength heads to 0
    assert allornothing.at_bound == "strength_min" and allornothing.strength == pytest.approx(
        STRENGTH_MIN, rel=1e-3
    )


def test_posterior_is_the_conjugate_update_and_buckets_follow_the_mean():
    prior = Prior(2.0, 3.0, 10, "marginal_ml")
    post = posterior(prior, 8, 6, 0.9, 5)
    assert post.mean == pytest.approx(8 / 13, abs=1e-6)
    assert post.lower == pytest.approx(beta_ppf(0.05, 8, 5), abs=1e-6)
    assert post.upper == pytest.approx(beta_ppf(0.95, 8, 5), abs=1e-6)
    assert post.bucket == bucket_of(post.mean) == 1
    means = [posterior(prior, 8, c, 0.9, 5).mean for c in range(9)]
    assert means == sorted(means)  # more passes, higher mean
    assert [bucket_of(m) for m in (1.0, 0.8, 0.79999, 0.2, 0.19999, 0.0)] == [0, 1, 1, 4, 4, 4]  # (low, high]
    assert bucket_edges(5)[0] == [0.8, 1.0] and bucket_edges(5)[-1] == [0.0, 0.2]


@pytest.mark.parametrize("n, c", [(1, 0), (1, 1), (5, 2), (8, 0), (8, 8), (16, 3), (10, 9)])
def test_pass_at_k_is_the_average_over_k_subsets(n, c):
    outcomes = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets), abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(n, c, n + 1)


def _brute_majority(answers: list[tuple[str | None, bool]], k: int, rule: str) -> float:
    pool = [a for a in answers if a[0] is not None] if rule == "exclude" else answers
    total, subsets = 0.0, list(itertools.combinations(pool, k))
    for s in subsets:
        votes = Counter(s)
        top = max(votes.values())
        tied = [v for v, n in votes.items() if n == top]
        total += sum(ok and a is not None for a, ok in tied) / len(tied)
    return total / len(subsets)


@pytest.mark.parametrize("rule", NO_ANSWER_RULES)
def test_majority_at_k_is_the_expected_vote_over_k_subsets(rule):
    rng = random.Random(11)
    for _ in range(150):
        answers = []
        for _ in range(rng.randint(1, 9)):
            a = rng.choice(["A", "B", "C", None])
            answers.append((a, a == "A"))
        pool = [a for a in answers if a[0] is not None] if rule == "exclude" else answers
        if not pool:
            continue
        votes = Counter(a for a in pool if a[0] is not None)
        v = (
            tuple(sorted((n for (_, ok), n in votes.items() if ok), reverse=True)),
            tuple(sorted((n for (_, ok), n in votes.items() if not ok), reverse=True)),
        )
        unanswered = sum(a[0] is None for a in pool)
        for k in range(1, len(pool) + 1):
            assert majority_at_k(v, unanswered, k, rule) == pytest.approx(
                _brute_majority(answers, k, rule), abs=1e-12
            )


def test_the_two_rules_read_the_same_rollouts_differently():
    """NeMo Gym issue #2574's example: one question answered right twice, one never answered."""
    answered, silent = ((2,), ()), ((), ())
    assert majority_at_k(answered, 0, 2, "fail") == 1.0
    assert majority_at_k(silent, 2, 2, "fail") == 0.0  # "no answer" wins the vote: wrong
    # under `exclude` the silent question has no sample at all: it is not a question of the table


def test_ks_and_model_metrics():
    assert ks_for(8) == [1, 2, 4, 8] and ks_for(6) == [1, 2, 4, 6] and ks_for(1) == [1]

    class E:
        def __init__(self, samples, passes, unanswered, votes):
            self.samples, self.passes, self.rollouts = samples, passes, samples
            self.unanswered, self.votes = unanswered, votes

    m = model_metrics([E(4, 2, 1, ((2,), (1,))), E(2, 0, 2, ((), ()))], "fail")
    assert m["pass_at_k"]["1"] == {"value": pytest.approx(0.25), "questions": 2}
    assert m["pass_at_k"]["4"] == {"value": 1.0, "questions": 1}  # only the question with 4 samples
    assert m["no_answer"] == pytest.approx(3 / 6)
    assert model_metrics([E(4, 2, None, None)], "fail")["majority_at_k"] is None  # answers not known


def test_pass_at_k_beyond_the_exact_range_equals_the_exact_ratio():
    """From EXACT_SAMPLES on pass@k comes from log-factorials (its cost independent of the sample counts); where
    the exact ratio of binomials can still be computed, the two agree to a float's last bits."""
    import random
    from math import comb

    from mcqa_prep.passrates.kmetrics import _pass_at_k_large

    rng = random.Random(7)
    for _ in range(400):
        n = rng.randint(1, 6000)
        c, k = rng.randint(0, n), rng.randint(1, n)
        if n - c >= k:
            assert _pass_at_k_large(n, c, k) == pytest.approx(1.0 - comb(n - c, k) / comb(n, k), abs=1e-15)
    assert pass_at_k(10**9, 1, 1) == pytest.approx(1e-9, rel=1e-12)
    assert pass_at_k(10**9, 10**9 // 3, 2) == pytest.approx(1 - (2 / 3) ** 2, abs=1e-9)
    assert pass_at_k(10**12, 5, 10**12) == 1.0
