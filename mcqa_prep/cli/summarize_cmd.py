"""`mcqa-prep summarize`: aggregate rescored files without mixing grading contracts."""

from __future__ import annotations

from typing import Any

import click

from ..evidence import RATE_BINS_LEGEND
from ..rescore.summarize import summarize
from .common import FORMAT_OPTION, QUIET_OPTION, emit_json


@click.command("summarize")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--contract",
    "contract",
    metavar="ID",
    default=None,
    help="Pool only the rows graded under this contract id (needed when the files hold several).",
)
@FORMAT_OPTION
@QUIET_OPTION
def summarize_command(files: tuple[str, ...], contract: str | None, fmt: str, quiet: bool) -> None:
    """Aggregate rescored JSONL FILES: accuracy, statuses, per template_id and per-prompt pass rates.

    Per-prompt pass rates are also shown per model (responses_create_params.model, else response.model)
    and per template_id: prompts never / sometimes / always solved, and a histogram.

    Rows graded under different contracts (metadata.grading.contract) are never pooled: the command exits 1
    naming the contracts it found unless --contract selects one. Rows without metadata.grading
    are counted as unscored. Malformed lines (and scored rows whose reward is not a number in [0, 1]) are
    reported as FILE:LINE and counted. Accuracy is the mean reward over graded rows: rows rescore could not
    grade (status invalid_row) are counted, never in a mean or a pass rate, as rescore and report count them.

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


def render_text(report: dict[str, Any]) -> str:
    """The report for people."""
    out: list[str] = []
    acc = report["accuracy"]
    out.append(f"files: {', '.join(report['files'])}")
    out.append(f"contract: {report['contract'] or 'none'}")
    out.append(
        f"rows: {report['lines_read']} read, {report['scored']} scored, {report['unscored']} unscored"
        + (
            f", {report['excluded_other_contracts']} under other contracts"
            if report["excluded_other_contracts"]
            else ""
        )
        + (f", {report['malformed']['count']} malformed line(s)" if report["malformed"]["count"] else "")
    )
    invalid = f"; {report['invalid']} invalid_row, not graded" if report["invalid"] else ""
    out.append(
        "accuracy: "
        + ("n/a" if acc is None else f"{acc:.4f} ({report['reward_sum']:g}/{report['graded']} graded row(s))")
        + invalid
    )
    if report["recorded"]:
        out.append(f"recorded rewards: {report['recorded']}; changed {report['changed']}")
    if report["statuses"]:
        out.append("statuses: " + ", ".join(f"{k}={v}" for k, v in report["statuses"].items()))
    if report["gates"]:
        out.append("gates: " + ", ".join(f"{k}={v}" for k, v in report["gates"].items()))
    if report["boundaries"]:
        out.append("boundaries: " + ", ".join(f"{k}={v}" for k, v in report["boundaries"].items()))
    if report["templates"]:
        out.append("per template_id:")
        width = max(len(t) for t in report["templates"])
        for tid, t in report["templates"].items():
            out.append(f"  {tid:<{width}}  {t['rows']:>8} row(s)  accuracy {t['accuracy']:.4f}")
    pr = report["prompts"]
    if pr["count"]:
        d = pr["pass_rate"]
        out.append(
            f"prompts: {pr['count']}, mean pass rate {pr['mean_pass_rate']:.4f}; "
            f"0%: {d['0%']}, partial: {d['partial']}, 100%: {d['100%']}"
        )
    for title, groups in (
        ("model", report["pass_rates"]["by_model"]),
        ("template_id", report["pass_rates"]["by_template"]),
    ):
        if groups:
            out.append(f"pass rates per {title} (prompts; histogram {RATE_BINS_LEGEND}):")
            out.extend(_distribution_lines(groups))
    return "\n".join(out)


def _distribution_lines(groups: dict[str, Any]) -> list[str]:
    width = max(len(g) for g in groups)
    lines = []
    for name, d in groups.items():
        b = d["pass_rate"]
        lines.append(
            f"  {name:<{width}}  {d['questions']:>6} prompt(s)  mean {d['mean_pass_rate']:.4f}  "
            f"0%: {b['0%']}  partial: {b['partial']}  100%: {b['100%']}  |{' '.join(map(str, d['histogram']))}|"
        )
    return lines
