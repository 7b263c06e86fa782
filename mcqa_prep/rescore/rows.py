"""One verify request or rollout in, one rescored row and its outcome out: `rescore_row` is a pure function
of the input row, the optional join index and the policies, so rows can be rescored anywhere (one process,
a pool of workers, a Ray cluster) and the outcomes counted in input order.

A row that cannot be graded at all (unreadable line, no response object, a response whose shape is not a
Responses API object, options that are not a list, no dataset row to join with) is an `invalid_row`: reward
0, a message naming the problem, and it is counted apart from grading disagreements. So is a row edited
after prepare (kind `row_changed`, binding.py): a row whose fields no longer hash to the digests its stamp
records, or whose own grading fields differ from the prepared dataset row it is joined with (`--rows
PREPARED`: named with both values); it is not the row that was prepared, so its reward measures nothing. NaN/Infinity numbers
in a row (Python's json writes them, JSON has none), and values of a Parquet row JSON has no form for (bytes,
decimals, durations), are written as null and listed in the grading record; a non-finite recorded reward
counts as no recorded reward.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from .. import binding
from ..counts import is_change
from ..fields import grading_contract, grading_of, recorded_reward, stamp_of, template_id
from ..grader import GRADER_VERSION
from ..grader.request import grade_request
from ..io.writers import row_line
from ..jsonsafe import json_safe
from ..policy import GradingPolicy
from ..prompt import prompt_key
from ..records import STATUS_INVALID_ROW, Row, display_name

# Fields a rollout may lack that its dataset row supplies (NeMo Gym rollouts do not repeat them).
JOIN_FIELDS = ("options", "template_metadata", "grading_mode", "expected_answer", "uuid")
# The fields the grader reads: two dataset rows with one prompt that differ in one of them cannot both be
# the row a rollout of that prompt is graded against (a differing uuid alone is a duplicate, not a conflict).
GRADING_FIELDS = ("options", "template_metadata", "grading_mode", "expected_answer")
CONFLICT = "__conflict__"  # in a join index entry: its prompt's dataset rows disagree (fields, rows, golds)
# What one output line holds (`--output-shape`): the input row with the grading added (the default), or only
# the grading of the row, for users who join it back to their rows by line or id (docs/design/rescore.md).
SHAPE_FULL = "full"
SHAPE_GRADING = "grading"
OUTPUT_SHAPES = (SHAPE_FULL, SHAPE_GRADING)
# The fields of a grading-shape line, in order (also the columns of its Parquet form).
GRADING_LINE_FIELDS = ("line", "id", "reward", "extracted_answer", "status", "rule", "contract")
PREPARED = "__bound__"  # in a join index entry of a prepared row: the digests its stamp records
ROW_CHANGED = "row_changed"  # an invalid row's kind: edited after prepare


@dataclass(frozen=True)
class Settings:
    """What every row is rescored with."""

    policy: GradingPolicy
    index: Any = None  # dataset rows by prompt key (--rows): rescore.PackedRows, or any dict-like .get(key)
    explain: bool = False
    compare_policy: GradingPolicy | None = None
    compare_mode_policy: GradingPolicy | None = None  # the primary policy with the mode overridden
    shape: str = SHAPE_FULL  # what a line holds: SHAPE_FULL or SHAPE_GRADING

    @functools.cached_property
    def contract(self) -> str:
        return self.policy.contract_id()


@dataclass(slots=True)
class Outcome:
    """What the report needs to know of one row (the rescored row itself is written, not kept)."""

    rid: str
    status: str  # invalid_row when the row could not be graded
    reward: float
    mode: str | None = None
    previous: float | None = None  # the recorded reward, when the row carried a readable one
    joined: bool | None = None  # None: no join asked or needed; True: joined; False: no dataset row found
    input_contract: str | None = None  # the contract the input row was graded under (metadata.grading)
    compare: str | None = None  # "0->1" / "1->0" when the compare policy's reward differs, "same" otherwise
    template: str | None = None
    format_miss: bool | None = None
    problem: str | None = None  # why an invalid row could not be graded: unreadable, response, options, gold
    replaced: bool = False  # values JSON cannot hold (NaN, Infinity, bytes) were written as null
    extracted: str | None = None  # the answer the grader read (passrates and audit's wrong-key evidence)


def row_id(row: Mapping[str, Any] | None, file: str, line: int) -> str:
    if row is not None:
        for key in ("uuid", "id"):
            v = row.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                return str(v)
    return f"{display_name(file.rsplit('/', 1)[-1])}:{line}"


def _plain_response(response: Any) -> bool:
    """True for the common, well-formed shape (plain dicts and lists, checked by exact type): nothing to
    report. Anything else goes through _response_problem's full checks."""
    if type(response) is not dict:
        return False
    output = response.get("output")
    if type(output) is not list:
        return False
    for item in output:
        if type(item) is not dict:
            return False
        kind = item.get("type")
        if kind != "message":
            if type(kind) is not str:
                return False
            continue
        content = item.get("content")
        if type(content) is not list:
            return False
        for part in content:
            if type(part) is not dict or (
                part.get("type") == "output_text" and type(part.get("text")) is not str
            ):
                return False
    return True


