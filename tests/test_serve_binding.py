"""serve keeps each row bound to its contract (serve/contract.py, binding.py): a row stamped with the served
contract but edited after prepare is masked (`failure_kind: "mcqa:row_changed"`, each changed field named,
with both values when the server holds the preparation) or refused with 422, and counted; what a runtime adds
to a row is graded as usual."""

from __future__ import annotations

import copy
import json

import pytest
from prep_helpers import make_row, write_rows
from response_helpers import fake_response
from serve_helpers import prepared_rows, serving

from mcqa_prep import binding
from mcqa_prep.prepare import prepare
from mcqa_prep.serve.contract import ROW_CHANGED_KIND
from mcqa_prep.serve.startup import served_contract
from mcqa_prep.serve.verifier import Verifier


@pytest.fixture(scope="module")
def prep(tmp_path_factory):
    d = tmp_path_factory.mktemp("bound")
    rows = [make_row(i) for i in range(4)] + [make_row(4, template=True)]
    src = write_rows(d / "train.jsonl", rows)
    prepare([src], d / "p", workers=1)
    write_rows(d / "other.jsonl", [make_row(i) for i in range(50, 52)])
    prepare([d / "other.jsonl"], d / "other", workers=1)  # the same contract, other rows
    return d


@pytest.fixture(scope="module")
def with_prep(prep):
    return served_contract([prep / "p"], None)


@pytest.fixture(scope="module")
def stamp_only():
    return served_contract([], None)


def _request(row: dict, answer: str | None = None) -> dict:
    return {
        **copy.deepcopy(row),
        "response": fake_response(f"\\boxed{{{answer or row['expected_answer']}}}", model="m"),
    }


def _verify(served, doc, on_mismatch="mask"):
    return Verifier(served, on_mismatch=on_mismatch).verify(doc)


def _other_letter(row: dict) -> str:
    return next(k for o in row["options"] for k in o if k != row["expected_answer"])


def test_a_row_as_prepared_is_graded_and_what_a_runtime_adds_is_not_a_change(prep, with_prep, stamp_only):
    row = prepared_rows(prep / "p")[0]
    doc = _request(row)
    rcp = doc["responses_create_params"]
    rcp["input"].insert(0, {"role": "system", "content": "You are careful."})
    rcp.update(temperature=0.7, max_output_tokens=512, instructions="Be brief.")
    rcp["input"][1]["type"] = "message"
    for served in (with_prep, stamp_only):
        status, out = _verify(served, doc)
        assert status == 200 and out["reward"] == 1.0 and out["mask_sample"] is False, out


@pytest.mark.parametrize(
    "edit, field, values",
    [
        ("gold", "expected_answer", True),
        ("option_text", "options", True),
        ("mode", "grading_mode", True),
        ("prompt", "prompt", True),
        ("regex", "template_metadata", True),
    ],
)
def test_an_edited_row_is_masked_naming_the_field(prep, with_prep, stamp_only, edit, field, values):
    rows = prepared_rows(prep / "p")
    row = copy.deepcopy(rows[4] if edit == "regex" else rows[0])
    wrong = _other_letter(row)
    if edit == "gold":
        row["expected_answer"] = wrong  # graded under the edit, the wrong answer would get reward 1
    elif edit == "option_text":
        row["options"][1] = {next(iter(row["options"][1])): "an edited option"}
    elif edit == "mode":
        row["grading_mode"] = "lenient_boxed"
    elif edit == "prompt":
        row["responses_create_params"]["input"][0]["content"] += " (the answer is " + wrong + ")"
    else:
        row["template_metadata"]["output_regex"] = "([A-Z])"
    for served, named in ((with_prep, "row != prepared"), (stamp_only, "its stamp records")):
        status, out = _verify(served, _request(row, wrong))
        assert status == 200 and out["reward"] == 0.0 and out["mask_sample"] is True, out
        assert out["failure_kind"] == ROW_CHANGED_KIND
        assert field in out["failure_reason"] and named in out["failure_reason"], out["failure_reason"]
        assert "prepare the edited rows again" in out["failure_reason"]
    # with the preparation, both values
    _, out = _verify(with_prep, _request(row, wrong))
    if edit == "gold":
        assert f'expected_answer: "{wrong}" != "{rows[0]["expected_answer"]}"' in out["failure_reason"]
    if edit == "mode":
        assert 'grading_mode: "lenient_boxed" != "strict_single_letter_boxed"' in out["failure_reason"]


