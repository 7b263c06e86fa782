"""Issue 27's held-back checks, on seeded synthetic rollouts with known pass probabilities per question and
model: calibration of the credible intervals, buckets monotone in true difficulty, pass@k and majority@k
equal to their definitions, a table counting no_answer differently refused when pooled, reward_profiles
accepted by NeMo Gym 0.7.0's row models, a curriculum file whose schedule is what was asked, and a report
with one section per model."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import pytest
from synthetic_rollouts import dataset_rows, generate, write

from mcqa_prep.passrates.kmetrics import majority_at_k
from mcqa_prep.passrates.measure import Estimate, measure
from mcqa_prep.passrates.table import read_table

MODELS = {"model-hard": (2.0, 3.0), "model-easy": (4.0, 1.5)}
QUESTIONS = 1500
LEVEL = 0.9


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("heldback")
    design = generate(seed=27, questions=QUESTIONS, models=MODELS, samples=8)
    src = write(tmp / "rescored.jsonl", design.rows)
    out = tmp / "t.jsonl"
    measure([src], out, estimate_with=Estimate(level=LEVEL), key_by="uuid")
    return design, read_table(out), tmp


def _binomial_band(n: int, p: float, sds: float = 4.0) -> float:
    return sds * math.sqrt(n * p * (1 - p))


def test_credible_intervals_cover_the_true_pass_probability_at_the_stated_rate(measured):
    design, table, _ = measured
    assert table.level == LEVEL
    for model in MODELS:
        covered = 0
        for q in range(QUESTIONS):
            e = table.entries[f"uuid:q{q:05d}"][model]
            assert (
                e.posterior_lower <= e.posterior_mean <= e.posterior_upper
            )  # every mean inside its interval
            covered += e.posterior_lower <= design.truth[(q, model)] <= e.posterior_upper
        # coverage ~ Binomial(QUESTIONS, LEVEL): within 4 standard deviations (1500 questions: +-3.1 points)
        assert abs(covered - LEVEL * QUESTIONS) <= _binomial_band(QUESTIONS, LEVEL), (
            model,
            covered / QUESTIONS,
        )


def test_prior_fitted_per_model_recovers_the_generating_beta(measured):
    _, table, _ = measured
    for model, (a, b) in MODELS.items():
        prior = table.priors[model]
        assert prior.fit == "marginal_ml" and prior.at_bound is None
        assert prior.mean == pytest.approx(a / (a + b), abs=0.03)
        assert prior.strength == pytest.approx(a + b, rel=0.35)


def test_buckets_are_monotone_in_true_difficulty(measured):
    design, table, _ = measured
    for model in MODELS:
        by_bucket: dict[int, list[float]] = {}
        for q in range(QUESTIONS):
            e = table.entries[f"uuid:q{q:05d}"][model]
            by_bucket.setdefault(e.bucket, []).append(design.truth[(q, model)])
        means = [sum(v) / len(v) for b, v in sorted(by_bucket.items()) if len(v) >= 20]
        assert len(means) >= 3
        assert all(x > y for x, y in itertools.pairwise(means)), (model, means)  # bucket 0 the easiest


def _brute_pass_at_k(outcomes: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


def _brute_majority_at_k(answers: list[tuple[str | None, bool]], k: int) -> float:
    total = 0.0
    subsets = list(itertools.combinations(answers, k))
    for s in subsets:  # no_answer=fail: "no answer" is a candidate that never passes
        votes = Counter(s)
        top = max(votes.values())
        tied = [v for v, n in votes.items() if n == top]
        total += sum(ok and a is not None for a, ok in tied) / len(tied)
    return total / len(subsets)


def test_pass_at_k_and_majority_at_k_equal_their_definitions(measured):
    design, table, _ = measured
    metrics = table.header["metrics"]
    for model in MODELS:
        m = metrics[model]
        assert list(m["pass_at_k"]) == ["1", "2", "4", "8"]
        for k in (1, 2, 4, 8):
            brute = [
                _brute_pass_at_k([r >= 1 for r, _ in design.outcomes[(q, model)]], k) for q in range(200)
            ]
            unbiased = [
                1 - math.comb(8 - c, k) / math.comb(8, k)
                for c in (sum(r >= 1 for r, _ in design.outcomes[(q, model)]) for q in range(200))
            ]
            assert brute == pytest.approx(unbiased, abs=1e-12)  # the estimator is the subset average
            full = [
                1 - math.comb(8 - c, k) / math.comb(8, k)
                for c in (sum(r >= 1 for r, _ in design.outcomes[(q, model)]) for q in range(QUESTIONS))
            ]
            assert m["pass_at_k"][str(k)]["value"] == pytest.approx(sum(full) / QUESTIONS, abs=1e-6)
            assert m["pass_at_k"][str(k)]["questions"] == QUESTIONS
        for k in (1, 2, 4):
            brute = [
                _brute_majority_at_k([(a, r >= 1) for r, a in design.outcomes[(q, model)]], k)
                for q in range(60)
            ]
            entries = [table.entries[f"uuid:q{q:05d}"][model] for q in range(60)]
            mine = [majority_at_k(e.votes, e.unanswered, k, "fail") for e in entries]
            assert mine == pytest.approx(brute, abs=1e-12)
        unanswered = sum(a is None for q in range(QUESTIONS) for _, a in design.outcomes[(q, model)])
        assert m["no_answer"] == pytest.approx(unanswered / (QUESTIONS * 8), abs=1e-6)


def test_a_table_counting_no_answer_differently_is_refused_when_pooled(measured, cli):
    design, _, tmp = measured
    a = write(tmp / "a.jsonl", design.rows[::2])  # two collection runs of the same questions
    b = write(tmp / "b.jsonl", design.rows[1::2])
    ta, tb = tmp / "ta.jsonl", tmp / "tb.jsonl"
    assert cli("passrates", a, "-o", ta, "-q", "--key-by", "uuid").exit_code == 0
    assert cli("passrates", b, "-o", tb, "--no-answer", "exclude", "-q", "--key-by", "uuid").exit_code == 0
    rows = write(tmp / "rows.jsonl", dataset_rows(QUESTIONS, ["ds"], ["s"]))
    res = cli("curriculum", ta, tb, "--rows", rows, "-o", tmp / "s.jsonl", "--model", "model-easy")
    assert res.exit_code == 1 and not (tmp / "s.jsonl").exists()
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert "count unanswered rollouts differently" in lines[0]
    assert "no_answer=fail" in lines[0] and "no_answer=exclude" in lines[0]
    res = cli("report", rows, "--pass-rates", ta, "--pass-rates", tb, "--format", "json")
    assert res.exit_code == 0  # the report keeps them apart instead: one section per rule and model
    doc = json.loads(res.stdout)
    rules = Counter(
        (s["summary"]["counting"]["no_answer"], s["summary"]["model"])
        for s in doc["sections"]
        if s["kind"] == "passrates"
    )
    assert rules == Counter({(r, m): 1 for r in ("fail", "exclude") for m in MODELS})


def test_exclude_rule_counts_only_answered_rollouts(measured):
    design, _, tmp = measured
    out = tmp / "ex.jsonl"
    measure([tmp / "rescored.jsonl"], out, estimate_with=Estimate(no_answer="exclude"), key_by="uuid")
    t = read_table(out)
    assert t.no_answer == "exclude" and t.header["counting"]["no_answer"] == "exclude"
    for q in range(50):
        outs = design.outcomes[(q, "model-hard")]
        answered = [r for r, a in outs if a is not None]
        key = f"uuid:q{q:05d}"
        if not answered:
            assert "model-hard" not in t.entries.get(key, {})
            continue
        e = t.entries[key]["model-hard"]
        assert (e.rollouts, e.samples, e.passes, e.unanswered) == (
            8,
            len(answered),
            sum(answered),
            8 - len(answered),
        )


def test_stamped_reward_profiles_are_accepted_by_nemo_gym_row_models(measured, cli):
    from nemo_gym_models import load_models

    models = load_models()  # skips, saying why, when NeMo Gym 0.7.0's wheel is not installed
    _, _, tmp = measured
    rows = write(tmp / "ds.jsonl", dataset_rows(40, ["ds"], ["s"]))
    out = tmp / "prepared"
    res = cli(
        "prepare", rows, "-o", out, "--stamp-reward-profiles", tmp / "t.jsonl", "--stamp-blend-fields",
        "--model", "model-easy", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    stamped = [json.loads(ln) for p in sorted(out.glob("train-*.jsonl")) for ln in p.read_text().splitlines()]
    assert len(stamped) == 40
    names = models.profile_fields()
    assert names == {"model_hf_path", "num_generations", "pass_rate"}  # read from NeMo Gym's own model
    for row in stamped:
        ours = [p for p in row["reward_profiles"] if p.get("source") == "mcqa-prep"]
        assert {p["model_hf_path"] for p in ours} == set(MODELS)
        assert all(names <= set(p) for p in ours)
        task = models.task_data.model_validate(row)
        assert task.reward_profiles == row["reward_profiles"]  # NeMo Gym's row model keeps them as written
        assert task.model_extra["pass_rate"] == row["pass_rate"] and row["pass_rate_model"] == "model-easy"
        models.run_request.model_validate(row)  # the request model NeMo Gym's mcqa server reads rows with


def test_curriculum_schedule_is_what_was_asked(measured, cli):
    _, _, tmp = measured
    rows = write(tmp / "rows-c.jsonl", dataset_rows(QUESTIONS, ["arc", "mmlu", "sciq"], ["bio", "chem"]))
    out, rows_out = tmp / "sched.jsonl", tmp / "rows-out.jsonl"
    res = cli(
        "curriculum", tmp / "t.jsonl", "--rows", rows, "-o", out, "--rows-out", rows_out, "--model", "model-hard",
        "--by", "source", "--domain-ratio", "arc=0.5", "--domain-ratio", "*=0.25", "--steps", "300",
        "--bootstrap-steps", "20", "--ranges", "7", "--start-rate", "0.7", "--end-rate", "0.3", "--sigma", "0.1",
        "--buckets", "10", "--drop-solved", "--format", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    header, ranges = lines[0], lines[1:]
    assert header["schedule"] == {
        "kind": "gaussian", "steps": 300, "bootstrap_steps": 20, "ranges": 7, "start_rate": 0.7, "end_rate": 0.3,
        "sigma": 0.1, "no_evidence_weight": 0.1,
    }  # fmt: skip
    assert header["model"] == "model-hard" and header["buckets"]["count"] == 10
    assert [(r["step_start"], r["step_end"]) for r in ranges] == [(0, 20), (20, 60), (60, 100), (100, 140),
                                                                    (140, 180), (180, 220), (220, 260), (260, 300)]  # fmt: skip
    assert [r["phase"] for r in ranges] == ["bootstrap"] + ["main"] * 7
    means = [r["gaussian_mean"] for r in ranges]
    assert means[0] == 0.7 and means[1:] == pytest.approx([0.7 - 0.4 * (i + 0.5) / 7 for i in range(7)])
    for r in ranges:
        assert sum(w for per in r["weights"].values() for w in per.values()) == pytest.approx(1.0)
        assert r["domain_weights"] == pytest.approx({"arc": 0.5, "mmlu": 0.25, "sciq": 0.25})
    centers = [sum((0.95 - 0.1 * int(b)) * w for b, w in r["bucket_weights"].items()) for r in ranges[1:]]
    assert all(x > y for x, y in itertools.pairwise(centers))  # the weight moves to harder buckets
    written = [json.loads(ln) for ln in rows_out.read_text().splitlines()]
    assert header["rows"]["read"] == QUESTIONS == len(written) + header["rows"]["dropped"].get("solved", 0)
    col = written[0]["difficulty"]
    assert {"posterior_mean", "bucket_index", "bucket_count", "expected_quantile", "domain", "weight"} <= set(
        col
    )
    assert sum(r["difficulty"]["weight"] for r in written) == pytest.approx(len(written), rel=1e-6)


def test_report_has_one_section_per_model(measured, cli):
    _, _, tmp = measured
    rows = write(tmp / "rows-r.jsonl", dataset_rows(QUESTIONS, ["arc", "sciq"], ["bio", "chem", "phys"]))
    res = cli(
        "report",
        rows,
        tmp / "rescored.jsonl",
        "--pass-rates",
        tmp / "t.jsonl",
        "--by",
        "subject",
        "--format",
        "json",
        "-q",
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    sections = [s for s in doc["sections"] if s["kind"] == "passrates"]
    assert sorted(s["summary"]["model"] for s in sections) == sorted(MODELS)
    for s in sections:
        by = s["summary"]["by_column"]
        assert {r["value"] for r in by["source"]} == {"arc", "sciq"}
        assert {r["value"] for r in by["subject"]} == {"bio", "chem", "phys"}
        assert sum(r["questions"] for r in by["subject"]) == QUESTIONS
    rescored = [s for s in doc["sections"] if s["kind"] == "rescored"]
    assert set(rescored[0]["summary"]["pass_rates"]["by_model"]) == set(MODELS)  # never pooled across models


def test_synthetic_files_are_not_checked_in():
    assert not list(Path(__file__).parent.glob("*.jsonl"))
