"""Helpers shared by command modules: output format, JSON output, progress bars, input/output checks."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..jsonsafe import json_safe
from ..progress import Progress
from ..records import displayed
from .errors import Failure

__all__ = [
    "FORMAT_OPTION",
    "MAX_SHOWN",
    "MAX_SHOWN_OPTION",
    "QUIET_OPTION",
    "NO_VERIFY_OPTION",
    "ALLOW_STALE_OPTION",
    "stale_warnings",
    "engine_options",
    "engine_settings",
    "cap_workers",
    "note",
    "regex_timeout_option",
    "Failure",
    "emit_json",
    "dumps_document",
    "report_error",
    "bar_factory",
    "fail",
]

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people, json for machines: exactly one JSON document on stdout (failures included).",
)

QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
NO_VERIFY_OPTION = click.option(
    "--no-verify",
    "no_verify",
    is_flag=True,
    help="For a pulled directory: skip checking its files against mcqa-prep.lock.json (the command warns).",
)

ALLOW_STALE_OPTION = click.option(
    "--allow-stale",
    "allow_stale",
    is_flag=True,
    help="Read a prepared directory made by another preparation or grader version instead of refusing it; "
    "the output says so. A damaged or edited preparation is refused all the same.",
)


def stale_warnings(stale: list[dict[str, Any]]) -> list[str]:
    """One warning line per preparation read under --allow-stale (the report's or audit's `stale_preparations`)."""
    return [f"warning: {s['path']}: --allow-stale: read although stale: {s['message']}" for s in stale]


def regex_timeout_option(default: float | None):
    """--regex-timeout, the same range in every command (a zero or negative bound is a usage error)."""
    return click.option(
        "--regex-timeout",
        type=click.FloatRange(min=0.01),
        default=default,
        show_default=default is not None,
        metavar="SECONDS",
        help="Seconds a custom output_regex may run on one text before it counts as catastrophic.",
    )


MAX_SHOWN = 10
MAX_SHOWN_OPTION = click.option(
    "--max-shown",
    type=click.IntRange(min=0),
    default=MAX_SHOWN,
    show_default=True,
    metavar="N",
    help="Entries listed per list in the text output (0: all); the rest is counted. --format json lists all.",
)


def engine_options(fn: Any) -> Any:
    """--workers, --engine, --address and --resume: how every row-parallel command runs (mcqa_prep.engine),
    declared once with one help each."""
    for option in reversed(
        [
            click.option(
                "--workers",
                "-j",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help="Worker processes [default: every core available]; with --engine ray, Ray workers (one CPU "
                "each) [default: every CPU of the cluster]. The output is the same for every N and either engine.",
            ),
            click.option(
                "--engine",
                type=click.Choice(["local", "ray"]),
                default=None,
                help="local [default]: worker processes on this machine. ray: Ray tasks on a cluster (--address, "
                "else RAY_ADDRESS, else a Ray instance started for this command; pip install 'mcqa-prep[ray]').",
            ),
            click.option(
                "--address",
                metavar="ADDRESS",
                default=None,
                help="The Ray cluster to run on (implies --engine ray): auto for the one `ray start --head` runs "
                "on this machine (Ray starts once for every command run on it), or HOST:PORT.",
            ),
            click.option(
                "--resume",
                is_flag=True,
                help="Continue an interrupted run of the same job (same settings, unchanged inputs) from its "
                "complete chunks; another job is refused. Without it, an interrupted run's chunks are discarded.",
            ),
        ]
    ):
        fn = option(fn)
    return fn


def engine_settings(
    workers: int | None, engine: str | None, address: str | None, resume: bool
) -> dict[str, Any]:
    """The RunRequest fields the engine options give (--address implies the Ray engine; --workers is capped
    at this machine's cores only for the local engine)."""
    if engine == "local" and address is not None:
        raise click.UsageError("--address names a Ray cluster: it needs --engine ray")
    engine = engine or ("ray" if address is not None else "local")
    return {
        "workers": cap_workers(workers) if engine == "local" else workers,
        "engine": engine,
        "address": address,
        "resume": resume,
    }


def note(message: str) -> None:
    """A note on stderr ("note: ..."): something the user may want to know that is neither a warning nor the
    report (a setting changed for them, a run resumed)."""
    click.echo(f"note: {message}", err=True)


def cap_workers(workers: int | None) -> int | None:
    """--workers N above the cores available to this process is capped there (more processes than cores only
    add start-up time and memory), with a one-line note on stderr; the same in every command."""
    if workers is None:
        return None
    from ..parallel import available_cores

    cores = available_cores()
    if workers <= cores:
        return workers
    note(f"--workers {workers} capped at {cores}, the cores available to this process")
    return cores


def dumps_document(doc: Any) -> str:
    """The text of the one JSON document: strict JSON (a NaN or Infinity that reached a report is written as
    null, never as `NaN`) that is valid UTF-8 (a file name that is not UTF-8 is written in its display form,
    `\\udcff`, as in every output: records.display_name)."""
    try:
        text = json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False)
        text.encode("utf-8")
    except ValueError:  # NaN/Infinity, or a lone surrogate (UnicodeEncodeError is a ValueError)
        text = json.dumps(json_safe(displayed(doc)), ensure_ascii=False, indent=2, allow_nan=False)
    return text