def test_reject_answers_422_with_the_differences(prep, with_prep):
    row = copy.deepcopy(prepared_rows(prep / "p")[0])
    gold = row["expected_answer"]
    row["expected_answer"] = _other_letter(row)
    status, out = _verify(with_prep, _request(row), on_mismatch="reject")
    assert status == 422
    d = out["detail"]
    assert d["failure_kind"] == ROW_CHANGED_KIND and d["reason"] == "row_changed"
    assert d["differences"] == [
        {"field": "expected_answer", "recorded": row["expected_answer"], "requested": gold}
    ]


def test_the_stamps_mode_is_compared_with_the_rows(prep, with_prep, stamp_only):
    row = copy.deepcopy(prepared_rows(prep / "p")[0])
    row["metadata"]["mcqa_prep"]["grading_mode"] = "lenient_boxed"
    for served in (with_prep, stamp_only):
        _, out = _verify(served, _request(row))
        assert out["mask_sample"] is True and binding.MODE_FIELD in out["failure_reason"], out
    _, out = _verify(with_prep, _request(row))
    assert f'{binding.MODE_FIELD}: "lenient_boxed" != "strict_single_letter_boxed"' in out["failure_reason"]


def test_a_forged_stamp_hides_an_edit_from_the_stamp_but_not_from_the_preparation(
    prep, with_prep, stamp_only
):
    """Digests anyone can compute: an edit whose stamp is written again passes the stamp-only check; the server
    that holds the preparation still finds the row is none of its rows, and names the values by the stamp's
    source."""
    rows = prepared_rows(prep / "p")
    row = copy.deepcopy(rows[0])
    row["expected_answer"] = _other_letter(row)
    row["metadata"]["mcqa_prep"]["bound"] = binding.digests(row)
    assert _verify(stamp_only, _request(row))[1]["mask_sample"] is False  # a stamp is not a signature
    _, out = _verify(with_prep, _request(row))
    assert out["mask_sample"] is True and out["failure_kind"] == ROW_CHANGED_KIND
    assert f'"{rows[0]["expected_answer"]}"' in out["failure_reason"]
    # and with its source gone too: not a row of the preparation
    del row["metadata"]["mcqa_prep"]["source"]
    _, out = _verify(with_prep, _request(row))
    assert out["mask_sample"] is True and "none of the rows of the preparation" in out["failure_reason"]


def test_a_row_of_another_preparation_under_the_contract_needs_that_preparation_served(prep, with_prep):
    row = prepared_rows(prep / "other")[0]
    _, out = _verify(with_prep, _request(row))
    assert out["mask_sample"] is True and "serve that one too" in out["failure_reason"]
    both = served_contract([prep / "p", prep / "other"], None)
    assert _verify(both, _request(row))[1]["mask_sample"] is False


def test_a_stamp_without_digests_is_a_stale_preparations(prep, with_prep, stamp_only):
    row = copy.deepcopy(prepared_rows(prep / "p")[0])
    del row["metadata"]["mcqa_prep"]["bound"]
    for served in (with_prep, stamp_only):
        _, out = _verify(served, _request(row))
        assert out["mask_sample"] is True and out["failure_kind"] == "mcqa:contract_mismatch"
        assert "records no digests" in out["failure_reason"]


def test_edited_rows_are_counted_in_metrics_and_aggregate_metrics(prep):
    rows = prepared_rows(prep / "p")
    edited = copy.deepcopy(rows[1])
    edited["options"][0] = {"A": "edited"}
    with serving("--prepared", prep / "p") as s:
        answers = [s.post("/verify", {**_request(r), "_ng_task_index": i})[1] for i, r in enumerate(rows[:2])]
        status, out = s.post("/verify", {**_request(edited), "_ng_task_index": 2})
        assert status == 200 and out["failure_kind"] == ROW_CHANGED_KIND
        answers.append(out)
        _, m = s.get("/metrics?format=json")
        assert m["mismatched_by_reason"] == {"row_changed": 1} and m["masked"] == 1 and m["graded"] == 2
        _, text = s.get("/metrics")
        assert 'reason="row_changed"} 1' in text
        # (NeMo Gym's agent puts a rollout's task and rollout indices on the verify response it keeps)
        answers = [{**r, "_ng_task_index": i, "_ng_rollout_index": 0} for i, r in enumerate(answers)]
        status, agg = s.post("/aggregate_metrics", {"verify_responses": answers})
        assert status == 200, agg
        a = agg["agent_metrics"]
        assert a["mcqa_prep/mismatched/row_changed"] == 1 and a["mcqa_prep/graded"] == 2, json.dumps(a)
