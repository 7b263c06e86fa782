"""`summarize`: pass-rate distribution per model and per template (buckets and histogram), never across
contracts; the same numbers `passrates` reports for the same rollouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from passrate_helpers import DESIGN, rollouts

from mcqa_prep.errors import ContractMismatch
from mcqa_prep.evidence import distribution
from mcqa_prep.passrates.measure import measure
from mcqa_prep.rescore.summarize import summarize


def _row(
    prompt: str, reward: float, model: str | None, template: str | None, contract: str = "sha256:" + "1" * 64
):
    r: dict = {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "reward": reward,
        "metadata": {"grading": {"status": "ok", "contract": contract}},
    }
    if model is not None:
        r["response"] = {"model": model, "output": []}
    if template is not None:
        r["template_metadata"] = {"template_id": template}
    return r


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_distribution_per_model_and_template(tmp_path):
    rows = [
        _row("q1", 1.0, "a", "t1"),
        _row("q1", 1.0, "a", "t1"),  # a: q1 always
        _row("q2", 1.0, "a", "t1"),
        _row("q2", 0.0, "a", "t1"),  # a: q2 half
        _row("q3", 0.0, "a", "t2"),  # a: q3 never
        _row("q1", 0.0, "b", "t1"),  # b: q1 never
        _row("q4", 1.0, None, None),  # unknown model, no template
    ]
    rep = summarize([_write(tmp_path / "r.jsonl", rows)])
    by_model = rep["pass_rates"]["by_model"]
    assert by_model["a"] == {
        "questions": 3,
        "mean_pass_rate": pytest.approx(0.5),
        "pass_rate": {"0%": 1, "partial": 1, "100%": 1},
        "histogram": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1],
    }
    assert by_model["b"]["pass_rate"] == {"0%": 1, "partial": 0, "100%": 0}
    assert by_model["(unknown)"]["questions"] == 1
    by_t = rep["pass_rates"]["by_template"]
    # t1 pools both models per prompt: q1 2/3, q2 1/2
    assert by_t["t1"]["pass_rate"] == {"0%": 0, "partial": 2, "100%": 0}
    assert by_t["t2"]["pass_rate"] == {"0%": 1, "partial": 0, "100%": 0}
    assert by_t["(none)"]["pass_rate"] == {"0%": 0, "partial": 0, "100%": 1}


def test_histogram_bins_are_exact_at_the_edges():
    # bins: 0 | (0,.1] ... (.8,.9] | (.9,1) | 1; .3 and .7 fall on an edge, 1/3 and 2/3 just past one
    d = distribution([(10, 3), (10, 7), (3, 1), (3, 2), (1, 1), (5, 0), (10, 1), (10, 9), (100, 99)])
    assert d["histogram"] == [1, 1, 0, 1, 1, 0, 0, 2, 0, 1, 1, 1]


def test_refuses_to_pool_contracts_for_the_distribution_too(tmp_path):
    rows = [_row("q1", 1.0, "a", "t1"), _row("q1", 0.0, "a", "t1", contract="sha256:" + "2" * 64)]
    f = _write(tmp_path / "r.jsonl", rows)
    with pytest.raises(ContractMismatch):
        summarize([f])
    rep = summarize([f], contract="sha256:" + "2" * 64)
    assert rep["pass_rates"]["by_model"]["a"]["pass_rate"] == {"0%": 1, "partial": 0, "100%": 0}


def test_same_numbers_as_passrates_keyed_by_prompt(cli, tmp_path):
    src = rollouts(tmp_path)
    rescored = tmp_path / "rescored.jsonl"
    assert cli("rescore", src, "-o", rescored).exit_code == 0
    rep = summarize([rescored])
    table = measure([rescored], tmp_path / "t.jsonl", key_by="prompt")
    for model in ("m1", "m2"):
        assert rep["pass_rates"]["by_model"][model] == table.models[model]
    assert rep["pass_rates"]["by_model"]["m1"]["questions"] == len(DESIGN)


def test_cli_text_shows_distributions(cli, tmp_path):
    rescored = tmp_path / "rescored.jsonl"
    cli("rescore", rollouts(tmp_path), "-o", rescored)
    res = cli("summarize", rescored)
    assert res.exit_code == 0, res.output
    assert "pass rates per model (prompts; histogram bins 0, ≤.1 .. ≤.9, <1, 1):" in res.output
    assert "0%: 2  partial: 3  100%: 2  |2 0 0 1 0 1 0 0 1 0 0 2|" in res.output
    assert "pass rates per template_id" in res.output
