"""Imports every command module so that each registers itself on the `main` group."""

from . import convert_cmd, grade_cmd, prepare_cmd, pull_cmd, rescore_cmd, summarize_cmd, validate_cmd  # noqa: F401
