"""Helpers shared by command modules: error translation, output format, progress bars."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import click

from ..errors import McqaPrepError

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people (stderr/stdout), json for machines: exactly one JSON document on stdout.",
)

QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, help="No progress bars.")


class Failure(click.ClickException):
    """A data/contract/cache failure: message on stderr, exit code 1."""

    exit_code = 1


def translate_errors(fn):
    """Turn library errors into click errors with the library's exit code (1, or 2 for usage)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except McqaPrepError as exc:
            if exc.exit_code == 2:
                raise click.UsageError(str(exc)) from exc
            raise Failure(str(exc)) from exc

    return wrapper


def emit_json(doc: Any) -> None:
    click.echo(json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=False))


def progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def progress(iterable=None, *, total=None, desc: str = "", quiet: bool = False, unit: str = "row"):
    """A tqdm bar on stderr, shown only when stderr is a terminal and --quiet is off."""
    from tqdm import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        disable=not progress_enabled(quiet),
        file=sys.stderr,
        dynamic_ncols=True,
        leave=False,
    )
