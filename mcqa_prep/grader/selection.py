"""Final-answer selection (grading.md, "Final-answer selection"; decisions in docs/design/final-answer.md).

Splits one graded response into its parts (thinking, delivered response, terminal markers) and says
whether the delivered response can be graded at all. Selection never parses answers: the grading mode
does that on `Selection.text`. Pure: no I/O, no logging.

With `final_answer_only` off (the default, NeMo Gym parity) nothing is cleaned: `text` is exactly
`response_text(response)`, and the only verdict is the truncation gate when `zero_truncated` is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

from ..records import (
    STATUS_MISSING_FINAL_ANSWER,
    STATUS_NO_RESPONSE,
    STATUS_OK,
    STATUS_TRUNCATED,
    STATUS_UNEXPECTED_REASONING,
    STATUS_UNFINISHED_REASONING,
)


class _Component(Protocol):
    @property
    def objective(self) -> str: ...
    @property
    def require_response(self) -> bool: ...


class SelectionPolicy(Protocol):
    """What selection reads of a grading policy (policy.GradingPolicy has it). A protocol, so the grader
    never imports the policy module: the policy depends on the grader's versions, not the other way."""

    # read-only properties: a frozen dataclass's fields satisfy them
    @property
    def prompt_thinking(self) -> str | None: ...
    @property
    def zero_truncated(self) -> bool: ...
    @property
    def final_answer_only(self) -> bool: ...
    @property
    def reasoning_mode(self) -> str: ...
    @property
    def component(self) -> _Component: ...
    @property
    def effective_scope(self) -> str: ...


SELECTOR_VERSION = "1.0.0"

OPEN_MARKER = "<think>"
CLOSE_MARKER = "</think>"
TERMINAL_MARKERS = ("<|endoftext|>", "<|im_end|>")

PROMPT_THINKING_STATES = ("none", "open", "closed")

GATE_TRUNCATED = STATUS_TRUNCATED

# Boundary verdicts recorded in provenance (besides the selection statuses).
BOUNDARY_OK = STATUS_OK
BOUNDARY_NOT_APPLIED = "not_applied"  # final_answer_only off: nothing was selected
BOUNDARY_NO_RESPONSE = STATUS_NO_RESPONSE  # no response object, or nothing generated at all

# How the boundary between thinking and response was found.
SOURCE_MARKER = "marker"  # the last literal </think> in the generated text
SOURCE_STRUCTURAL = "structural"  # Responses API reasoning items; the message text is the response
SOURCE_PROMPT = "prompt"  # the prompt already closed thinking; the generated text is the response
SOURCE_WHOLE_TEXT = "whole_text"  # reasoning_mode none: the whole generated text is the response


@dataclass(frozen=True, slots=True)
class ResponseParts:
    """The pieces of one graded response, for grading and provenance.

    `raw_text` is the message output_text concatenated with nothing removed (not even whitespace);
    `cleaned_text` is `raw_text` without trailing terminal markers (identical when final_answer_only is
    off). `response` is a slice of `cleaned_text` starting at `response_offset`, whitespace preserved;
    None means no delivered response exists, "" means one exists and is empty.
    """

    raw_text: str
    cleaned_text: str
    thinking: str
    response: str | None
    response_offset: int | None
    prompt_thinking: str
    prompt_thinking_source: str  # "request" (a prefill was seen) or "policy" (declared)
    closing_markers: int
    completion_status: str | None
    response_present: bool
    reasoning_items: int = 0
    message_items: int = 0


@dataclass(frozen=True, slots=True)
class Selection:
    """What selection decided for one response.

    `status` is None when the text can be graded, else a selection status; `gate` is None or "truncated"
    (the gate wins over the status: it applies before selection). `text` is what the grading mode reads
    (None when there is nothing to read); `text_offset` is where it starts in `parts.raw_text`, so a
    grader span plus `text_offset` indexes the raw text. `boundary` is the selection verdict recorded in
    provenance, computed even for gated rows.
    """

    parts: ResponseParts
    status: str | None
    gate: str | None
    text: str | None
    text_offset: int | None
    boundary: str
    boundary_source: str | None

    @property
    def gradable(self) -> bool:
        return self.gate is None and self.status is None


# ---- request views -------------------------------------------------------------------------------


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(x, Mapping) with a fast path for dict (the ABC check costs ~0.3us, paid per row)."""
    return type(x) is dict or isinstance(x, Mapping)


def _content_text(content: Any) -> str | None:
    """Text of an input item's content: a string, or the `text` of every content part that has one."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return "".join(out)
    return None


