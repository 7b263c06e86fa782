"""Grade one verify request (a row plus its `response`) under a grading policy: selection, then the mode.

The rescore workflow calls `grade_request` for every row, so per-policy work (contract id, the static
part of the provenance) is done once per policy object and reused. Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Protocol

from ..records import STATUS_INVALID_ROW, STATUS_NO_RESPONSE, GradeResult
from . import DEFAULT_REGEX_TIMEOUT, GRADER_VERSION, effective_mode, grade_text
from .letters import normalize_gold
from .selection import (
    BOUNDARY_NOT_APPLIED,
    CLOSE_MARKER,
    GATE_TRUNCATED,
    SELECTOR_VERSION,
    Selection,
    SelectionPolicy,
    collect_output,
    detect_prompt_thinking,
    select,
)


class RequestPolicy(SelectionPolicy, Protocol):
    """What grading a request reads of a policy (policy.GradingPolicy has it): the grader never imports the
    policy module (schemas, jsonschema), which depends on the grader's versions."""

    @property
    def grading_mode_default(self) -> str: ...
    @property
    def grading_mode_override(self) -> str | None: ...

    def contract_id(self) -> str: ...
    def __hash__(self) -> int: ...  # (the provenance of a policy is cached per policy object)


RULE_SELECTION = "final_answer_selection"
RULE_GATE = "truncation_gate"


@functools.lru_cache(maxsize=64)
def _static(policy: RequestPolicy, contract: str | None) -> tuple[str, dict[str, Any]]:
    """(contract id, the part of the provenance that is the same for every row) of one policy."""
    cid = contract if contract is not None else policy.contract_id()
    comp = policy.component
    static = {
        "contract": cid,
        "selector_version": SELECTOR_VERSION,
        "final_answer_only": bool(policy.final_answer_only),
        "reasoning_mode": policy.reasoning_mode,
        "component": {
            "objective": comp.objective,
            "scope": policy.effective_scope,
            "require_response": comp.require_response,
            "gate": "truncated" if policy.zero_truncated else None,
        },
    }
    return cid, static


# (policy, contract, its static provenance) of the last call: a run grades every row under one policy, and
# the lru_cache lookup hashes the policy (every field, the component's too) on each call. One tuple, replaced
# whole, so a thread reads a consistent entry; a policy is frozen, so the same object has the same entry.
_LAST: tuple[Any, Any, dict[str, Any]] = (None, None, {})


def provenance(
    selection: Selection | None, static: Mapping[str, Any], boundary: str | None = None
) -> dict[str, Any]:
    """The metadata.grading provenance of one row: counts and verdicts, never the response text."""
    prov = dict(static)
    prov["component"] = dict(static["component"])
    if selection is None:
        prov.update(
            boundary=boundary,
            boundary_source=None,
            gate=None,
            prompt_thinking=None,
            prompt_thinking_source=None,
            completion_status=None,
            response_present=False,
            raw_chars=0,
            thinking_chars=0,
            response_chars=None,
            closing_markers=0,
        )
        return prov
    p = selection.parts
    prov.update(
        boundary=selection.boundary,
        boundary_source=selection.boundary_source,
        gate=selection.gate,
        prompt_thinking=p.prompt_thinking,
        prompt_thinking_source=p.prompt_thinking_source,
        completion_status=p.completion_status,
        response_present=p.response_present,
        raw_chars=len(p.raw_text),
        thinking_chars=len(p.thinking),
        response_chars=None if p.response is None else len(p.response),
        closing_markers=p.closing_markers,
    )
    return prov


def grade_request(
    request: Any,
    policy: RequestPolicy,
    *,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    contract: str | None = None,
) -> tuple[GradeResult, dict[str, Any]]:
    """Select the graded text of `request` under `policy`, grade it, and return (result, provenance).

    A selection status or gate replaces the grader's verdict with reward 0 (a gate is not a grader
    failure). Never raises on bad data: a request that is not an object is `invalid_row`, one without a
    response object is `no_response`. `contract` overrides the policy's contract id (else computed once
    per policy object).
    """
    global _LAST
    last = _LAST
    if last[0] is policy and last[1] is contract:  # the run's one policy: no hash of it per row
        static = last[2]
    else:
        _, static = _static(policy, contract)
        _LAST = (policy, contract, static)
    if not (type(request) is dict or isinstance(request, Mapping)):
        mode = effective_mode(None, policy.grading_mode_override, policy.grading_mode_default)
        result = GradeResult(
            0.0,
            None,
            "",
            STATUS_INVALID_ROW,
            mode,
            message=f"a verify request must be a JSON object, got {type(request).__name__}",
            grader_version=GRADER_VERSION,
        )
        return result, provenance(None, static, boundary=STATUS_INVALID_ROW)

    response = request.get("response")
    if not (type(response) is dict or isinstance(response, Mapping)):
        sel = select(request, policy)
        what = (
            "no `response`" if response is None else f"`response` is {type(response).__name__}, not an object"
        )
        return _verdict(request, policy, STATUS_NO_RESPONSE, None, what), provenance(sel, static)

    if not policy.final_answer_only:
        # Parity path, kept lean (it runs for every row of a rescore): the same values select() and
        # provenance() give, without building the parts records.
        raw, prov = _parity_provenance(request, response, policy, static)
        gate = prov["gate"]
        if gate is not None:
            return _verdict(request, policy, gate, RULE_GATE), prov
        text: str | None = raw.strip()
    else:
        sel = select(request, policy)
        prov = provenance(sel, static)
        if sel.gate is not None:
            return _verdict(request, policy, sel.gate, RULE_GATE), prov
        if sel.status is not None:
            return _verdict(request, policy, sel.status, RULE_SELECTION), prov
        text = sel.text

    tm = request.get("template_metadata")
    prompt: str | None = None
    cut: str | None = None
    if (
        effective_mode(request.get("grading_mode"), policy.grading_mode_override, policy.grading_mode_default)
        == ROBUST
    ):
        prompt = prompt_text(request) or None  # (robust reads the option labels it shows, and its echo)
        cut = cut_off_reason(request)
    result = grade_text(
        text,
        request.get("options"),
        request.get("expected_answer"),
        request.get("grading_mode"),
        tm,
        override=policy.grading_mode_override,
        default_mode=policy.grading_mode_default,
        regex_timeout=regex_timeout,
        prompt=prompt,
        incomplete=cut,
    )
    return result, prov


