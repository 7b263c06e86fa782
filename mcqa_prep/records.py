"""Records shared by the readers, the grader, the validators and the workflows."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

# Typed statuses of a grade result. "ok" means a letter was extracted (reward says whether it was right).
STATUS_OK = "ok"
STATUS_NO_RESPONSE = "no_response"
STATUS_NO_ANSWER = "no_answer"
STATUS_AMBIGUOUS = "ambiguous"
STATUS_REFUSAL = "refusal"
STATUS_OUT_OF_RANGE = "out_of_range"
STATUS_INVALID_REGEX = "invalid_regex"
STATUS_REGEX_TIMEOUT = "regex_timeout"
STATUS_INVALID_ROW = "invalid_row"
STATUS_MISSING_FINAL_ANSWER = "missing_final_answer"
STATUS_UNFINISHED_REASONING = "unfinished_reasoning"
STATUS_UNEXPECTED_REASONING = "unexpected_reasoning"
STATUS_TRUNCATED = "truncated"

STATUSES = (
    STATUS_OK,
    STATUS_NO_RESPONSE,
    STATUS_NO_ANSWER,
    STATUS_AMBIGUOUS,
    STATUS_REFUSAL,
    STATUS_OUT_OF_RANGE,
    STATUS_INVALID_REGEX,
    STATUS_REGEX_TIMEOUT,
    STATUS_INVALID_ROW,
    STATUS_MISSING_FINAL_ANSWER,
    STATUS_UNFINISHED_REASONING,
    STATUS_UNEXPECTED_REASONING,
    STATUS_TRUNCATED,
)


def display_name(name: str | os.PathLike[str]) -> str:
    """A file name as every output writes it: as it is when it is UTF-8, else each byte that does not decode
    written as the text `\\udcXX` (Linux names are bytes; Python gives those it cannot decode as lone
    surrogates, which no UTF-8 output can hold), and a control character (a newline in a name would split a
    finding's line; an escape sequence would drive the terminal) as `\\n`, `\\r`, `\\t` or `\\xNN`.
    Rows' provenance, reject records, reports, JSON documents, HTML pages and messages write this form; the
    name itself stays the one that opens the file."""
    text = os.fspath(name).encode("utf-8", "backslashreplace").decode("utf-8")
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if c < "\u0100" else f"\\u{ord(c):04x}")


def displayed(v: Any) -> Any:
    """A JSON-like document with every string (keys included) in display_name's form: for a document built
    from names that did not all pass through display_name (an argument, an OS error's message)."""
    if isinstance(v, str):
        return display_name(v)
    if isinstance(v, dict):
        return {displayed(k): displayed(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [displayed(x) for x in v]
    return v


@dataclass(frozen=True, slots=True)
class Candidate:
    """A place in the text that looked like an answer, and what the grader made of it (for --explain)."""

    rule: str
    span: tuple[int, int]
    letter: str | None
    verdict: str  # "accepted" or why it was rejected


class GradeResult(NamedTuple):
    """What the grader decided for one response. `span` indexes the text that was graded.

    A NamedTuple rather than a frozen dataclass: just as immutable, and built in a third of the time,
    which matters at one result per row on the grading hot path."""

    reward: float
    extracted_answer: str | None
    expected_answer: str
    status: str
    mode: str
    rule: str | None = None
    span: tuple[int, int] | None = None
    message: str | None = None
    validity: str | None = None
    candidates: tuple[Candidate, ...] = ()
    grader_version: str = ""

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "reward": self.reward,
            "extracted_answer": self.extracted_answer,
            "expected_answer": self.expected_answer,
            "status": self.status,
            "mode": self.mode,
            "rule": self.rule,
            "grader_version": self.grader_version,
        }
        if self.message is not None:
            d["message"] = self.message
        if self.validity is not None:
            d["validity"] = self.validity
        if explain:
            d["span"] = list(self.span) if self.span else None
            d["candidates"] = [
                {"rule": c.rule, "span": list(c.span), "letter": c.letter, "verdict": c.verdict}
                for c in self.candidates
            ]
        return d


@dataclass(slots=True)
class Row:
    """One input row, as every reader yields it. Exactly one of `data` and `error` is set.

    `line` is the 1-based JSONL line (or 1-based Parquet record number), `index` the 0-based row index within
    the file (blank lines are not rows), `split` the split the file belongs to (io.paths.split_of).
    `hint` is a reader's by-product that spares a consumer work: for a Parquet row whose options the reader
    built as single-key {letter: text} dicts, the (letters, texts) lists they were built from; else None.
    `nonfinite` lists the JSON paths of NaN/Infinity numbers in `data` (validation reports them), `foreign`
    those of values read from Parquet that JSON has no form for (bytes, decimals, durations)."""

    file: str
    line: int
    index: int
    data: dict[str, Any] | None
    error: str | None = None
    split: str | None = None
    hint: tuple[list[str], list[str]] | None = None
    nonfinite: tuple[str, ...] = ()  # JSON paths of NaN/Infinity numbers (JSON has none; Python writes them)
    foreign: tuple[str, ...] = ()  # JSON paths of Parquet values JSON has no form for (bytes, decimals, ...)


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in one row, with its full address: `line` 1-based (as editors count), `row` the
    0-based row index within the file (Row.index), both None for findings about a whole file or input."""

    file: str
    line: int | None
    row: int | None
    path: str
    rule: str
    severity: str  # "error" | "warning"
    message: str
    uuid: str | None = None
    template: str | None = None  # the row's template_metadata.template_id (findings are grouped by it)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickled as the constructor's arguments: a frozen slots dataclass's default state (a fields() walk on
        # dump, one object.__setattr__ call per field on load) costs twice as much, on every finding a worker
        # hands back or a run records for resume
        return (
            Finding,
            (
                self.file,
                self.line,
                self.row,
                self.path,
                self.rule,
                self.severity,
                self.message,
                self.uuid,
                self.template,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": display_name(self.file),
            "line": self.line,
            "row": self.row,
            "uuid": self.uuid,
            "template": self.template,
            "path": self.path,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
        }

    def render(self) -> str:
        name = display_name(self.file)
        loc = name if self.line is None else f"{name}:{self.line}"
        return f"{loc}: {self.path}: {self.severity}: {self.message} [{self.rule}]"
