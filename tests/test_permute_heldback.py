"""Issue 38's held-back checks on generated data: permuted questions, rollouts of simulated models whose truth
is known (scripts/simulate_rollouts.py: a chance to know each question, a letter prior when guessing), measured
by `passrates` as any rollouts are. Seeded; nothing is checked in.

- a model that always answers "A": plain pass rate 1/k, consistent and chance-corrected rates about 0;
- buckets of the chance-corrected posterior are monotone in the true skill, with a known position bias;
- the chance-corrected 90% credible interval holds the true corrected rate for at least 85% of questions.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import REPO
from prep_helpers import make_row

from mcqa_prep.convert.orders import PermuteSpec
from mcqa_prep.convert.variants import expand
from mcqa_prep.passrates.measure import measure
from mcqa_prep.passrates.table import read_table

_spec = importlib.util.spec_from_file_location("simulate_rollouts", REPO / "scripts" / "simulate_rollouts.py")
sim = importlib.util.module_from_spec(_spec)
sys.modules["simulate_rollouts"] = sim
_spec.loader.exec_module(sim)

LEVEL_COVERAGE = 0.85


def permuted_rows(questions: int, ks: tuple[int, ...]) -> list[dict]:
    """Every question in all its rotations (CircularEval's K = k: the gold at each position once)."""
    out = []
    for q in range(questions):
        k = ks[q % len(ks)]
        spec = PermuteSpec(k, "rotation", 0, True)
        exp = expand(make_row(q, k), spec, spec.salt())
        assert exp.rows is not None and len(exp.rows) == k
        out += exp.rows
    return out


def write(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return path


def always_a(row: dict, samples: int) -> list[dict]:
    """Rollouts answering "A", whatever the question (a pure letter prior)."""
    out = []
    for r in sim.rollouts_of(row, "always-a", samples, 0, 1.0, 1.0, "A", 1.0):
        r["response"]["output"][0]["content"][0]["text"] = "\\boxed{A}"
        out.append(r)
    return out


def test_a_model_that_always_answers_a(tmp_path):
    rows = permuted_rows(200, (4, 5))
    rollouts = write(tmp_path / "r.jsonl", [x for r in rows for x in always_a(r, 2)])
    measure([rollouts], tmp_path / "t.jsonl", rescore=True)
    t = read_table(tmp_path / "t.jsonl")
    es = [per["always-a"] for per in t.entries.values()]
    assert len(es) == 200
    for e in es:
        assert e.pass_rate == pytest.approx(1 / e.k)  # exactly 1/k: the gold stood at A once in k orders
        assert e.consistent_rate == 0.0
        assert e.consistent_mean < 0.05
        assert abs(e.corrected_mean) < 0.05 and e.at_chance
        assert e.corrected_bucket == t.buckets  # its own bucket
    plain = sum(e.pass_rate for e in es) / len(es)
    assert plain == pytest.approx((1 / 4 + 1 / 5) / 2)
    assert abs(sum(e.corrected_mean for e in es) / len(es)) < 0.02
    from mcqa_prep.passrates.positions import model_entries, summary

    s = summary(model_entries(t.entries, "always-a"))
    assert s["by_position"]["4"]["A"]["rate"] == 1.0 and s["by_position"]["4"]["B"]["rate"] == 0.0
    assert s["one_position_only"] == 200 and all(ex["position"] == "A" for ex in s["one_position_examples"])
    assert s["consistent_on_variants"] == 0.0


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
    """1,200 questions of 4 options in all 4 rotations, 3 rollouts each, of a model that knows question q with
    probability s_q ~ Beta(1.2, 1.2) and otherwise answers A with probability 0.7 (a strong letter prior)."""
    tmp = tmp_path_factory.mktemp("biased")
    rows = permuted_rows(1200, (4,))
    rollouts = []
    for r in rows:
        rollouts += sim.rollouts_of(r, "biased", 3, 7, 1.2, 1.2, "A", 0.7)
    measure([write(tmp / "r.jsonl", rollouts)], tmp / "t.jsonl", rescore=True)
    table = read_table(tmp / "t.jsonl")
    truth = {f"uuid:{r['uuid']}": sim.knowledge(sim.question_of(r), 7, 1.2, 1.2) for r in rows}
    return table, truth


def test_corrected_buckets_are_monotone_in_the_true_skill(biased):
    table, truth = biased
    by_bucket: dict[int, list[float]] = defaultdict(list)
    for key, per in table.entries.items():
        by_bucket[per["biased"].corrected_bucket].append(truth[key])
    regular = [b for b in range(table.buckets) if len(by_bucket[b]) >= 20]
    means = [sum(by_bucket[b]) / len(by_bucket[b]) for b in regular]
    assert len(regular) >= 3 and means == sorted(means, reverse=True), (regular, means)
    assert all(a - b > 0.03 for a, b in zip(means, means[1:], strict=False))
    # the questions at chance are the least known ones: below every regular bucket but the hardest
    chance = by_bucket[table.buckets]
    assert len(chance) >= 20 and sum(chance) / len(chance) < means[-2]


def test_corrected_interval_covers_the_true_corrected_rate(biased):
    """Over all four rotations the letter prior averages out: the true plain rate is s + (1 - s)/4, whose
    corrected rate is s, the chance to know."""
    table, truth = biased
    hits = total = 0
    for key, per in table.entries.items():
        e = per["biased"]
        total += 1
        hits += e.corrected_lower <= truth[key] <= e.corrected_upper
    assert total == 1200 and hits / total >= LEVEL_COVERAGE, hits / total


def test_the_letter_prior_shows_in_the_pass_rate_by_position_and_not_in_the_corrected_rate(biased):
    from mcqa_prep.passrates.positions import model_entries, summary

    table, truth = biased
    s = summary(model_entries(table.entries, "biased"))
    rates = s["by_position"]["4"]
    assert rates["A"]["rate"] > rates["B"]["rate"] + 0.2  # a guess is A 70% of the time
    assert s["rstd"]["4"] > 10
    assert s["consistent_on_variants"] < s["plain_on_variants"] - 0.2
    mean_truth = sum(truth.values()) / len(truth)
    assert abs(s["mean_corrected"] - mean_truth) < 0.05
