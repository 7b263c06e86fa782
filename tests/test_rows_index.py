"""The `--rows` join index (rescore, passrates) accounts for every dataset row it read: malformed lines with
their file:line, rows without a prompt or without options, each counted by reason with the first places;
an index left empty by rows that were given fails the run, naming why."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from passrate_helpers import rollout
from prep_helpers import make_row, write_rows

from mcqa_prep.rescore.index import RowIndex


def _mixed_rows(tmp: Path) -> Path:
    """Three usable dataset rows and one row of each kind the index leaves out."""
    no_prompt = {k: v for k, v in make_row(4).items() if k != "responses_create_params"}
    no_options = {k: v for k, v in make_row(5).items() if k != "options"}
    return write_rows(
        tmp / "rows.jsonl",
        ["garbage", make_row(0), "[1]", make_row(1), no_prompt, make_row(2), no_options, '{"cut": '],
    )


def _rollouts(tmp: Path) -> Path:
    return write_rows(tmp / "ro.jsonl", [rollout(i, True, "m1", options=False) for i in range(3)])


EXPECTED_ACCOUNT = {
    "dataset_rows_read": 8,
    "dataset_prompts": 3,
    "dataset_prompt_duplicates": 0,
    "dataset_prompt_conflicts": {"count": 0, "examples": []},
    "dataset_rows_left_out": {
        "count": 5,
        "by_reason": {
            "malformed": {"count": 3, "examples": ["rows.jsonl:1", "rows.jsonl:3", "rows.jsonl:8"]},
            "no_prompt": {"count": 1, "examples": ["rows.jsonl:5"]},
            "no_options": {"count": 1, "examples": ["rows.jsonl:7"]},
        },
    },
}


def _short(account: dict) -> dict:
    """The account with each example cut to its file name and line (the reader's message dropped)."""
    out = json.loads(json.dumps(account))
    for b in out["dataset_rows_left_out"]["by_reason"].values():
        b["examples"] = [":".join(Path(e).name.split(":")[:2]) for e in b["examples"]]
    return out


def test_index_counts_every_row_it_left_out_by_reason(tmp_path):
    idx = RowIndex.build([_mixed_rows(tmp_path)])
    assert len(idx.rows) == 3
    assert _short(idx.summary()) == EXPECTED_ACCOUNT
    malformed = idx.summary()["dataset_rows_left_out"]["by_reason"]["malformed"]["examples"]
    assert "not valid JSON" in malformed[0] and "rows.jsonl:1" in malformed[0]


def test_rescore_reports_the_left_out_rows_in_json_and_text(cli, tmp_path):
    rows, ro = _mixed_rows(tmp_path), _rollouts(tmp_path)
    res = cli("rescore", ro, "--rows", rows, "-o", tmp_path / "o.jsonl", "--format", "json")
    assert res.exit_code == 0, res.output
    join = json.loads(res.stdout)["join"]
    assert join["joined"] == 3
    assert _short({k: v for k, v in join.items() if k.startswith("dataset_")}) == EXPECTED_ACCOUNT

    res = cli("rescore", ro, "--rows", rows, "-o", tmp_path / "o2.jsonl")
    assert res.exit_code == 0, res.output
    assert "dataset rows: 8 read, 3 prompts indexed, 5 left out" in res.stdout
    assert "(malformed): 3 (e.g. " in res.stdout and "rows.jsonl:8: not valid JSON" in res.stdout
    assert "(no_prompt): 1" in res.stdout and "(no_options): 1" in res.stdout


def _pq_no_options(tmp: Path) -> Path:
    rows = [
        {k: v for k, v in make_row(i).items() if k in ("responses_create_params", "uuid")} for i in range(3)
    ]
    path = tmp / "no_options.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("kind", ["malformed", "no_options", "empty"])
def test_rescore_with_nothing_indexed_fails_naming_why(cli, tmp_path, kind):
    rows = {
        "malformed": lambda: write_rows(tmp_path / "bad.jsonl", ["garbage", "[1]"]),
        "no_options": lambda: _pq_no_options(tmp_path),
        "empty": lambda: write_rows(tmp_path / "empty.jsonl", []),
    }[kind]()
    ro = _rollouts(tmp_path)
    res = cli("rescore", ro, "--rows", rows, "-o", tmp_path / "o.jsonl", "--format", "json")
    assert res.exit_code == 1
    err = json.loads(res.stdout)["error"]
    assert err["reason"] == "no_dataset_rows" and err["hint"]
    assert not (tmp_path / "o.jsonl").exists()
    if kind == "empty":
        assert "hold no rows" in err["message"] and err["dataset_rows_read"] == 0
    else:
        assert kind in err["message"] and f"{rows.name}:1" in err["message"]
        assert err["dataset_rows_left_out"]["by_reason"][kind]["count"] == err["dataset_rows_read"]
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("Error: ")


def test_passrates_reports_the_left_out_rows_and_fails_on_an_empty_index(cli, tmp_path):
    rows, ro = _mixed_rows(tmp_path), _rollouts(tmp_path)
    out = tmp_path / "t.jsonl"
    res = cli("passrates", ro, "--rescore", "--rows", rows, "-o", out, "--format", "json")
    assert res.exit_code == 0, res.output
    join = json.loads(res.stdout)["join"]
    assert _short({k: v for k, v in join.items() if k.startswith("dataset_")}) == EXPECTED_ACCOUNT

    res = cli("passrates", ro, "--rescore", "--rows", rows, "-o", tmp_path / "t2.jsonl")
    assert res.exit_code == 0, res.output
    assert "dataset rows: 8 read, 3 prompts indexed, 5 left out" in res.stdout
    assert "rows.jsonl:1: not valid JSON" in res.stdout

    bad = write_rows(tmp_path / "bad.jsonl", ["garbage"])
    res = cli("passrates", ro, "--rescore", "--rows", bad, "-o", tmp_path / "t3.jsonl", "--format", "json")
    assert res.exit_code == 1
    assert json.loads(res.stdout)["error"]["reason"] == "no_dataset_rows"
    assert not (tmp_path / "t3.jsonl").exists()


def _two_golds(tmp: Path) -> Path:
    """Question 0 twice with different golds (rows 1 and 3), question 1 twice with the same grading fields
    but another uuid (rows 2 and 4), question 2 twice with golds that are one to the grader ("C", " c")."""
    q0, q1, q2 = make_row(0), make_row(1), make_row(2)
    other_gold = {**q0, "uuid": "row-dup", "expected_answer": "D" if q0["expected_answer"] != "D" else "A"}
    same = {**q1, "uuid": "row-same"}
    folded = {**q2, "uuid": "row-folded", "expected_answer": " " + q2["expected_answer"].lower()}
    return write_rows(tmp / "rows.jsonl", [q0, q1, other_gold, same, q2, folded])


def test_a_prompt_with_two_golds_is_not_joined(cli, tmp_path):
    """Its rollouts are invalid_row naming both dataset rows (counted as ambiguous_join, never a change);
    rows that agree on every graded field join as before, and a rollout carrying its own gold is graded."""
    rows = _two_golds(tmp_path)
    ro = [rollout(i, True, "m1", options=False) for i in range(3)]
    own = rollout(0, True, "m1", options=False)
    own["expected_answer"] = make_row(0)["expected_answer"]  # carries its gold: nothing to choose
    write_rows(tmp_path / "ro.jsonl", [*ro, own])
    res = cli(
        "rescore", tmp_path / "ro.jsonl", "--rows", rows, "-o", tmp_path / "o.jsonl", "--format", "json"
    )
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["invalid_rows"]["count"] == 1 and doc["invalid_rows"]["by_kind"] == {"ambiguous_join": 1}
    assert doc["join"]["dataset_prompt_conflicts"] == {
        "count": 1,
        "examples": ["rows.jsonl:1 vs rows.jsonl:3 (expected_answer)"],
    }
    assert doc["join"]["dataset_prompt_duplicates"] == 3 and doc["graded"] == 3
    assert doc["agreement"]["1->0"]["count"] == 0
    out = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    g = out[0]["metadata"]["grading"]
    assert g["status"] == "invalid_row" and g["changed"] is False and g["previous_reward"] == 1.0
    assert (
        "dataset rows rows.jsonl:1 and rows.jsonl:3 have this prompt with different expected_answer"
        in g["message"]
    )
    assert [o["reward"] for o in out[1:]] == [1.0, 1.0, 1.0]
    text = cli("rescore", tmp_path / "ro.jsonl", "--rows", rows, "-o", tmp_path / "o2.jsonl")
    assert "prompts whose dataset rows disagree (two golds, ...): 1" in text.stdout