def detect_prompt_thinking(request: Any) -> str | None:
    """Thinking state of a visible assistant prefill: 'open', 'closed', or None when there is none.

    A prefill is a final `assistant` item of responses_create_params.input. It opens thinking when its
    last think tag is an unclosed `<think>`, and closes it when its last think tag is `</think>`.
    """
    if not _is_map(request):
        return None
    params = request.get("responses_create_params")
    if not _is_map(params):
        return None
    items = params.get("input")
    if type(items) is not list or not items:
        return None
    last = items[-1]
    if not _is_map(last) or last.get("role") != "assistant":
        return None
    if last.get("type", "message") != "message":
        return None
    text = _content_text(last.get("content"))
    if not text:
        return None
    opened = text.rfind(OPEN_MARKER)
    closed = text.rfind(CLOSE_MARKER)
    if opened < 0 and closed < 0:
        return None
    return "open" if opened > closed else "closed"


def strip_terminal_markers(text: str) -> str:
    """Remove trailing `<|endoftext|>` / `<|im_end|>` markers, repeatedly, with the whitespace between
    and after them. Whitespace before the first removed marker, and any marker not at the end, stay."""
    end = len(text)
    while True:
        j = end
        while j > 0 and text[j - 1].isspace():
            j -= 1
        for marker in TERMINAL_MARKERS:
            if text.endswith(marker, 0, j):
                end = j - len(marker)
                break
        else:
            return text[:end]


def _reasoning_text(item: Mapping[str, Any]) -> str:
    """Text of a Responses API reasoning item: its `content` texts, else its `summary` texts (a summary
    restates the content, so counting both would double the thinking)."""
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
            if texts:
                return "\n".join(texts)
    return ""


def collect_output(response: Mapping[str, Any]) -> tuple[str, list[str], int, int]:
    """(message text, reasoning texts, reasoning item count, message item count) in one pass.

    The message text mirrors grader.response_text before its strip (same items, same parts)."""
    texts: list[str] = []
    thinking: list[str] = []
    n_reasoning = n_message = 0
    output = response.get("output")
    if isinstance(output, list):
        for item in output:
            if not (type(item) is dict or isinstance(item, Mapping)):
                continue
            kind = item.get("type")
            if kind == "message":
                n_message += 1
                content = item.get("content")
                if not isinstance(content, list):
                    continue
                for part in content:
                    if (type(part) is dict or isinstance(part, Mapping)) and part.get(
                        "type"
                    ) == "output_text":
                        t = part.get("text")
                        if isinstance(t, str):
                            texts.append(t)
            elif kind == "reasoning":
                n_reasoning += 1
                thinking.append(_reasoning_text(item))
    return "".join(texts), thinking, n_reasoning, n_message


def _without_open_tag(thinking: str) -> str:
    """Textual thinking without the `<think>` tag that opens it (a thinking-scope reader wants the
    thoughts, not the markup)."""
    body = thinking.lstrip()
    return body[len(OPEN_MARKER) :] if body.startswith(OPEN_MARKER) else thinking


def _stripped(response: str | None, offset: int | None) -> tuple[str | None, int | None]:
    """The graded text of a delivered response: surrounding whitespace removed, as for every graded text
    (grading.md, "The text that is graded"), with its offset."""
    if response is None or offset is None:
        return None, None
    lead = len(response) - len(response.lstrip())
    return response.strip(), offset + lead


# ---- selection -----------------------------------------------------------------------------------