def _response_problem(response: Any) -> str | None:
    """Why `response` is not a Responses API object the grader can read (NeMo Gym rejects these, 422)."""
    if _plain_response(response):
        return None
    if response is None:
        return "row has no `response`: a verify request or rollout needs the model's Responses API response"
    if not isinstance(response, Mapping):
        return f"$.response: must be a Responses API object, got {_kind(response)}"
    output = response.get("output")
    if not isinstance(output, list):
        return f"$.response.output: must be a list of output items, got {_kind(output)}"
    for i, item in enumerate(output):
        if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
            return f"$.response.output[{i}]: must be an output item object with a string `type`"
        if item["type"] != "message":
            continue
        content = item.get("content")
        if not isinstance(content, list):
            return f"$.response.output[{i}].content: must be a list of content parts, got {_kind(content)}"
        for j, part in enumerate(content):
            if not isinstance(part, Mapping):
                return (
                    f"$.response.output[{i}].content[{j}]: must be a content part object, got {_kind(part)}"
                )
            if part.get("type") == "output_text" and not isinstance(part.get("text"), str):
                return f"$.response.output[{i}].content[{j}].text: must be a string, got {_kind(part.get('text'))}"
    return None


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__
    )


def _row_problem(
    row: Mapping[str, Any], joined: bool | None, ambiguous: str | None = None, changed: str | None = None
) -> tuple[str, str] | None:
    """(kind, message) of why a row cannot be graded at all; None when it can."""
    if changed is not None:
        return ROW_CHANGED, changed
    problem = _response_problem(row.get("response"))
    if problem is not None:
        return "response", problem
    if ambiguous is not None:
        return "ambiguous_join", ambiguous
    if "options" not in row:
        if joined is False:
            return "no_match", "row has no `options`, and no dataset row has the same prompt"
        return "no_options", (
            "row has no `options`: NeMo Gym rollouts do not repeat them; join them with their dataset rows"
        )
    if row["options"] is not None and not isinstance(row["options"], list):  # null: graded as NeMo Gym does
        return (
            "options",
            f"$.options: must be a list of {{letter: text}} objects, got {_kind(row['options'])}",
        )
    ea = row.get("expected_answer")
    if ea is not None and not isinstance(ea, str):  # a null gold is graded (reward 0), as NeMo Gym does
        return "gold", f"$.expected_answer: must be a string letter, got {_kind(ea)}"
    return None


def _join(
    row: Mapping[str, Any], index: Any
) -> tuple[Mapping[str, Any], bool | None, str | None, Mapping[str, Any] | None]:
    """The row completed with its dataset row's grading fields (the rollout's own fields win); the third item
    says why the join is refused: the prompt's dataset rows disagree on a field the rollout does not carry
    itself (two golds), so no dataset row can be chosen (docs/design/rescore.md, "Joining rollouts"); the fourth is
    the dataset row when it is a prepared one (its fields as prepared, to hold the rollout's own against)."""
    key = prompt_key(row.get("responses_create_params"))
    ds = index.get(key) if key else None
    if ds is None:
        return row, (None if "options" in row else False), None, None
    conflict = ds.get(CONFLICT)
    if conflict is not None:
        needed = [f for f in conflict["fields"] if row.get(f) is None]
        if needed:
            rows = " and ".join(conflict["rows"]) + (
                f" (and {conflict['more']} more)" if conflict.get("more") else ""
            )
            return (
                row,
                None,
                f"dataset rows {rows} have this prompt with different {', '.join(needed)}"
                + (f" ({' vs '.join(map(repr, conflict['golds']))})" if "expected_answer" in needed else "")
                + ": the join cannot choose one",
                None,
            )
    merged = dict(row)
    for k, v in ds.items():
        if (k not in merged or merged[k] is None) and k != CONFLICT and k != PREPARED:
            merged[k] = v
    return merged, True, None, (ds if PREPARED in ds and CONFLICT not in ds else None)


