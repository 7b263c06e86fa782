"""rescore and passrates count a row edited after prepare apart (binding.py): an `invalid_row` of kind
`row_changed`, never in a mean reward, never a reward change, never evidence of a pass. Told by its own stamp,
or, joined with a prepared dataset row (`--rows PREPARED`), by that row's fields (named with both values)."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import read_jsonl, rescore_request, write_jsonl
from prep_helpers import make_row, write_rows
from response_helpers import fake_response
from serve_helpers import prepared_rows

from mcqa_prep.passrates.measure import measure
from mcqa_prep.prepare import prepare
from mcqa_prep.rescore.run import rescore


@pytest.fixture(scope="module")
def prep(tmp_path_factory):
    d = tmp_path_factory.mktemp("rb")
    prepare([write_rows(d / "train.jsonl", [make_row(i) for i in range(6)])], d / "p", workers=1)
    return d / "p"


def _rollout(row: dict, answer: str, model: str = "m") -> dict:
    return {
        **copy.deepcopy(row),
        "response": fake_response(f"\\boxed{{{answer}}}", model=model),
        "reward": 1.0,
    }


def _other(row: dict) -> str:
    return next(k for o in row["options"] for k in o if k != row["expected_answer"])


def test_rescore_counts_a_row_edited_after_prepare_apart(prep, tmp_path):
    rows = prepared_rows(prep)
    rollouts = [_rollout(r, r["expected_answer"]) for r in rows]
    edited = rollouts[2]
    edited["expected_answer"] = _other(edited)  # the answer below would get reward 1 under the edit
    edited["response"] = fake_response(f"\\boxed{{{edited['expected_answer']}}}", model="m")
    src = write_jsonl(tmp_path / "rollouts.jsonl", rollouts)
    report = rescore(rescore_request(src, tmp_path / "out.jsonl")).to_dict()
    assert report["invalid_rows"]["by_kind"] == {"row_changed": 1}
    assert report["graded"] == 5 and report["mean_reward"] == 1.0
    assert report["agreement"]["1->0"]["count"] == 0  # not a reward change
    out = read_jsonl(tmp_path / "out.jsonl")[2]["metadata"]["grading"]
    assert out["status"] == "invalid_row" and "row edited after prepare" in out["message"]
    assert "expected_answer" in out["message"]


def test_a_rollout_joined_with_a_prepared_row_is_held_to_its_fields(prep, tmp_path):
    """NeMo Gym rollouts carry no stamp; joined with the preparation (--rows PREPARED), a rollout whose own gold
    differs from the prepared row's is a changed row, named with both values."""
    rows = prepared_rows(prep)
    rollouts = []
    for r in rows:
        ro = {
            "responses_create_params": r["responses_create_params"],
            "expected_answer": r["expected_answer"],
        }
        ro["response"] = fake_response(f"\\boxed{{{r['expected_answer']}}}", model="m")
        rollouts.append(ro)
    gold = rows[1]["expected_answer"]
    rollouts[1]["expected_answer"] = _other(rows[1])
    src = write_jsonl(tmp_path / "rollouts.jsonl", rollouts)
    report = rescore(rescore_request(src, tmp_path / "out.jsonl", rows=[prep])).to_dict()
    assert report["invalid_rows"]["by_kind"] == {"row_changed": 1} and report["graded"] == 5
    message = read_jsonl(tmp_path / "out.jsonl")[1]["metadata"]["grading"]["message"]
    assert f'expected_answer: "{rollouts[1]["expected_answer"]}" != "{gold}"' in message, message
    # the same rollouts joined with the plain input rows: their own fields win, as ever
    plain = rescore(rescore_request(src, tmp_path / "plain.jsonl", rows=[prep.parent / "train.jsonl"]))
    assert plain.to_dict()["invalid_rows"]["by_kind"] == {}


def test_passrates_never_pools_a_changed_row(prep, tmp_path):
    rows = prepared_rows(prep)
    rollouts = [_rollout(r, r["expected_answer"]) for r in rows for _ in range(2)]
    for ro in rollouts[:2]:  # both rollouts of the first question: an edited gold, a "correct" answer
        ro["expected_answer"] = _other(ro)
        ro["response"] = fake_response(f"\\boxed{{{ro['expected_answer']}}}", model="m")
    src = write_jsonl(tmp_path / "rollouts.jsonl", rollouts)
    from mcqa_prep.errors import InputError

    with pytest.raises(InputError) as refused:
        measure([src], tmp_path / "t.jsonl", rescore=True)
    assert "row_changed: 2" in str(refused.value)
    report = measure([src], tmp_path / "t.jsonl", rescore=True, on_invalid="reject").to_dict()
    assert report["invalid"]["by_kind"] == {"row_changed": 2}
    entries = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()[1:]]
    assert len(entries) == 5  # the edited question has no entry: nothing of it was pooled
    # rescored first, then measured as graded: the same
    rescore(rescore_request(src, tmp_path / "rescored.jsonl"))
    report = measure([tmp_path / "rescored.jsonl"], tmp_path / "t2.jsonl", on_invalid="reject").to_dict()
    assert report["invalid"]["count"] == 2


def test_passrates_reads_a_graded_row_edited_afterwards_as_changed(prep, tmp_path):
    rows = prepared_rows(prep)
    rescore(rescore_request(write_jsonl(tmp_path / "r.jsonl", [_rollout(r, r["expected_answer"]) for r in rows]),
                            tmp_path / "rescored.jsonl"))  # fmt: skip
    graded = read_jsonl(tmp_path / "rescored.jsonl")
    graded[0]["options"][0] = {"A": "edited after rescoring"}
    src = write_jsonl(tmp_path / "edited.jsonl", graded)
    report = measure([src], tmp_path / "t.jsonl", on_invalid="reject").to_dict()
    assert report["invalid"]["by_kind"] == {"row_changed": 1}