def select(request: Mapping[str, Any], policy: SelectionPolicy) -> Selection:
    """Split the request's response into parts and decide what the grading mode reads.

    `policy` is a GradingPolicy or anything with its fields (only its final_answer_only, reasoning_mode, zero_truncated,
    prompt_thinking and component fields are read). Never raises on bad data.
    """
    response: Any = request.get("response") if _is_map(request) else None
    present = _is_map(response)
    detected = detect_prompt_thinking(request)
    prompt_state = detected if detected is not None else (policy.prompt_thinking or "none")
    prompt_source = "request" if detected is not None else "policy"

    if not present:
        parts = ResponseParts("", "", "", None, None, prompt_state, prompt_source, 0, None, False)
        return Selection(parts, None, None, None, None, BOUNDARY_NO_RESPONSE, None)

    raw, reasoning, n_reasoning, n_message = collect_output(response)
    completion = response.get("status")
    completion = completion if isinstance(completion, str) else None
    gate = GATE_TRUNCATED if (policy.zero_truncated and completion == "incomplete") else None
    structural = "".join(reasoning)

    if not policy.final_answer_only:
        # Parity: no cleanup at all. The message text is graded whole; only structural reasoning is
        # thinking (textual thinking is part of what NeMo Gym grades).
        parts = ResponseParts(
            raw_text=raw,
            cleaned_text=raw,
            thinking=structural,
            response=raw,
            response_offset=0,
            prompt_thinking=prompt_state,
            prompt_thinking_source=prompt_source,
            closing_markers=raw.count(CLOSE_MARKER),
            completion_status=completion,
            response_present=True,
            reasoning_items=n_reasoning,
            message_items=n_message,
        )
        text, offset = _stripped(raw, 0)
        return Selection(parts, None, gate, text, offset, BOUNDARY_NOT_APPLIED, None)

    cleaned = strip_terminal_markers(raw)
    closes = cleaned.count(CLOSE_MARKER)
    thinking, delivered, offset, source, boundary = _final_answer(
        cleaned, closes, structural, n_reasoning, n_message, prompt_state, policy.reasoning_mode
    )
    parts = ResponseParts(
        raw_text=raw,
        cleaned_text=cleaned,
        thinking=thinking,
        response=delivered,
        response_offset=offset,
        prompt_thinking=prompt_state,
        prompt_thinking_source=prompt_source,
        closing_markers=closes,
        completion_status=completion,
        response_present=True,
        reasoning_items=n_reasoning,
        message_items=n_message,
    )
    status = _status(boundary, policy)
    text, text_offset = (None, None) if status else _scoped_text(parts, policy)
    return Selection(parts, status, gate, text, text_offset, boundary, source)


def _final_answer(
    cleaned: str,
    closes: int,
    structural: str,
    n_reasoning: int,
    n_message: int,
    prompt_state: str,
    reasoning_mode: str,
) -> tuple[str, str | None, int | None, str | None, str]:
    """(thinking, delivered response, its offset, where the boundary came from, boundary verdict) of a
    cleaned generated text under the final-answer selection rules (docs/design/final-answer.md)."""
    thinking = structural
    delivered: str | None = None
    offset: int | None = None
    source: str | None = None
    boundary = BOUNDARY_OK

    if not cleaned.strip() and n_reasoning == 0:
        # Nothing was generated at all: an empty response, not a reasoning failure.
        delivered, offset = (cleaned, 0) if n_message else (None, None)
        boundary = BOUNDARY_NO_RESPONSE
    elif reasoning_mode == "none":
        if n_reasoning or prompt_state == "open" or closes or OPEN_MARKER in cleaned:
            boundary = STATUS_UNEXPECTED_REASONING
        else:
            delivered, offset, source = cleaned, 0, SOURCE_WHOLE_TEXT
    else:  # reasoning_mode "required"
        if closes:
            cut = cleaned.rfind(CLOSE_MARKER)
            thinking = structural + _without_open_tag(cleaned[:cut])
            offset = cut + len(CLOSE_MARKER)
            delivered, source = cleaned[offset:], SOURCE_MARKER
        elif n_reasoning:
            # A reasoning parser split the output: the message text is the response. No message item
            # at all means no response was delivered (e.g. cut off while thinking).
            delivered, offset, source = (cleaned, 0, SOURCE_STRUCTURAL) if n_message else (None, None, None)
        elif prompt_state == "closed":
            delivered, offset, source = cleaned, 0, SOURCE_PROMPT
        else:
            thinking = structural + _without_open_tag(cleaned)  # never closed: all of it is thinking
        if delivered is None:
            boundary = STATUS_MISSING_FINAL_ANSWER
        elif not delivered.strip():
            boundary = STATUS_MISSING_FINAL_ANSWER
        elif delivered.lstrip().startswith(OPEN_MARKER):
            boundary = STATUS_UNFINISHED_REASONING
    return thinking, delivered, offset, source, boundary


def _status(boundary: str, policy: SelectionPolicy) -> str | None:
    """The boundary verdict as a row status. A component that does not require a response (it reads
    the thinking or the full text) is not failed by a missing or unfinished response."""
    if boundary in (BOUNDARY_OK, BOUNDARY_NO_RESPONSE):
        return None
    if boundary == STATUS_UNEXPECTED_REASONING:
        return boundary
    return boundary if policy.component.require_response else None


def _scoped_text(parts: ResponseParts, policy: SelectionPolicy) -> tuple[str | None, int | None]:
    """What the component reads: the delivered response (scope 'response'), the thinking, or the whole
    cleaned text (offset 0 of the raw text)."""
    scope = policy.effective_scope
    if scope == "thinking":
        return parts.thinking.strip(), None
    if scope == "full":
        return _stripped(parts.cleaned_text, 0)
    return _stripped(parts.response, parts.response_offset)
