"""Loads the JSON Schemas shipped in schemas/ (package data), each compiled once per process."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import TYPE_CHECKING, Any

# jsonschema is imported where a document is validated (validator()), not here: not every run validates one,
# and its import costs tens of milliseconds of every command's start
if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

BASE_ID = "https://mcqa-prep.dev/schemas/"

# Schema names with their versions: the versions are part of every grading contract.
SCHEMA_FILES = {
    "row": "mcqa-row.v1.schema.json",
    "prepared_row": "prepared-row.v1.schema.json",
    "grading_policy": "grading-policy.v1.schema.json",
    "manifest": "manifest.v1.schema.json",
    "pull_lock": "pull-lock.v1.schema.json",
    "validate_report": "validate-report.v1.schema.json",
    "rescored_row": "rescored-row.v1.schema.json",
    "passrates": "passrates.v3.schema.json",
    "passrates_v2": "passrates.v2.schema.json",  # still read
    "passrates_v1": "passrates.v1.schema.json",  # still read
    "curriculum": "curriculum.v1.schema.json",
    "audit": "audit.v1.schema.json",
}


def schema_version(name: str) -> str:
    """'mcqa-row.v1' for 'row': the file name without '.schema.json'."""
    return SCHEMA_FILES[name].removesuffix(".schema.json")


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    ref = resources.files("mcqa_prep").joinpath("schemas", SCHEMA_FILES[name])
    return json.loads(ref.read_text(encoding="utf-8"))


@functools.cache
def validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def json_path(path) -> str:
    """jsonschema's deque path -> '$.options[2].A'."""
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out