def emit_json(doc: dict[str, Any], *, error: dict[str, Any] | None = None) -> None:
    """Print the command's one JSON document, "ok" first and, for a report of a failed run, "error" (the
    same shape as the failure document); later failures then print no second document."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["mcqa_prep.json_emitted"] = True
    head: dict[str, Any] = {"ok": error is None}
    if error is not None:
        head["error"] = error
    click.echo(dumps_document({**head, **doc}))


def report_error(reason: str, message: str) -> dict[str, Any]:
    """The "error" of a report whose run finished but failed (exit 1): rows invalid, rewards changed."""
    return {"type": "Failure", "reason": reason, "message": message, "hint": None, "exit_code": 1}


def fail(message: str) -> None:
    """End the command with exit code 1 after its report was printed (e.g. rows could not be graded)."""
    raise Failure(message)


def progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


class NoBar:
    """The bar of a run that draws none (--quiet, or stderr not a terminal): counts nothing, shows nothing."""

    disable = True

    def __init__(self, total: float | None = None) -> None:
        self.total = total

    def update(self, n: float = 1) -> None:
        return None

    def close(self) -> None:
        return None


def bar_factory(quiet: bool, *, file: Any = None) -> Progress:
    """The one progress bar of every command, as the factory library functions take (mcqa_prep.progress): a
    tqdm bar on stderr, shown only when stderr is a terminal and --quiet is off (or on `file`, always: tests).
    It shows a count and a rate; given a total (or a total set later: `bar.total = n`), also the share done
    and the time left. Bytes are counted in KiB, MiB, ..."""

    def factory(*, total: float | None = None, desc: str = "", unit: str = "row") -> Any:
        if file is None and not progress_enabled(quiet):
            return NoBar(total)  # (tqdm's import and its lock cost tens of milliseconds of every run's start)
        from tqdm import tqdm

        return tqdm(
            total=total,
            desc=desc,
            unit=unit,
            unit_scale=unit == "B",
            unit_divisor=1024 if unit == "B" else 1000,
            disable=file is None and not progress_enabled(quiet),
            file=file if file is not None else sys.stderr,
            dynamic_ncols=True,
            leave=False,
        )

    return factory


def index_lines(join: dict[str, Any]) -> list[str]:
    """The `--rows` join index's account (rescore.RowIndex.summary) as report lines: rows read, prompts
    indexed, and the rows left out by reason with their first places."""
    from ..rescore.index import LEFT_OUT

    left = join["dataset_rows_left_out"]
    lines = [
        f"dataset rows: {join['dataset_rows_read']} read, {join['dataset_prompts']} prompts indexed"
        + (
            f" ({join['dataset_prompt_duplicates']} repeated prompts: the first row of each is used)"
            if join["dataset_prompt_duplicates"]
            else ""
        )
        + f", {left['count']} left out"
    ]
    for reason, b in left["by_reason"].items():
        lines.append(f"  {LEFT_OUT[reason]} ({reason}): {b['count']} (e.g. {'; '.join(b['examples'])})")
    c = join.get("dataset_prompt_conflicts") or {"count": 0}
    if c["count"]:
        lines.append(
            f"  prompts whose dataset rows disagree (two golds, ...): {c['count']}, their rollouts not joined "
            f"(ambiguous_join; e.g. {'; '.join(c['examples'])})"
        )
    return lines
