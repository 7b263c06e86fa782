"""NeMo Gym 0.7.0's request models for the resources-server routes, as checks over parsed JSON: a request the
stock `mcqa` server refuses with 422 is refused here too (the default), so a client that works against this
server works against NeMo Gym's, and the other way round.

- `/verify`: `MCQAVerifyRequest`: `responses_create_params` (an object of the Responses API's create fields
  only, with `input`), `response` (a Responses API response: `id`, `created_at`, `model`,
  `object: "response"`, `output` items of a known type with their required fields, `parallel_tool_calls`,
  `tool_choice`, `tools`), and the row's fields with their types (`uuid` a string, `options` a list of
  letter -> text-or-null objects, `expected_answer` a string, `metadata`/`template_metadata` objects,
  `grading_mode` one of the row modes, never null, `_ng_rollout_id` a string). Null is fine wherever NeMo
  Gym's field is optional; fields it does not declare are ignored, as its model ignores them.
- `/close_session`: `ResourcesCloseSessionRequest` (`resources_session_id` and `episode_id`, nothing else).
- `/seed_session`: any object (NeMo Gym's union of the environment's seed and an agent's legacy body).

One deliberate difference: `grading_mode` may be any mode this grader grades on a row (`robust`,
`string_equals_mcqa`: the modes a preparation can stamp), not only NeMo Gym's three. `lenient=True`
(`serve --lenient`) accepts more: a response missing NeMo Gym's bookkeeping fields, unknown create
parameters, a null `grading_mode` (the row default) and an unknown one (graded as the grader reports it);
the fields grading reads must still have their types.

Types follow pydantic's lax mode where it matters: a number field takes an int, a float or a numeric
string; an int field a float without fraction; a bool field true/false (or 0/1, "true"/"false").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..grader.modes import ROW_MODES
from ..runtimes import OBJECT, OPTION, OPTIONS, request_field_problem

Problem = tuple[str, str, str]  # (location, message, pydantic-style error type)

# NeMoGymResponseCreateParamsNonStreaming's fields (extra="forbid"); `input` is required
CREATE_FIELDS = frozenset(
    "background include input instructions max_output_tokens max_tool_calls metadata model parallel_tool_calls "
    "previous_response_id prompt reasoning service_tier store context_management conversation moderation "
    "prompt_cache_key prompt_cache_retention safety_identifier stream_options temperature text tool_choice "
    "tools top_logprobs top_p truncation user stream".split()
)
_CREATE_TYPES: dict[str, str] = {
    "background": "bool", "instructions": "str", "max_output_tokens": "int", "max_tool_calls": "int",
    "metadata": "str_map", "model": "str", "parallel_tool_calls": "bool!", "previous_response_id": "str",
    "prompt": "object", "reasoning": "object", "store": "bool", "prompt_cache_key": "str",
    "safety_identifier": "str", "stream_options": "object", "temperature": "number", "text": "object",
    "top_logprobs": "int", "top_p": "number", "user": "str", "include": "list", "context_management": "list",
    "moderation": "object", "tools": "list!",
}  # fmt: skip
_CREATE_LITERALS = {
    "service_tier": ("auto", "default", "flex", "scale", "priority"),
    "prompt_cache_retention": ("in_memory", "24h"),
    "truncation": ("auto", "disabled"),
    "stream": (False,),
}
# NeMoGymResponse: required fields and the types of the fields NeMo Gym reads
RESPONSE_REQUIRED = (
    "id",
    "created_at",
    "model",
    "object",
    "output",
    "parallel_tool_calls",
    "tool_choice",
    "tools",
)
_RESPONSE_TYPES = {
    "id": "str!", "created_at": "number!", "model": "str!", "output": "list!", "parallel_tool_calls": "bool!",
    "tools": "list!", "usage": "object", "metadata": "str_map", "temperature": "number", "top_p": "number",
    "completed_at": "number", "max_output_tokens": "int", "instructions": None, "error": "object",
    "incomplete_details": "object",
}  # fmt: skip
_STATUS = ("completed", "failed", "in_progress", "cancelled", "queued", "incomplete")
_TOOL_CHOICE = ("none", "auto", "required")
# Output item types of NeMoGymResponse.output and the fields each requires (besides `type`)
OUTPUT_ITEMS: dict[str, tuple[str, ...]] = {
    "message": ("id", "content"),
    "function_call": ("arguments", "call_id", "name"),
    "function_call_output": ("id", "call_id", "output", "status"),
    "reasoning": ("id", "summary"),
    "mcp_call": ("arguments", "name"),
    "mcp_list_tools": (),
    "mcp_approval_request": ("arguments", "name"),
    "file_search_call": ("id", "queries", "status"),
    "web_search_call": ("id", "action", "status"),
    "computer_call": ("id", "call_id", "pending_safety_checks", "status"),
    "image_generation_call": ("id", "status"),
    "code_interpreter_call": ("id", "container_id", "status"),
    "local_shell_call": ("id", "action", "call_id", "status"),
    "custom_tool_call": ("call_id", "input", "name"),
    "computer_call_output": ("id", "call_id", "output", "status"),
    "custom_tool_call_output": ("call_id", "output", "id", "status"),
    "local_shell_call_output": ("id", "output"),
    "mcp_approval_response": ("id", "approval_request_id", "approve"),
    "apply_patch_call": ("id", "call_id", "operation", "status"),
    "apply_patch_call_output": ("id", "call_id", "status"),
    "compaction": ("id", "encrypted_content"),
    "shell_call": ("id", "action", "call_id", "status"),
    "shell_call_output": ("id", "call_id", "output", "status"),
    "tool_search_call": ("id", "arguments", "execution", "status"),
    "tool_search_output": ("id", "execution", "status", "tools"),
    "additional_tools": ("id", "role", "tools"),
}
USAGE_REQUIRED = (
    "input_tokens",
    "input_tokens_details",
    "output_tokens",
    "output_tokens_details",
    "total_tokens",
)
_NUMERIC = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
_EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ATTEMPT_SUFFIX = re.compile(r"-a[1-9][0-9]*$")


def _type_problem(value: Any, kind: str) -> str | None:
    """Why `value` is not of `kind` (a trailing `!`: null refused too), or None."""
    required = kind.endswith("!")
    kind = kind.rstrip("!")
    if value is None:
        return "a value is required, got null" if required else None
    t = type(value)
    if kind == "str":
        return None if t is str else "Input should be a valid string"
    if kind == "bool":
        ok = t is bool or (t is int and value in (0, 1)) or (t is str and value.lower() in _BOOL_WORDS)
        return None if ok else "Input should be a valid boolean"
    if kind == "int":
        ok = (
            (t is int)
            or (t is float and value.is_integer())
            or (t is str and value.strip().lstrip("+-").isdigit())
        )
        return None if ok else "Input should be a valid integer"
    if kind == "number":
        ok = t in (int, float) or (t is str and bool(_NUMERIC.match(value)))
        return None if ok else "Input should be a valid number"
    if kind in ("object", "str_map"):
        if t is not dict:
            return "Input should be a valid dictionary"
        if kind == "str_map" and not all(type(v) is str for v in value.values()):
            return "Input should be an object of strings"
        return None
    if kind == "list":
        return None if t is list else "Input should be a valid list"
    return None


_BOOL_WORDS = ("true", "false", "0", "1", "yes", "no", "on", "off", "t", "f", "y", "n")


def _fields(doc: Mapping[str, Any], types: Mapping[str, str | None], where: str) -> Problem | None:
    for name, kind in types.items():
        if kind is None or name not in doc:
            continue
        why = _type_problem(doc[name], kind)
        if why is not None:
            return f"{where}.{name}", why, "type_error"
    return None


def create_params_problem(rcp: Any, *, lenient: bool) -> Problem | None:
    if type(rcp) is not dict:
        what = "missing" if rcp is None else "not an object"
        return "responses_create_params", f"the Responses API create parameters are {what}", "missing"
    if "input" not in rcp:
        return "responses_create_params.input", "Field required", "missing"
    inp = rcp["input"]
    if type(inp) is not str and not (type(inp) is list and all(type(i) is dict for i in inp)):
        return "responses_create_params.input", "a string or a list of input items is required", "type_error"
    if not lenient:
        unknown = sorted(set(rcp) - CREATE_FIELDS)
        if unknown:
            return (
                f"responses_create_params.{unknown[0]}",
                "Extra inputs are not permitted",
                "extra_forbidden",
            )
    bad = _fields(rcp, _CREATE_TYPES, "responses_create_params")
    if bad is not None:
        return bad
    for name, allowed in _CREATE_LITERALS.items():
        v = rcp.get(name)
        if v is not None and v not in allowed:
            return f"responses_create_params.{name}", f"Input should be one of {allowed}", "literal_error"
    tc = rcp.get("tool_choice")
    if tc is not None and not (tc in _TOOL_CHOICE or type(tc) is dict):
        return (
            "responses_create_params.tool_choice",
            "Input should be 'none', 'auto', 'required' or an object",
            "type_error",
        )
    return None


def response_problem(resp: Any, *, lenient: bool) -> Problem | None:
    if type(resp) is not dict:
        what = "missing" if resp is None else "not an object"
        return "response", f"`response` (the Responses API response to grade) is {what}", "missing"
    if not lenient:
        for name in RESPONSE_REQUIRED:
            if name not in resp:
                return f"response.{name}", "Field required", "missing"
        if resp.get("object") != "response":
            return "response.object", "Input should be 'response'", "literal_error"
        tc = resp.get("tool_choice")
        if not (tc in _TOOL_CHOICE or type(tc) is dict):
            return (
                "response.tool_choice",
                "Input should be 'none', 'auto', 'required' or an object",
                "type_error",
            )
        status = resp.get("status")
        if status is not None and status not in _STATUS:
            return "response.status", f"Input should be one of {_STATUS}", "literal_error"
        bad = _fields(resp, _RESPONSE_TYPES, "response")
        if bad is not None:
            return bad
    output = resp.get("output")
    if type(output) is not list:
        if lenient and output is None:
            return None
        return "response.output", "Input should be a valid list", "list_type"
    for i, item in enumerate(output):
        bad = _output_item_problem(item, f"response.output[{i}]", lenient)
        if bad is not None:
            return bad
    usage = resp.get("usage")
    if not lenient and type(usage) is dict:
        for name in USAGE_REQUIRED:
            if name not in usage:
                return f"response.usage.{name}", "Field required", "missing"
            kind = "int!" if name.endswith("tokens") else "object!"
            why = _type_problem(usage[name], kind)
            if why is not None:
                return f"response.usage.{name}", why, "type_error"
    return None


def _output_item_problem(item: Any, where: str, lenient: bool) -> Problem | None:
    if type(item) is not dict:
        return where, "an output item is an object", "dict_type"
    kind = item.get("type")
    if kind not in OUTPUT_ITEMS:
        if lenient:
            return None
        return f"{where}.type", f"unknown output item type {kind!r}", "union_tag_invalid"
    if lenient:
        return None
    for name in OUTPUT_ITEMS[kind]:
        if name not in item:
            return f"{where}.{name}", "Field required", "missing"
    if kind == "message":
        content = item["content"]
        if type(content) is not list:
            return f"{where}.content", "Input should be a valid list", "list_type"
        for j, part in enumerate(content):
            bad = _content_problem(part, f"{where}.content[{j}]")
            if bad is not None:
                return bad
    return None


def _content_problem(part: Any, where: str) -> Problem | None:
    if type(part) is not dict:
        return where, "a content part is an object", "dict_type"
    kind = part.get("type")
    if kind == "output_text":
        if type(part.get("text")) is not str:
            return f"{where}.text", "Input should be a valid string", "string_type"
        if type(part.get("annotations")) is not list:
            return f"{where}.annotations", "Field required", "missing"
        return None
    if kind == "refusal":
        return None if type(part.get("refusal")) is str else (f"{where}.refusal", "Field required", "missing")
    return f"{where}.type", f"unknown content type {kind!r}", "union_tag_invalid"


def row_problem(doc: Mapping[str, Any], *, lenient: bool) -> Problem | None:
    """The row's own fields: the types NeMo Gym's request model gives them (runtimes.REQUEST_FIELDS, the one
    list `prepare --runtime nemo-gym` checks rows by too), `_ng_rollout_id` a string, and its `grading_mode`
    literal: never null, a row mode (this grader's, see the module docstring)."""
    bad = request_field_problem(doc)
    if bad is not None:
        where, takes, value = bad
        kind = (
            "list_type" if takes == OPTIONS else "dict_type" if takes in (OPTION, OBJECT) else "string_type"
        )
        return where, f"{takes} is required", kind
    rollout_id = doc.get("_ng_rollout_id")
    if rollout_id is not None and type(rollout_id) is not str:
        return "_ng_rollout_id", "Input should be a valid string", "string_type"
    if "grading_mode" in doc:
        mode = doc["grading_mode"]
        if mode is None and lenient:
            return None
        if mode is None or (not lenient and mode not in ROW_MODES):
            return "grading_mode", f"Input should be one of {ROW_MODES}", "literal_error"
    return None


def verify_problem(doc: Any, *, lenient: bool = False) -> Problem | None:
    """The first reason NeMo Gym's verify request model refuses `doc` (loc, message, type), or None."""
    if type(doc) is not dict:
        return (
            "",
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type",
        )
    return (
        create_params_problem(doc.get("responses_create_params"), lenient=lenient)
        or response_problem(doc.get("response"), lenient=lenient)
        or row_problem(doc, lenient=lenient)
    )


def episode_problem(value: Any, where: str) -> Problem | None:
    if type(value) is not dict:
        return where, "Input should be a valid dictionary", "dict_type"
    extra = sorted(set(value) - {"rollout_id", "attempt"})
    if extra:
        return f"{where}.{extra[0]}", "Extra inputs are not permitted", "extra_forbidden"
    rid = value.get("rollout_id")
    if type(rid) is not str or not _EPISODE_ID.match(rid) or _ATTEMPT_SUFFIX.search(rid):
        return (
            f"{where}.rollout_id",
            "a rollout id (letters, digits, . _ -; no -a<N> suffix) is required",
            "value_error",
        )
    attempt = value.get("attempt", 0)
    if _type_problem(attempt, "int!") is not None or int(float(attempt)) < 0:
        return f"{where}.attempt", "Input should be an integer >= 0", "int_type"
    return None


def close_problem(doc: Any) -> Problem | None:
    """ResourcesCloseSessionRequest: `resources_session_id` (a string) and `episode_id`, nothing else."""
    if type(doc) is not dict:
        return "", "Input should be a valid dictionary", "model_attributes_type"
    if type(doc.get("resources_session_id")) is not str:
        return "resources_session_id", "Input should be a valid string", "string_type"
    extra = sorted(set(doc) - {"resources_session_id", "episode_id"})
    if extra:
        return extra[0], "Extra inputs are not permitted", "extra_forbidden"
    if "episode_id" not in doc:
        return "episode_id", "Field required", "missing"
    return episode_problem(doc["episode_id"], "episode_id")


def environment_seed(doc: Mapping[str, Any]) -> bool:
    """Whether a seed body is an environment's ResourcesSeedSessionRequest (else an agent's legacy body)."""
    if set(doc) != {"resources_session_id", "episode_id", "task_id", "task_data"}:
        return False
    sid, task = doc["resources_session_id"], doc["task_id"]
    if type(sid) is not str or not sid or episode_problem(doc["episode_id"], "episode_id") is not None:
        return False
    if type(task) is not dict or set(task) != {"taskset", "task_id"}:
        return False
    ok = all(type(task[k]) is str and task[k] for k in ("taskset", "task_id"))
    return ok and type(doc["task_data"]) is dict
