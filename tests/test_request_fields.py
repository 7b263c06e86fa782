"""What NeMo Gym 0.7.0's request model refuses (runtimes.py): `prepare` (the manifest's runtimes record) and
`serve` (a 422, as NeMo Gym's server answers) read one list, and NeMo Gym's own model (its wheel, `make
bench-deps`; skipped when absent) refuses the same rows."""

from __future__ import annotations

import pytest
from prep_helpers import make_row
from response_helpers import fake_response

from mcqa_prep.policy import GradingPolicy
from mcqa_prep.runtimes import row_problem
from mcqa_prep.serve.contract import ServedContract
from mcqa_prep.serve.verifier import Verifier

# (field, a value NeMo Gym's request model refuses there)
REFUSED = [
    ("uuid", 7),
    ("expected_answer", 1),
    ("grading_mode", 3),
    ("template_metadata", ["x"]),
    ("metadata", "x"),
    ("options", "x"),
    ("options", [{"A": 5}, {"B": "b"}]),
    ("responses_create_params", ["x"]),
]


def _nemo_gym_refuses(row: dict) -> bool | None:
    """Whether NeMo Gym 0.7.0's MCQARunRequest refuses the row (None when its wheel is not installed)."""
    try:
        from nemo_gym_models import load_models

        models = load_models()
    except pytest.skip.Exception:
        return None
    try:
        models.run_request.model_validate(row)
    except Exception:  # noqa: BLE001 - pydantic's ValidationError, from NeMo Gym's own pydantic
        return True
    return False


@pytest.mark.parametrize(("field", "value"), REFUSED, ids=[f"{f}={v!r}" for f, v in REFUSED])
def test_serve_and_prepare_refuse_what_nemo_gym_refuses(field, value):
    row = {**make_row(0), field: value}
    assert _nemo_gym_refuses(row) in (True, None)
    status, body = Verifier(ServedContract(GradingPolicy())).verify(
        {**row, "response": fake_response("\\boxed{A}", model="m")}
    )
    assert status == 422 and body["detail"][0]["loc"][1].split("[")[0] == field, body
    if field not in ("options", "responses_create_params"):  # (a prepared row's types are the schema's)
        assert row_problem(row) is not None and field in row_problem(row)


def test_a_row_nemo_gym_takes_is_refused_by_neither():
    row = make_row(0)
    assert _nemo_gym_refuses(row) in (False, None)
    status, _ = Verifier(ServedContract(GradingPolicy())).verify(
        {**row, "response": fake_response("\\boxed{A}", model="m")}
    )
    assert status == 200 and row_problem(row) is None
