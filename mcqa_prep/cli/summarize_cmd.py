"""`mcqa-prep summarize`: aggregate rescored files without mixing grading contracts."""

from __future__ import annotations

import click

from ..summarize import render_text, summarize
from .common import FORMAT_OPTION, emit_json


@click.command("summarize")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--contract",
    "contract",
    metavar="ID",
    default=None,
    help="Pool only the rows graded under this contract id (needed when the files hold several).",
)
@FORMAT_OPTION
def summarize_command(files: tuple[str, ...], contract: str | None, fmt: str) -> None:
    """Aggregate rescored JSONL FILES: accuracy, statuses, per template_id and per-prompt pass rates.

    Rows graded under different contracts (metadata.grading.contract) are never pooled: the command
    exits 1 naming the contracts it found unless --contract selects one. Rows without metadata.grading
    are counted as unscored. Malformed lines are reported as FILE:LINE and counted.

    \b
    Examples:
      mcqa-prep summarize rescored.jsonl
      mcqa-prep summarize run1.jsonl run2.jsonl --contract sha256:0f3c... --format json
    """
    report = summarize(files, contract=contract)
    if fmt == "json":
        emit_json(report)
        return
    for line in report["malformed"]["lines"]:
        click.echo(line, err=True)
    shown = len(report["malformed"]["lines"])
    if report["malformed"]["count"] > shown:
        click.echo(f"... and {report['malformed']['count'] - shown} more malformed line(s)", err=True)
    click.echo(render_text(report))
