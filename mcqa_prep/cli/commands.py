"""Imports every command module so that each registers itself on the `main` group."""

from . import grade_cmd, rescore_cmd  # noqa: F401