def _changed(row: Mapping[str, Any], prepared: Mapping[str, Any] | None, s: Settings) -> str | None:
    """Why the row is not the row as prepared, or None: its fields against the digests its own stamp records
    (the stamp's mode against this policy's when the stamp names this policy's contract), then, joined with a
    prepared dataset row, its own grading fields against that row's (both values named)."""
    if binding.recorded(row) is not None:  # (a stamp that binds: most rollouts carry none)
        stamp = stamp_of(row) or {}
        modes = (
            (s.policy.grading_mode_override, s.policy.grading_mode_default)
            if stamp.get("contract") == s.contract
            else None
        )
        c = binding.check(row, modes)
        if c.state == binding.CHANGED:
            return binding.describe(c)
    if prepared is not None:
        as_prepared = {**prepared, "responses_create_params": row.get("responses_create_params")}
        diff = binding.differences(row, as_prepared)
        if diff:
            return binding.edited(diff)
    return None


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(x, Mapping) without the ABC's Python-level check for the usual dict and None."""
    return type(x) is dict or (x is not None and isinstance(x, Mapping))


def _input_contract(row: Mapping[str, Any]) -> str | None:
    return grading_contract(grading_of(row))


def _with_grading(meta: Any, grading: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta) if _is_map(meta) else ({} if meta is None else {"original": meta})
    out["grading"] = grading
    return out


def _previous(row: Mapping[str, Any], grading: dict[str, Any], reward: float) -> float | None:
    prev = recorded_reward(row)
    if "reward" in row or "extracted_answer" in row:
        grading["previous_reward"] = prev
        grading["previous_extracted_answer"] = row.get("extracted_answer")
        grading["changed"] = is_change(grading["status"], prev, reward)  # an invalid row: never a change
    return prev


def rescore_row(rec: Row, s: Settings) -> tuple[bytes, Outcome]:
    """The rescored JSONL line of one input row (its shape: `s.shape`), and its outcome."""
    row = rec.data
    rid = row_id(row, rec.file, rec.line)
    if row is None:
        grading = _invalid_grading(s, f"{display_name(rec.file)}:{rec.line}: {rec.error}")
        outcome = Outcome(rid, STATUS_INVALID_ROW, 0.0, problem="unreadable")
        if s.shape == SHAPE_GRADING:
            return grading_line(rec.line, rid, 0.0, None, grading), outcome
        grading["line"] = rec.line
        return row_line({"reward": 0.0, "extracted_answer": None, "metadata": {"grading": grading}}), outcome
    if rec.nonfinite or rec.foreign:
        row = json_safe(row)  # NaN and values JSON has no form for (the reader's findings) as null
    graded, joined, ambiguous, prepared = (
        _join(row, s.index) if s.index is not None else (row, None, None, None)
    )
    # A row without `metadata` (most rollouts) has no stamp and no recorded grading: the calls that read them
    # are skipped, not answered anew (the same values)
    meta = row.get("metadata")
    bare = meta is None and graded.get("metadata") is None
    changed = None if bare and prepared is None else _changed(graded, prepared, s)
    problem = _row_problem(graded, joined, ambiguous, changed)
    if problem is not None:
        grading = _invalid_grading(s, problem[1])
        prev = _previous(row, grading, 0.0)
        fields: dict[str, Any] = {"reward": 0.0, "extracted_answer": None}
        outcome = Outcome(
            rid,
            STATUS_INVALID_ROW,
            0.0,
            previous=prev,
            joined=joined,
            input_contract=_input_contract(row),
            problem=problem[0],
        )
    else:
        result, prov = grade_request(graded, s.policy)
        if s.shape == SHAPE_GRADING:  # only what a grading line and the outcome read: no full record built
            grading = {"status": result.status, "rule": result.rule, "contract": prov["contract"]}
            template = template_id(graded)
        else:
            grading = _grading(graded, result, prov, s)
            template = grading.get("template_id")
        # (a row with neither field records no reward: _previous would add nothing and return None)
        prev = (
            _previous(row, grading, result.reward) if "reward" in row or "extracted_answer" in row else None
        )
        compare = _compare(graded, result, s, grading) if s.compare_policy is not None else None
        miss = _format_miss(graded, result, s, grading) if s.compare_mode_policy is not None else None
        fields = {
            "reward": result.reward,
            "extracted_answer": result.extracted_answer,
            "expected_answer": result.expected_answer,
        }
        outcome = Outcome(
            rid,
            result.status,
            result.reward,
            mode=result.mode,
            previous=prev,
            joined=joined,
            input_contract=None if meta is None else _input_contract(row),
            compare=compare,
            template=template,
            format_miss=miss,
            extracted=result.extracted_answer,
        )
    outcome.replaced = bool(rec.nonfinite or rec.foreign)
    if s.shape == SHAPE_GRADING:
        return grading_line(rec.line, rid, fields["reward"], fields["extracted_answer"], grading), outcome
    if rec.nonfinite:
        grading["nonfinite_replaced"] = list(rec.nonfinite)
    if rec.foreign:
        grading["non_json_replaced"] = list(rec.foreign)
    out_row = dict(row)
    out_row.update(fields)
    out_row["metadata"] = {"grading": grading} if meta is None else _with_grading(meta, grading)
    return row_line(out_row), outcome


