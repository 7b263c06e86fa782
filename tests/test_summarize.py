"""`summarize`: aggregation of rescored files, refusal to pool contracts, malformed lines, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcqa_prep.cli import main
from mcqa_prep.errors import ContractMismatch, InputError
from mcqa_prep.rescore.summarize import summarize

C1 = "sha256:" + "1" * 64
C2 = "sha256:" + "2" * 64


def row(
    prompt: str,
    reward: float,
    *,
    status: str = "ok",
    contract: str | None = C1,
    template: str | None = "t1",
    gate: str | None = None,
    boundary: str | None = "not_applied",
    graded: bool = True,
) -> dict:
    r: dict = {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "options": [{"A": "a"}, {"B": "b"}],
        "expected_answer": "B",
        "reward": reward,
    }
    if template is not None:
        r["template_metadata"] = {"template_id": template}
    if graded:
        g: dict = {"status": status, "mode": "strict_single_letter_boxed", "gate": gate, "boundary": boundary}
        if contract is not None:
            g["contract"] = contract
        r["metadata"] = {"grading": g}
    return r


def write(path: Path, rows: list, extra_lines: tuple[str, ...] = ()) -> Path:
    lines = [json.dumps(r) for r in rows] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def one_contract(tmp_path: Path) -> Path:
    rows = [
        row("q1", 1.0),
        row("q1", 1.0),  # prompt q1: 100%
        row("q2", 1.0),
        row("q2", 0.0, status="no_answer"),  # q2: partial
        row("q3", 0.0, status="truncated", gate="truncated", template="t2"),  # q3: 0%
        row("q4", 0.0, status="missing_final_answer", template=None, boundary="missing_final_answer"),  # 0%
        row("q5", 1.0, graded=False),  # unscored
    ]
    return write(tmp_path / "rescored.jsonl", rows)


def test_aggregates(one_contract: Path) -> None:
    rep = summarize([one_contract])
    assert rep["contract"] == C1
    assert rep["contracts"] == {C1: 6}
    assert (rep["lines_read"], rep["scored"], rep["unscored"]) == (7, 6, 1)
    assert rep["accuracy"] == pytest.approx(3 / 6)
    assert rep["statuses"] == {"ok": 3, "missing_final_answer": 1, "no_answer": 1, "truncated": 1}
    assert rep["gates"] == {"truncated": 1}
    assert rep["boundaries"] == {"missing_final_answer": 1, "not_applied": 5}
    assert rep["templates"] == {
        "t1": {"rows": 4, "accuracy": 0.75},
        "(none)": {"rows": 1, "accuracy": 0.0},
        "t2": {"rows": 1, "accuracy": 0.0},
    }
    assert rep["prompts"]["count"] == 4
    assert rep["prompts"]["pass_rate"] == {"0%": 2, "partial": 1, "100%": 1}
    assert rep["prompts"]["mean_pass_rate"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)
    assert rep["malformed"] == {"count": 0, "lines": []}
    assert rep["excluded_other_contracts"] == 0


def test_prompt_identity_is_canonical_json(tmp_path: Path) -> None:
    a = row("q", 1.0)
    b = row("q", 0.0)
    b["responses_create_params"]["input"] = [{"content": "q", "role": "user"}]  # same prompt, keys reordered
    rep = summarize([write(tmp_path / "f.jsonl", [a, b])])
    assert rep["prompts"]["count"] == 1 and rep["prompts"]["pass_rate"]["partial"] == 1


def test_pools_across_files_with_one_contract(tmp_path: Path) -> None:
    f1 = write(tmp_path / "a.jsonl", [row("q1", 1.0)])
    f2 = write(tmp_path / "b.jsonl", [row("q1", 0.0)])
    rep = summarize([f1, f2])
    assert rep["scored"] == 2 and rep["prompts"]["pass_rate"]["partial"] == 1


def test_refuses_to_mix_contracts(tmp_path: Path) -> None:
    f1 = write(tmp_path / "a.jsonl", [row("q1", 1.0), row("q2", 1.0)])
    f2 = write(tmp_path / "b.jsonl", [row("q1", 0.0, contract=C2)])
    with pytest.raises(ContractMismatch) as err:
        summarize([f1, f2])
    msg = str(err.value)
    assert f"{C1} (2 row(s))" in msg and f"{C2} (1 row(s))" in msg
    assert err.value.reason == "contracts_mixed" and err.value.details["contracts"] == {C1: 2, C2: 1}
    res = CliRunner().invoke(main, ["summarize", str(f1), str(f2)])
    assert res.exit_code == 1 and "choose one with --contract ID" in res.output

    rep = summarize([f1, f2], contract=C2)
    assert rep["contract"] == C2 and rep["scored"] == 1 and rep["excluded_other_contracts"] == 2
    assert rep["accuracy"] == 0.0
    assert rep["contracts"] == {C1: 2, C2: 1}

    with pytest.raises(ContractMismatch, match="not found"):
        summarize([f1, f2], contract="sha256:nope")


def test_rows_without_contract_are_their_own_pool(tmp_path: Path) -> None:
    f = write(tmp_path / "a.jsonl", [row("q1", 1.0), row("q2", 1.0, contract=None)])
    with pytest.raises(ContractMismatch, match=r"\(none\) \(1 row\(s\)\)"):
        summarize([f])
    assert summarize([f], contract="(none)")["scored"] == 1


def test_only_unscored_rows_is_not_a_summary(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        summarize([write(tmp_path / "a.jsonl", [row("q1", 1.0, graded=False)])])
    assert err.value.reason == "no_scored_rows" and err.value.details["unscored"] == 1


def test_malformed_lines_are_counted_with_their_address(tmp_path: Path) -> None:
    f = write(tmp_path / "a.jsonl", [row("q1", 1.0)], extra_lines=("{not json", "", "[1, 2]"))
    rep = summarize([f])
    assert rep["scored"] == 1
    assert rep["malformed"]["count"] == 2
    assert rep["malformed"]["lines"][0].startswith(f"{f}:2: not valid JSON")
    assert rep["malformed"]["lines"][1] == f"{f}:4: a row must be a JSON object, got an array"


def test_nothing_readable_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"nothing could be read .*bad.jsonl:1"):
        summarize([f])
    with pytest.raises(InputError, match="no such file"):
        summarize([tmp_path / "missing.jsonl"])


# ---- CLI ----------------------------------------------------------------------------------------------


def test_cli_text(one_contract: Path) -> None:
    res = CliRunner().invoke(main, ["summarize", str(one_contract)])
    assert res.exit_code == 0, res.output
    assert "accuracy: 0.5000 (3/6 graded row(s))" in res.output
    assert "0%: 2, partial: 1, 100%: 1" in res.output
    assert "6 scored, 1 unscored" in res.output


def test_cli_json(one_contract: Path) -> None:
    res = CliRunner().invoke(main, ["summarize", str(one_contract), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["contract"] == C1 and doc["scored"] == 6


def test_cli_mixed_contracts_exit_1(tmp_path: Path) -> None:
    f = write(tmp_path / "a.jsonl", [row("q1", 1.0), row("q1", 0.0, contract=C2)])
    res = CliRunner().invoke(main, ["summarize", str(f)])
    assert res.exit_code == 1
    assert "refusing to pool rows graded under 2 different contracts" in res.output
    res = CliRunner().invoke(main, ["summarize", str(f), "--contract", C2, "--format", "json"])
    assert res.exit_code == 0 and json.loads(res.output)["contract"] == C2


def test_cli_malformed_lines_on_stderr(tmp_path: Path) -> None:
    f = write(tmp_path / "a.jsonl", [row("q1", 1.0)], extra_lines=("{bad",))
    res = CliRunner().invoke(main, ["summarize", str(f)])
    assert res.exit_code == 0
    assert f"{f}:2: not valid JSON" in res.stderr
    assert "1 malformed line(s)" in res.stdout


def test_cli_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["summarize", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_a_reward_that_is_not_one_is_malformed_not_pooled(tmp_path, cli):
    """NaN (Python writes it), Infinity (1e400) or a string as a scored row's reward: counted as malformed at
    its line, and the JSON report stays strict JSON (found by tests/hostile)."""
    sample = Path(__file__).resolve().parents[1] / "data" / "sample" / "rollouts.jsonl"
    rows = [json.loads(x) for x in sample.read_text().splitlines()[:3]]
    for r in rows:
        r["metadata"] = {"grading": {"contract": "sha256:" + "1" * 64, "status": "ok"}}
        r["reward"] = 1.0
    rows[1]["reward"] = float("nan")
    rows[2]["reward"] = "1"
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("summarize", p, "--format", "json")
    doc = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"{c} in the JSON report"))
    assert (doc["lines_read"], doc["scored"], doc["accuracy"]) == (1, 1, 1.0)
    assert doc["malformed"]["count"] == 2
    assert ":2: $.reward: nan is not a reward" in doc["malformed"]["lines"][0]
