"""Through a real `mcqa-prep serve` over HTTP: the NeMo Gym parity suite equals `grade_text` on every case (one
server per NeMo Gym server-config `grading_mode` the suite uses, as the policy override); bench rows equal NeMo
Gym 0.7.0's own `verify` (from its wheel, when `make bench-deps` installed it); and a small soak (concurrent
clients, 5% hostile requests): no 5xx, no request lost, the counters account for every request.

The full-size runs (>= 100k requests, 20k parity rows, memory growth) are bench/soak_serve.py's."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import pytest
from serve_helpers import serving
from test_conformance_parity import CASES

from mcqa_prep.grader import grade_text, response_text

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_serve  # noqa: E402
import nemo_gym_ref  # noqa: E402
import soak_serve  # noqa: E402


def _expected(case: dict) -> tuple:
    req = case["request"]
    got = grade_text(
        response_text(req.get("response")),
        req.get("options"),
        req.get("expected_answer"),
        req.get("grading_mode"),
        req.get("template_metadata"),
        override=case.get("config_grading_mode"),
    )
    return got.reward, got.extracted_answer, got.expected_answer, got.status, got.rule


@pytest.mark.skipif(not CASES, reason="the NeMo Gym parity suite is not found (shared/ folder)")
def test_parity_suite_through_the_server_equals_grade_text():
    by_mode: dict = {}
    for case in CASES:
        by_mode.setdefault(case.get("config_grading_mode"), []).append(case)
    failures = []
    for mode, cases in by_mode.items():
        args = ["--grading-mode-override", mode] if mode else []
        with serving(*args) as s:
            answers = bench_serve.post_all(s.url, [json.dumps(c["request"]).encode() for c in cases], 4)
        for case, doc in zip(cases, answers, strict=True):
            got = (
                doc.get("reward"),
                doc.get("extracted_answer"),
                doc.get("expected_answer"),
                (doc.get("mcqa_prep") or {}).get("status"),
                (doc.get("mcqa_prep") or {}).get("rule"),
            )
            if str(case["want"].get("error") or "").startswith("422"):  # NeMo Gym's request model refuses it
                if doc["http"] != 422:
                    failures.append(f"{case['id']}: server {doc['http']}, NeMo Gym refuses it with 422")
            elif doc["http"] != 200 or got != _expected(case):
                failures.append(f"{case['id']}: server {doc['http']} {got} != grade_text {_expected(case)}")
    assert not failures, "\n".join(failures)
    assert sum(len(v) for v in by_mode.values()) == len(CASES)


def test_bench_rows_equal_nemo_gyms_own_verify():
    try:
        ng = nemo_gym_ref.load()
    except nemo_gym_ref.NeMoGymMissing as exc:
        pytest.skip(str(exc))
    bodies = bench_serve.request_bodies(300, seed=7)
    with serving() as s:
        ours = bench_serve.post_all(s.url, bodies)
    theirs = [json.loads(ng.verify_row(json.loads(b))) for b in bodies]
    diff = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a.get("reward") != b["reward"]]
    assert not diff, [(i, ours[i].get("reward"), theirs[i]["reward"]) for i in diff[:5]]
    assert all(a["http"] == 200 for a in ours)
    # the fields NeMo Gym's response has, ours has too, with the same values for the row's own fields
    for a, b in zip(ours[:20], theirs[:20], strict=True):
        assert set(b) <= set(a) | {"_ng_rollout_id"}
        assert a["expected_answer"] == b["expected_answer"] and a["mask_sample"] == b["mask_sample"] is False


def test_small_soak_no_server_error_no_lost_request(tmp_path):
    bodies = bench_serve.request_bodies(200, seed=3)
    plan = soak_serve.plan(2000, bodies, hostile_share=0.05, rng=random.Random(5))
    with serving("--workers", "2", "--regex-timeout", "0.2") as s:
        result = asyncio.run(soak_serve.drive(s.url, plan, clients=16))
        metrics = s.get("/metrics?format=json")[1]
    assert result["answered"] == len(plan) and result["lost"] == 0
    assert result["server_errors"] == 0, result["examples"]
    assert result["by_kind"]["hostile"] >= 50
    verify_sent = sum(1 for kind, path, _ in plan if path == "/verify")
    assert metrics["verify_requests"] == verify_sent  # every verify request counted once, across both workers
    assert metrics["grader_errors"] == 0


def test_bench_serve_machinery_without_timing():
    """The bench's requests are graded without a refusal or an invalid row, and its figures leave out a ratio
    without a baseline (no figure is checked here: performance claims come from `make bench`)."""
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.serve.contract import ServedContract
    from mcqa_prep.serve.verifier import Verifier

    v = Verifier(ServedContract(GradingPolicy()))
    answers = [v.verify(json.loads(b)) for b in bench_serve.request_bodies(50)]
    assert all(
        code == 200 and doc["mcqa_prep"]["status"] not in ("invalid_row", "contract_mismatch")
        for code, doc in answers
    )
    assert v.counters.totals()["unstamped"] == 0  # stamped with the served contract
    one = {"rps": 1.0, "p50_ms": 1.0, "p99_ms": 2.0, "per_cpu_s": 10.0}
    figs = bench_serve.serve_figures({"16.mcqa_prep": [one, one, one]}, {"mcqa_prep": 0.5}, (16,))
    assert figs["c16.mcqa_prep.per_cpu_s"]["samples"] == [10.0, 10.0, 10.0]
    assert "c16.per_cpu_x" not in figs  # no baseline measured: no ratio
    assert bench_serve.disagreements([{"http": 200, "reward": 1.0}], [{"http": 200, "reward": 0.0}]) == [0]