def _grading(graded: Mapping[str, Any], result: Any, prov: dict[str, Any], s: Settings) -> dict[str, Any]:
    """metadata.grading of a graded row: the verdict, its template, the provenance, --explain's spans."""
    grading = {
        "status": result.status,
        "mode": result.mode,
        "rule": result.rule,
        "grader_version": result.grader_version,
    }
    if result.message:
        grading["message"] = result.message
    if result.validity:
        grading["validity"] = result.validity
    template = template_id(graded)
    if template is not None:
        grading["template_id"] = template
    grading.update(prov)
    if s.explain:
        ex = result.to_dict(explain=True)
        grading["explain"] = {"span": ex["span"], "candidates": ex["candidates"]}
    return grading


def grading_line(line: int, rid: str, reward: float, extracted: str | None, grading: dict[str, Any]) -> bytes:
    """One line of `--output-shape grading`: the row's line and id, and what the full row's
    metadata.grading says of it (GRADING_LINE_FIELDS, in that order)."""
    return orjson.dumps(
        {
            "line": line,
            "id": rid,
            "reward": reward,
            "extracted_answer": extracted,
            "status": grading["status"],
            "rule": grading["rule"],
            "contract": grading["contract"],
        },
        option=orjson.OPT_APPEND_NEWLINE,
    )


def _invalid_grading(s: Settings, message: str) -> dict[str, Any]:
    return {
        "status": STATUS_INVALID_ROW,
        "mode": None,
        "rule": None,
        "grader_version": GRADER_VERSION,
        "message": message,
        "contract": s.policy.contract_id(),
    }


def _compare(row: Mapping[str, Any], primary: Any, s: Settings, grading: dict[str, Any]) -> str | None:
    if s.compare_policy is None:
        return None
    other, prov = grade_request(row, s.compare_policy)
    grading["compare_policy"] = {
        "contract": prov.get("contract"),
        "reward": other.reward,
        "extracted_answer": other.extracted_answer,
        "status": other.status,
    }
    return "same" if other.reward == primary.reward else f"{primary.reward:g}->{other.reward:g}"


def _format_miss(row: Mapping[str, Any], primary: Any, s: Settings, grading: dict[str, Any]) -> bool | None:
    """Reward 0 under the configured mode, but the comparison mode reads the gold letter."""
    p = s.compare_mode_policy
    if p is None:
        return None
    other, _ = grade_request(row, p)
    miss = primary.reward == 0.0 and other.reward == 1.0
    grading["compare_mode"] = {
        "mode": p.grading_mode_override,
        "extracted_answer": other.extracted_answer,
        "status": other.status,
        "format_miss": miss,
    }
    return miss


def _line(row: dict[str, Any]) -> bytes:
    return row_line(row)
