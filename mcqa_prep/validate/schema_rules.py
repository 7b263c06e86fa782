"""Rules on the input as documents: a file that cannot be read, an input with no row, a line that is not a
row, NaN/Infinity, values JSON has no form for, and mcqa-row.v1 violations.

jsonschema's iter_errors is the definition of a schema finding (every violation, with its address); it runs
only for rows that jsonschema-rs, compiled from the same schema file, does not accept (facts.schema_quiet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import schema
from ..grader.modes import ROW_MODES
from .facts import G_NONFINITE, G_SCHEMA, RowFacts
from .registry import ERROR, FILE, INPUT, Hit, rule

# Fix hints for schema violations, by the address of the offending value (indices written [*]).
_SCHEMA_HINTS = {
    "$": "each row must be a JSON object",
    "$.responses_create_params": 'give the prompt as {"input": [{"role": "user", "content": "..."}]}',
    "$.responses_create_params.input": 'give the prompt as "input": [{"role": "user", "content": "..."}]',
    "$.responses_create_params.input[*]": 'each input message is an object {"role": "user", "content": "..."}',
    "$.responses_create_params.input[*].role": 'the role is a string, "user"',
    "$.responses_create_params.input[*].content": "the content is the prompt text (a string) or a list of parts",
    "$.options": 'give the options as a list of single-key objects, e.g. [{"A": "text"}, {"B": "text"}]',
    "$.options[*]": 'each option is an object holding one letter and its text, e.g. {"A": "text"}',
    "$.options[*].*": "option texts are strings (null only for the absent letters of the Parquet shape)",
    "$.expected_answer": 'set it to the gold option letter, e.g. "B"',
    "$.grading_mode": "use one of " + ", ".join(ROW_MODES) + ", or leave it out",
    "$.template_metadata": "template_metadata is an object (or null / absent)",
    "$.template_metadata.output_regex": (
        "NeMo Gym 0.7.0 crashes on it: give a pattern string or a non-empty list of pattern strings, "
        "or remove the key"
    ),
    "$.template_metadata.answer_prefix": "answer_prefix is a string (or null)",
    "$.template_metadata.template_id": "template_id is a string (or null)",
    "$.template_metadata.template_prompt": "template_prompt is a string (or null)",
    "$.uuid": "use a string id",
    "$.reward_profiles": "reward_profiles is a list of objects (or null)",
    "$.reward_profiles[*]": "each reward profile is an object",
}
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    return _JSON_TYPES.get(type(v), type(v).__name__)


@rule(
    "unreadable_file",
    ERROR,
    "a file that cannot be read at all (e.g. a broken Parquet footer); other files are still checked",
    "re-create or re-download the file",
    scope=FILE,
)
def unreadable_file(exc: Exception) -> Iterator[Hit]:
    yield (), f"{exc}; the file was skipped"


@rule(
    "no_rows",
    ERROR,
    "the inputs hold no row at all (empty files, an empty directory of data files): nothing was validated",
    "check the paths; give files that hold rows",
    scope=INPUT,
)
def no_rows(rows_read: int) -> Iterator[Hit]:
    if rows_read == 0:
        yield (), "the inputs hold no row: nothing to validate, so nothing is known to be valid"


@rule(
    "malformed_row",
    ERROR,
    "a line that is not valid JSON or UTF-8, or a JSON value that is not an object; the next lines are "
    "still checked",
    "fix or remove the line",
)
def malformed_row(f: Any) -> Iterator[Hit]:
    """Run by the row checker on a Row without data (f is the Row)."""
    yield (), f"{f.error or 'no data'}; fix or remove this line (the other lines are still checked)"


@rule(
    "non_finite_number",
    ERROR,
    "a NaN or Infinity number anywhere in the row: JSON has none, so the row cannot be written as JSON "
    "(prepare rejects it)",
    "replace it with null or a finite number",
    guard=G_NONFINITE,
)
def non_finite_number(f: RowFacts) -> Iterator[Hit]:
    for path in f.row.nonfinite:  # already rendered by the reader
        yield (
            path,
            (
                "NaN/Infinity is not a JSON number: no JSON writer (NeMo Gym's, prepare's) can write this row; "
                "replace it with null or a finite number"
            ),
        )


@rule(
    "non_json_value",
    ERROR,
    "a value read from Parquet that JSON has no form for (bytes, a decimal, a duration): no JSON writer can "
    "write the row (prepare rejects it)",
    "store it as a string or a number in the Parquet file, or drop the column",
    guard=G_NONFINITE,
)
def non_json_value(f: RowFacts) -> Iterator[Hit]:
    for path in f.row.foreign:  # found by the reader in the Parquet batch
        yield (
            path,
            "JSON has no form for this value (bytes, a decimal or a duration): no JSON writer can write it",
        )


@rule(
    "schema",
    ERROR,
    "a violation of mcqa-row.v1: a missing required field (`responses_create_params.input`, `options`, "
    "`expected_answer`), a wrong type (option text not a string, `expected_answer` not a string, "
    "`output_regex` null / a number / an empty list / a list with a non-string, ...)",
    "the message names the expected type and the shape to use",
    guard=G_SCHEMA,
)
def schema_rule(f: RowFacts) -> Iterator[Hit]:
    yield from schema_findings(f.d)


def _hint_key(path: list) -> str:
    """'$.options[*].*' for ['options', 2, 'A']: the address with indices (and option letters) generalised."""
    if len(path) >= 3 and path[0] == "options":
        return "$.options[*].*"
    return "$" + "".join("[*]" if isinstance(p, int) else f".{p}" for p in path)


def schema_findings(d: Any) -> Iterator[Hit]:
    """(path, message) for every mcqa-row.v1 violation of `d`, in document order."""
    errors = sorted(schema.validator("row").iter_errors(d), key=lambda e: [str(p) for p in e.absolute_path])
    for err in errors:
        path = list(err.absolute_path)
        kw = err.validator
        if kw == "required":
            # one error per missing property; jsonschema names it only in the message ("'x' is a required ...")
            absent = [
                k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance
            ]
            missing = next(
                (k for k in absent if err.message.startswith(repr(k))), absent[0] if absent else "?"
            )
            path.append(missing)
            msg = f"missing required field '{missing}'"
        elif kw == "type":
            want = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
            msg = f"must be {' or '.join(want)}, got {json_type(err.instance)}"
        elif kw == "minProperties":
            msg = "an empty option object"
        elif kw == "minItems":
            msg = f"must not be empty (at least {err.validator_value} item)"
        elif kw == "anyOf" and path[-2:] == ["template_metadata", "output_regex"]:
            yield from _output_regex_hits(path, err.instance)
            continue
        else:
            msg = err.message
        hint = _SCHEMA_HINTS.get(_hint_key(path))
        yield tuple(path), f"{msg}; {hint}" if hint else msg


def _output_regex_hits(path: list, inst: Any) -> Iterator[Hit]:
    hint = _SCHEMA_HINTS["$.template_metadata.output_regex"]
    if isinstance(inst, list) and inst:
        for k, item in enumerate(inst):  # address each pattern that is not a string
            if not isinstance(item, str):
                yield (*path, k), f"a pattern must be a string, got {json_type(item)}; {hint}"
        return
    got = "an empty list" if inst == [] else json_type(inst)
    yield (
        tuple(path),
        f"must be a string, a non-empty list of strings (or an object, whose keys NeMo Gym reads as the patterns), got {got}; {hint}",
    )
