"""One verify request, as NeMo Gym 0.7.0's `mcqa` server answers it, under the served contract.

`Verifier.verify(doc)` takes the parsed body of `POST /verify` (the row's fields plus the `response`, as NeMo
Gym's agents send them) and returns (HTTP status, JSON document). Used by the HTTP app (app.py), in `serve`
and in the NeMo Gym component alike.

The request is first held to NeMo Gym's request model (request_model.py: 422 where the stock server answers
422; `lenient` accepts more). The response has the stock server's eight fields, in its order:
`responses_create_params` and `response` (as sent), `reward`, `mask_sample`, `failure_kind`,
`failure_reason`, `expected_answer` (the gold, stripped and upper-cased), `extracted_answer`; and one more,
`mcqa_prep`, this server's record of the grading:

    {"status": the grader's typed status, "rule": the rule that decided,
     "contract": {"state": "match" | "unstamped" | "mismatch", "id": the served contract,
                  "row": the row's stamped contract or null, "reason": why a mismatch, or null},
     "mask_reason": why the sample is masked ("contract_mismatch", "row_changed", "grader_error",
                     "grading_timeout"), or null}

A row stamped with another contract gets reward 0, `mask_sample: true`, `failure_kind:
"mcqa:contract_mismatch"` and a `failure_reason` naming the fields (on_mismatch "mask"), or HTTP 422 with the
same detail (on_mismatch "reject"); a row stamped with the served contract but edited after prepare
likewise, with `failure_kind: "mcqa:row_changed"` and status `row_changed` (contract.py). The row's other
fields are not echoed (NeMo Gym's response model drops
them too): the rollout files NeMo Gym writes stay the stock server's, plus `mcqa_prep`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..grader import DEFAULT_REGEX_TIMEOUT
from ..grader.letters import normalize_gold
from ..grader.request import grade_request
from .contract import MATCH, MISMATCH, RowCheck, ServedContract
from .metrics import INVALID_STATUSES, Counters
from .request_model import verify_problem

ON_MISMATCH = ("mask", "reject")
RECORD = "mcqa_prep"
STATUS_CONTRACT_MISMATCH = "contract_mismatch"
STATUS_GRADER_ERROR = "grader_error"
STATUS_GRADING_TIMEOUT = "grading_timeout"
GRADER_ERROR_KIND = "verifier_error"  # NeMo Gym's shared failure vocabulary
TIMEOUT_KIND = "mcqa:grading_timeout"


def field_error(loc: str, message: str, kind: str) -> dict[str, Any]:
    """A 422 body shaped like FastAPI's request validation errors (what NeMo Gym's clients already read)."""
    path: list[Any] = ["body"]
    for part in loc.replace("]", "").replace("[", ".").split(".") if loc else ():
        path.append(int(part) if part.isdigit() else part)
    return {"detail": [{"type": kind, "loc": path, "msg": message}]}


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
        lenient: bool = False,
    ) -> None:
        if on_mismatch not in ON_MISMATCH:
            raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, got {on_mismatch!r}")
        self.served = served
        self.policy = served.policy
        self.on_mismatch = on_mismatch
        self.regex_timeout = regex_timeout
        self.lenient = lenient
        self.counters = counters if counters is not None else Counters()

    def refuse(self, reason: str, status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.counters.add("requests")
        self.counters.add(f"refused.{reason}")
        return status, body

    def check(self, doc: Any) -> tuple[int, dict[str, Any]] | None:
        """The 422 for a body NeMo Gym's request model refuses (counted), or None."""
        bad = verify_problem(doc, lenient=self.lenient)
        if bad is None:
            return None
        loc, message, kind = bad
        reason = (
            "not_an_object"
            if not loc
            else "no_response"
            if type(doc.get("response")) is not dict
            else "bad_field"
        )
        return self.refuse(reason, 422, field_error(loc, message, kind))

    def verify(self, doc: Any) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON document) for one parsed verify body, counted. Never raises."""
        refused = self.check(doc)
        if refused is not None:
            return refused
        status, out, counts = self.grade(doc)
        self.count(counts)
        return status, out

    def count(self, keys: tuple[str, ...]) -> None:
        """Add a graded request's counts (on the worker's loop thread: the counters' only writer)."""
        add = self.counters.add
        add("requests")
        for k in keys:
            add(k)

    def grade(self, doc: dict[str, Any]) -> tuple[int, dict[str, Any], tuple[str, ...]]:
        """Grade a body that passed `check`: (status, document, the counter keys to add). Counts nothing
        itself, so it can run in a thread (the app runs long gradings off its loop)."""
        check = self.served.check(doc)
        if check.state == MISMATCH:
            counts: tuple[str, ...] = ("mismatched", f"mismatch.{check.reason}")
            if self.on_mismatch == "reject":
                return 422, {"detail": check.detail(self.served.id)}, (*counts, "refused.contract_rejected")
            out = self.masked(doc, check, check.status, check.kind, check.failure_reason)
            return 200, out, (*counts, "masked")
        try:
            result, _ = grade_request(
                doc, self.policy, regex_timeout=self.regex_timeout, contract=self.served.id
            )
        except Exception as exc:  # noqa: BLE001 - a grader bug masks the sample, never kills the worker
            why = f"the grader failed on this row: {type(exc).__name__}: {exc}"
            out = self.masked(doc, check, STATUS_GRADER_ERROR, GRADER_ERROR_KIND, why)
            return 200, out, ("grader_errors", "masked")
        counts = ("graded", f"status.{result.status}")
        if check.state == "unstamped":
            counts += ("unstamped",)
        if result.reward == 1.0:
            counts += ("rewarded",)
        kind = reason = None
        if result.status in INVALID_STATUSES:
            kind, reason = f"mcqa:{result.status}", result.message
        record = self.record(check, result.status, result.rule, None)
        out = answer(
            doc, result.reward, result.expected_answer, result.extracted_answer, False, kind, reason, record
        )
        return 200, out, counts

    def timed_out(self, doc: dict[str, Any], seconds: float) -> tuple[int, dict[str, Any]]:
        """The answer (counted) for a request whose grading did not finish within the server's bound: masked,
        not measured."""
        self.count(("grading_timeouts", "masked"))
        why = f"grading did not finish within {seconds:g} s (the server's per-request bound); not measured"
        return 200, self.masked(doc, self.served.check(doc), STATUS_GRADING_TIMEOUT, TIMEOUT_KIND, why)

    def masked(
        self, doc: dict[str, Any], check: RowCheck, status: str, kind: str, why: str | None
    ) -> dict[str, Any]:
        record = self.record(check, status, None, status)
        return answer(doc, 0.0, normalize_gold(doc.get("expected_answer")), None, True, kind, why, record)

    def record(self, check: RowCheck, status: str, rule: str | None, mask: str | None) -> dict[str, Any]:
        return {
            "status": status,
            "rule": rule,
            "contract": {
                "state": check.state,
                "id": self.served.id,
                "row": self.served.id if check.state == MATCH else check.row_contract,
                "reason": check.reason,
            },
            "mask_reason": mask,
        }


def answer(
    doc: Mapping[str, Any],
    reward: float,
    gold: str,
    letter: str | None,
    mask: bool,
    kind: str | None,
    reason: str | None,
    record: dict[str, Any],
) -> dict[str, Any]:
    """The verify response: NeMo Gym's eight fields in its order, then this server's record."""
    return {
        "responses_create_params": doc.get("responses_create_params"),
        "response": doc.get("response"),
        "reward": reward,
        "mask_sample": mask,
        "failure_kind": kind,
        "failure_reason": reason,
        "expected_answer": gold,
        "extracted_answer": letter,
        RECORD: record,
    }