ROBUST = "robust"


def prompt_text(request: Mapping[str, Any]) -> str:
    """The text the user was shown: every `user` item of responses_create_params.input (a string input is
    one), joined by newlines; "" when there is none."""
    params = request.get("responses_create_params")
    if not (type(params) is dict or isinstance(params, Mapping)):
        return ""
    items = params.get("input")
    if isinstance(items, str):
        return items
    if type(items) is not list:
        return ""
    out = []
    for item in items:
        if (type(item) is dict or isinstance(item, Mapping)) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                parts = [
                    p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
                ]
                out.append("".join(parts))
    return "\n".join(out)


# finish reasons that say the generation stopped at a limit, not at its end (chat-completions rollouts)
CUT_FINISH_REASONS = frozenset(("length", "max_tokens", "max_output_tokens"))


def cut_off_reason(request: Mapping[str, Any]) -> str | None:
    """Why the request's response was cut off, when it says so; else None. A Responses API response says it
    with `status: "incomplete"` and `incomplete_details.reason` (e.g. "max_output_tokens"); a rollout that
    carries a chat-completions `finish_reason` (the row's own, or its response's) says it with "length". Read
    for `robust` only (grade_text's `incomplete`); the policy's `zero_truncated` gate is separate and
    unchanged."""
    response = request.get("response")
    if type(response) is dict or isinstance(response, Mapping):
        details = response.get("incomplete_details")
        reason = details.get("reason") if (type(details) is dict or isinstance(details, Mapping)) else None
        if response.get("status") == "incomplete" or reason is not None:
            return reason if isinstance(reason, str) and reason else "incomplete"
        finish = response.get("finish_reason")
    else:
        finish = None
    if finish is None:
        finish = request.get("finish_reason")
    return finish if isinstance(finish, str) and finish in CUT_FINISH_REASONS else None


def _parity_provenance(
    request: Mapping[str, Any], response: Mapping[str, Any], policy: RequestPolicy, static: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(the raw message text, the provenance) of the parity path: the values select() and provenance() give,
    without building the parts records; one dict display in provenance()'s key order, not a copy and stores."""
    raw, reasoning, _, _ = collect_output(response)
    completion = response.get("status")
    completion = completion if isinstance(completion, str) else None
    gate = GATE_TRUNCATED if (policy.zero_truncated and completion == "incomplete") else None
    detected = detect_prompt_thinking(request)
    n = len(raw)
    prov = {
        **static,
        "component": {**static["component"]},
        "boundary": BOUNDARY_NOT_APPLIED,
        "boundary_source": None,
        "gate": gate,
        "prompt_thinking": detected if detected is not None else (policy.prompt_thinking or "none"),
        "prompt_thinking_source": "request" if detected is not None else "policy",
        "completion_status": completion,
        "response_present": True,
        "raw_chars": n,
        "response_chars": n,
        "thinking_chars": sum(map(len, reasoning)) if reasoning else 0,
        # (a text without "<" holds no marker: one cheap scan spares the substring count on most rows)
        "closing_markers": raw.count(CLOSE_MARKER) if "<" in raw else 0,
    }
    return raw, prov


def _verdict(
    request: Mapping[str, Any],
    policy: RequestPolicy,
    status: str,
    rule: str | None,
    message: str | None = None,
) -> GradeResult:
    """Reward 0 with a selection status, a gate or no_response: the mode is not run."""
    return GradeResult(
        0.0,
        None,
        normalize_gold(request.get("expected_answer")),
        status,
        effective_mode(
            request.get("grading_mode"), policy.grading_mode_override, policy.grading_mode_default
        ),
        rule=rule,
        message=message,
        grader_version=GRADER_VERSION,
    )
