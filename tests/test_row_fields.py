"""The fields of a row, read by one rule in every command (mcqa_prep/fields.py): the commands that read the same
field of the same rows put them in the same buckets."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcqa_prep.cli import main


def _json(args: list) -> dict:
    res = CliRunner().invoke(main, [str(a) for a in (*args, "--format", "json")])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _rollout(i: int, template: object) -> dict:
    row = {
        "uuid": f"q{i}",
        "responses_create_params": {
            "input": [{"role": "user", "content": f"Question {i}?\nA: x\nB: y\nC: z"}]
        },
        "options": [{"A": "x"}, {"B": "y"}, {"C": "z"}],
        "expected_answer": "C",
        # no box: strict boxed reads nothing, robust reads the gold (a format miss under --compare-mode)
        "response": {
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "The answer is C."}]}]
        },
    }
    if template is not None:
        row["template_metadata"] = {"template_id": template}
    return row


def test_rescore_summarize_and_report_bucket_a_template_id_alike(tmp_path: Path):
    """A template id is a non-empty string (the row schema's type). An integer id once went to "(none)" in
    rescore's format misses and to "7" in summarize and report; an empty one was written into the grading."""
    src = tmp_path / "rollouts.jsonl"
    templates = ["t1", 7, "", None]
    src.write_text("".join(json.dumps(_rollout(i, t)) + "\n" for i, t in enumerate(templates)))
    out = tmp_path / "rescored.jsonl"
    r = _json(["rescore", src, "-o", out, "--compare-mode", "robust", "-q"])
    per_template = r["compare_mode"]["per_template"]
    assert {t: v["rows"] for t, v in per_template.items()} == {"t1": 1, "(none)": 3}
    written = [json.loads(x)["metadata"]["grading"] for x in out.read_text().splitlines()]
    assert [g.get("template_id") for g in written] == ["t1", None, None, None]

    s = _json(["summarize", out])
    assert s["templates"] == {"t1": {"rows": 1, "accuracy": 0.0}, "(none)": {"rows": 3, "accuracy": 0.0}}
    assert set(s["pass_rates"]["by_template"]) == {"t1", "(none)"}

    rep = _json(["report", out, "-o", tmp_path / "page.html", "-q"])
    (sec,) = [x for x in rep["sections"] if x["kind"] == "rescored"]
    (table,) = [b for b in sec["blocks"] if b["id"].endswith("templates-table")]
    assert sorted(row[0] for row in table["rows"]) == ["(none)", "t1"]


def test_the_contract_stamp_tells_unstamped_from_a_stamp_that_names_no_contract():
    from mcqa_prep.fields import UNSTAMPED, contract_stamp

    cid = "sha256:" + "a" * 64
    assert contract_stamp(None) == contract_stamp({}) == contract_stamp({"metadata": None}) == UNSTAMPED
    assert contract_stamp({"metadata": {"other": 1}}) == UNSTAMPED
    assert contract_stamp({"metadata": {"mcqa_prep": {"contract": cid}}}).contract == cid
    # stamped, but naming no contract: serve refuses these, verify names what they hold
    for held in (None, 5, "", ["x"]):
        s = contract_stamp({"metadata": {"mcqa_prep": {"contract": held}}})
        assert s.present and s.value == held and s.contract is None
    assert contract_stamp({"metadata": {"mcqa_prep": None}}) == (True, None)


def test_an_integer_beyond_a_float_is_no_recorded_reward_not_a_crash(tmp_path: Path):
    """JSON integers have no bound; Python reads one beyond a float's range exactly, and float() of it raises:
    rescore stopped with an internal error on such a recorded reward, and report on such a rescored row."""
    big = 10**400
    src = tmp_path / "rollouts.jsonl"
    src.write_text(json.dumps(_rollout(0, "t1") | {"reward": big}) + "\n")
    out = tmp_path / "rescored.jsonl"
    r = _json(["rescore", src, "-o", out, "-q"])
    assert r["graded"] == 1 and r["agreement"]["recorded"] == 0
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert row["metadata"]["grading"]["previous_reward"] is None
    row["reward"] = big
    row["metadata"]["grading"]["previous_reward"] = -big
    edited = tmp_path / "edited.jsonl"
    edited.write_text(json.dumps(row) + "\n")
    rep = _json(["report", edited, "-o", tmp_path / "page.html", "-q"])
    (sec,) = [x for x in rep["sections"] if x["kind"] == "rescored"]
    assert sec["summary"]["graded"] == 0 and sec["summary"]["recorded"] == 0


def test_the_recorded_reward_is_the_top_level_one_in_summarize_as_in_report(tmp_path: Path):
    """A rescored row records its reward at the top level, where rescore writes it; summarize also took a
    `metadata.grading.reward` (which nothing writes) when the row had none, and counted the row as graded
    where report does not count it."""
    graded = {"reward": 1.0, "metadata": {"grading": {"status": "ok", "contract": "sha256:" + "1" * 64}}}
    hidden = {"metadata": {"grading": {"status": "ok", "contract": "sha256:" + "1" * 64, "reward": 1.0}}}
    f = tmp_path / "rescored.jsonl"
    f.write_text(json.dumps(graded) + "\n" + json.dumps(hidden) + "\n")
    s = _json(["summarize", f])
    assert (s["scored"], s["graded"], s["malformed"]["count"]) == (1, 1, 1)
    assert "$.reward: None is not a reward" in s["malformed"]["lines"][0]
    rep = _json(["report", f, "-o", tmp_path / "page.html", "-q"])
    (sec,) = [x for x in rep["sections"] if x["kind"] == "rescored"]
    assert (sec["summary"]["rows"], sec["summary"]["graded"]) == (1, 1)


def test_a_reward_is_a_finite_number_that_is_not_a_boolean():
    from mcqa_prep.evidence import reward_problem
    from mcqa_prep.fields import recorded_reward, reward_of

    for value, want in [(1, 1.0), (0.5, 0.5), (-2, -2.0), (True, None), ("1", None), (None, None)]:
        assert reward_of(value) == want
    for value in (float("nan"), float("inf"), -float("inf"), 10**400, [1.0], {"r": 1}):
        assert reward_of(value) is None
    assert recorded_reward({"reward": 1}) == 1.0 and recorded_reward({"metadata": {"reward": 1}}) is None
    # evidence of a pass asks more of it: [0, 1]
    assert [reward_problem(v) is None for v in (0, 1.0, 0.5, 2, -0.1, 10**400, True)] == [
        True, True, True, False, False, False, False,
    ]  # fmt: skip


def _graded_rollout(contract: object) -> dict:
    return _rollout(0, None) | {
        "reward": 1.0,
        "metadata": {"grading": {"status": "ok", "contract": contract}},
    }


def test_a_grading_contract_is_a_non_empty_string_in_rescore_and_passrates(tmp_path: Path):
    """An empty metadata.grading.contract names no contract, as summarize, report and passrates' own count read
    it: rescore listed "" among the input's contracts, and passrates (keep_graded, as audit reads rollouts)
    took such a rollout for graded, then left it out for carrying no contract."""
    from mcqa_prep.passrates.measure import Measurement
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.records import Row
    from mcqa_prep.rescore.rows import Settings

    src = tmp_path / "rollouts.jsonl"
    src.write_text(json.dumps(_graded_rollout("")) + "\n" + json.dumps(_graded_rollout("sha256:x")) + "\n")
    r = _json(["rescore", src, "-o", tmp_path / "out.jsonl", "-q"])
    assert r["input_contracts"] == {"sha256:x": 1}

    policy = GradingPolicy()
    run = Measurement(Settings(policy), None, "m", "prompt", keep_graded=True)
    run.add(Row("r.jsonl", 1, 0, _graded_rollout(""), None, "train"))
    assert run.no_contract.count == 0 and list(run.pools) == [policy.contract_id()]
