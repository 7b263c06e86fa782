"""One verify request, as NeMo Gym 0.7.0's `mcqa` server answers it, under the served contract.

`Verifier.verify(doc)` takes the parsed body of `POST /verify` (the row's fields plus the `response`, as NeMo
Gym's agents send them) and returns (HTTP status, JSON document). Used by the HTTP app (app.py) and by the NeMo
Gym component (component.py), so both grade and refuse alike.

The response is NeMo Gym's: every request field echoed (but `_ng_rollout_id`, which NeMo Gym's request model
excludes), then `reward`, `expected_answer` (the gold, stripped and upper-cased), `extracted_answer`,
`mask_sample`, `failure_kind`, `failure_reason` (its base verify response's fields), plus this server's
`status` and `rule`. A row whose stamp differs from the served contract gets reward 0, `mask_sample: true`,
`failure_kind: "mcqa:contract_mismatch"` and a `failure_reason` naming the fields (on_mismatch "mask"), or
HTTP 422 with the same detail (on_mismatch "reject"); a row stamped with the served contract but edited after
prepare likewise, with `failure_kind: "mcqa:row_changed"` and status `row_changed` (contract.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..grader import DEFAULT_REGEX_TIMEOUT
from ..grader.letters import normalize_gold
from ..grader.request import grade_request
from ..runtimes import OPTION, request_field_problem
from .contract import MISMATCH, UNSTAMPED, ServedContract
from .metrics import INVALID_STATUSES, Counters

ON_MISMATCH = ("mask", "reject")
STATUS_CONTRACT_MISMATCH = "contract_mismatch"
STATUS_GRADER_ERROR = "grader_error"
GRADER_ERROR_KIND = "verifier_error"  # NeMo Gym's shared failure vocabulary
_DROPPED = "_ng_rollout_id"  # NeMo Gym's request model reads it and never echoes it


def field_error(loc: str, message: str, kind: str) -> dict[str, Any]:
    """A 422 body shaped like FastAPI's request validation errors (what NeMo Gym's clients already read)."""
    return {"detail": [{"loc": ["body", loc], "msg": message, "type": kind}]}


def field_problem(doc: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) for a row field whose type NeMo Gym's request model refuses (the one list:
    runtimes.REQUEST_FIELDS). Null or absent is fine."""
    bad = request_field_problem(doc)
    if bad is None:
        return None
    where, takes, value = bad
    return where, f"{takes} is required" if takes is OPTION else f"{takes} is required, got {_kind(value)}"


def has_custom_regex(doc: Mapping[str, Any]) -> bool:
    """Whether grading the request may run a pattern from the data (graded off the event loop)."""
    tm = doc.get("template_metadata")
    return type(tm) is dict and "output_regex" in tm


class Verifier:
    def __init__(
        self,
        served: ServedContract,
        *,
        on_mismatch: str = "mask",
        regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
        counters: Counters | None = None,
    ) -> None:
        if on_mismatch not in ON_MISMATCH:
            raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, got {on_mismatch!r}")
        self.served = served
        self.policy = served.policy
        self.on_mismatch = on_mismatch
        self.regex_timeout = regex_timeout
        self.counters = counters if counters is not None else Counters()

    def refuse(self, reason: str, status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.counters.add("requests")
        self.counters.add(f"refused.{reason}")
        return status, body

    def verify(self, doc: Any) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON document) for one parsed verify body. Never raises."""
        if type(doc) is not dict:
            return self.refuse(
                "not_an_object",
                422,
                field_error("", f"a verify request is a JSON object, got {_kind(doc)}", "dict_type"),
            )
        response = doc.get("response")
        if type(response) is not dict:
            what = "missing" if response is None else f"a {_kind(response)}, not an object"
            return self.refuse(
                "no_response",
                422,
                field_error(
                    "response", f"`response` (the Responses API response to grade) is {what}", "missing"
                ),
            )
        bad = field_problem(doc)
        if bad is not None:
            return self.refuse("bad_field", 422, field_error(bad[0], bad[1], "type_error"))
        c = self.counters
        c.add("requests")
        check = self.served.check(doc)
        if check.state == MISMATCH:
            c.add("mismatched")
            c.add(f"mismatch.{check.reason}")
            if self.on_mismatch == "reject":
                c.add("refused.contract_rejected")
                return 422, {"detail": check.detail(self.served.id)}
            c.add("masked")
            return 200, _answer(
                doc, 0.0, normalize_gold(doc.get("expected_answer")), None, check.status, None,
                mask=True, kind=check.kind, reason=check.failure_reason,
            )  # fmt: skip
        try:
            result, _ = grade_request(
                doc, self.policy, regex_timeout=self.regex_timeout, contract=self.served.id
            )
        except Exception as exc:  # noqa: BLE001 - a grader bug masks the sample, never kills the worker
            c.add("grader_errors")
            c.add("masked")
            return 200, _answer(
                doc, 0.0, normalize_gold(doc.get("expected_answer")), None, STATUS_GRADER_ERROR, None,
                mask=True, kind=GRADER_ERROR_KIND, reason=f"the grader failed on this row: {type(exc).__name__}: {exc}",
            )  # fmt: skip
        c.add("graded")
        c.add(f"status.{result.status}")
        if check.state == UNSTAMPED:
            c.add("unstamped")
        if result.reward == 1.0:
            c.add("rewarded")
        kind = reason = None
        if result.status in INVALID_STATUSES:
            kind, reason = f"mcqa:{result.status}", result.message
        return 200, _answer(
            doc, result.reward, result.expected_answer, result.extracted_answer, result.status, result.rule,
            mask=False, kind=kind, reason=reason,
        )  # fmt: skip


def _answer(
    doc: dict[str, Any],
    reward: float,
    gold: str,
    letter: str | None,
    status: str,
    rule: str | None,
    *,
    mask: bool,
    kind: str | None,
    reason: str | None,
) -> dict[str, Any]:
    out = dict(doc)
    out.pop(_DROPPED, None)
    out["reward"] = reward
    out["expected_answer"] = gold
    out["extracted_answer"] = letter
    out["mask_sample"] = mask
    out["failure_kind"] = kind
    out["failure_reason"] = reason
    out["status"] = status
    out["rule"] = rule
    return out


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )
