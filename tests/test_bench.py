"""The bench's machinery, without timing anything: its generated rows are what the grader expects, its report
renders every figure next to a baseline (or "n/a"), and a missing NeMo Gym install says how to get it.

No thresholds here: performance claims come from `make bench`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_rescore  # noqa: E402
import nemo_gym_ref  # noqa: E402
import run as bench_run  # noqa: E402


def test_generated_verify_requests_grade_without_invalid_rows(tmp_path):
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.rescore.run import rescore

    requests, rollouts, dataset = bench_rescore.write_inputs(tmp_path, 60)
    report = rescore(requests, tmp_path / "out.jsonl", GradingPolicy())
    assert report.rows == 60 and report.invalid.count == 0
    assert set(report.by_mode) <= {
        "strict_single_letter_boxed",
        "lenient_boxed",
        "lenient_answer_colon",
        "output_regex",
    }
    joined = rescore(rollouts, tmp_path / "out2.jsonl", GradingPolicy(), rows_paths=[dataset])
    assert joined.joined == 60 and joined.invalid.count == 0
    first = json.loads(requests.read_text(encoding="utf-8").splitlines()[0])
    assert first["response"]["output"][0]["content"][0]["type"] == "output_text"


def test_markdown_puts_every_figure_next_to_a_baseline():
    results = {
        "_machine": {
            "cpu": "X",
            "cores": 2,
            "python": "3.11",
            "load": [3.0, 0, 0],
            "load_after": [3.5, 0, 0],
        },
        "bench_grader": {
            "multi:strict_single_letter_boxed": {
                "rows_per_cpu_s": 300_000,
                "grade_text_rows_per_cpu_s": 150_000,
                "nemo_gym_rows_per_cpu_s": 150_000,
                "nemo_gym_grade_rows_per_cpu_s": 100_000,
                "nemo_gym_function": "_parse_answer_letter_strict_boxed",
            },
            "_nemo_gym": "0.7.0",
        },
        "bench_rescore": {
            "ours_rows_per_cpu_s": 20_000,
            "ours_rows_per_wall_s": 18_000,
            "floor_rows_per_cpu_s": 40_000,
            "nemo_gym_rows_per_cpu_s": 5_000,
            "workers": "n/a",
            "memory": [{"rows": 100_000, "requests_peak_rss_mb": 40, "rollouts_join_peak_rss_mb": 400}],
        },
        "bench_cluster": {
            "ray": {
                "ray_1": {
                    "per_worker_rows_per_s": 9000,
                    "fixed_s": 0.05,
                    "ray_start_s": 4.2,
                    "first_job_s": 0.4,
                    "command_s": 6.0,
                },
                "workers_1": {"per_worker_rows_per_s": 10000, "fixed_s": 0.4, "command_s": 2.0},
                "ray_2": {"error": "cannot start or reach Ray: boom"},
            },
            "load_prepared": {
                "rows": 50_000,
                "datasets": {"cold_s": 4.0, "warm_s": 0.02},
                "load_prepared": {"cold_s": 2.0, "warm_s": 0.01, "warm2_s": 0.008},
            },
        },  # fmt: skip
    }
    md = bench_run.markdown(results)
    assert (
        "| rescore --engine ray, 1 worker(s): per worker, beyond the fixed cost | 9,000 | 10,000 | 0.90x |"
        in md
    )
    assert "| rescore --engine ray, 2 worker(s) | error |" in md
    assert "| load_prepared warm (50,000 rows; s) | 0.0080 | 0.0200 | 0.40x |" in md
    assert "| load_prepared cold (50,000 rows; s) | 2.00 | 4.00 | 0.50x |" in md
    assert "| extract strict_single_letter_boxed (multilingual) | 300,000 | 150,000 | 2.00x |" in md
    assert "| rescore end to end, 1 process | 20,000 | 5,000 | 4.00x |" in md
    assert "| rescore --workers 2 (wall) | n/a |" in md
    assert "busy" in md  # load 3.5 on 2 cores: the table says its figures are noisy
    for row in md.splitlines():
        if row.startswith("| ") and not row.startswith("| stage"):
            assert row.count("|") == 6, row


def test_missing_nemo_gym_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setattr(nemo_gym_ref, "_LOADED", None)
    with pytest.raises(nemo_gym_ref.NeMoGymMissing, match="make bench-deps"):
        nemo_gym_ref.load(tmp_path)


def test_audit_rows_sit_next_to_the_datasketch_loop_and_say_the_target():
    results = {
        "_machine": {"cpu": "X", "cores": 2, "python": "3.11", "load": [1.0], "load_after": [1.0]},
        "bench_audit": {
            "rows": 685_573,
            "benchmark_questions": 26_522,
            "workers": 2,
            "audit": {"wall_s": 50.0, "cpu_s": 95.0, "peak_rss_mb": 900.0},
            "audit_rows_per_s": 13_711,
            "subset": {
                "rows": 50_000,
                "ours_1_worker": {"wall_s": 10.0},
                "datasketch_loop": {"wall_s": 40.0, "rows_per_s": 2_000},
            },
            "memory": {
                "rows": [171_393, 685_573],
                "with_duplicates_mb": [600, 700],
                "contamination_only_mb": [500, 500],
            },
        },
    }
    md = bench_run.markdown(results)
    assert "| audit -j 1, first 50,000 rows, end to end (wall) | 5,000 | 1,250 | 4.00x |" in md
    assert "target <= 60 s" in md and "500 / 500 MB (--no-duplicates" in md


def test_the_audit_bench_data_is_read_by_the_presets_and_its_planted_rows_are_found(tmp_path, monkeypatch):
    import bench_audit

    from mcqa_prep.audit import Request, audit

    monkeypatch.setattr(bench_audit, "CACHE", tmp_path)
    monkeypatch.setattr(bench_audit, "SIZES", {"mmlu": 300, "mmlu_pro": 200, "gpqa": 50})
    monkeypatch.setattr(bench_audit, "PLANTED", 0.2)
    data, bench = bench_audit.generate(400)
    doc = audit([data], Request(against=tuple(map(str, bench))))
    assert [b["preset"] for b in doc["benchmarks"]] == ["mmlu", "mmlu_pro", "gpqa"]
    assert doc["summary"]["rows"] == 400 and 40 <= doc["summary"]["contaminated_rows"] <= 120
    assert doc["position_bias"]["option_counts"]["dataset"].get("10", 0) > 200
