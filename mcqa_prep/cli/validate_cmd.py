"""`mcqa-prep validate`: every defect of every row, with its address, rule and fix."""

from __future__ import annotations

from pathlib import Path

import click

from ..grader import DEFAULT_REGEX_TIMEOUT
from ..runs import RunRequest
from ..validate import ValidateReport, validate_paths
from .common import (
    FORMAT_OPTION,
    MAX_SHOWN,
    MAX_SHOWN_OPTION,
    NO_VERIFY_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    regex_timeout_option,
    report_error,
)
from .findings_view import group_lines

TEXT_KEPT = 1  # findings kept for the text output: it shows the groups (each carries its example)

REPAIR_NOTE = (
    "{n} row(s) fail regex_audit (their output_regex reads an option letter out of ordinary prose): "
    "`mcqa-prep prepare --repair-regexes` writes the fix each finding names in its place and keeps the rows "
    "(a regex without a fix stays an error; docs/design/prepare.md)"
)


def repair_note(summary) -> str | None:
    """The line that names prepare's remedy for regex_audit errors, or None when there are none."""
    n = summary["findings_by_rule"].get("regex_audit", 0)
    return REPAIR_NOTE.format(n=n) if n else None


def render_text(report: ValidateReport, max_shown: int = MAX_SHOWN) -> list[str]:
    """The remedy first, then the findings grouped by rule and template (count, fix, one example in compiler
    style: `file:line: $.path: severity: message [rule]`), then the summary."""
    s = report.summary
    lines: list[str] = []
    note = repair_note(s)
    if note:
        lines.append(note)
    groups = s["finding_groups"]
    if groups:
        lines.append(
            f"findings by rule and template: {s['errors']:,} error(s), {s['warnings']:,} warning(s) in "
            f"{len(groups):,} group(s)"
        )
        lines += group_lines(groups, max_shown)
    files = sum(1 for _ in s["inputs"])
    lines.append(
        f"{s['rows_read']} rows read from {files} input(s): {s['rows_with_errors']} with errors, "
        f"{s['rows_with_warnings']} with warnings only; {s['errors']} errors, {s['warnings']} warnings"
    )
    for inp in s["inputs"]:
        if inp["kind"] == "pulled":
            state = "verified against its lock" if inp["verified"] else "NOT verified (--no-verify)"
            lines.append(
                f"input {inp['path']}: pulled {inp['repo']}@{inp['commit']}, {state}, {inp['rows']} rows"
            )
    hist = s["expected_answer_histogram"]
    total = sum(hist.values())
    if total:
        exp = s["position_bias"]["expected"]
        cells = [
            f"{L} {n} ({100 * n / total:.1f}% vs {100 * exp.get(L, 0) / total:.1f}%)" for L, n in hist.items()
        ]
        lines.append(
            "expected_answer letters (share vs. the share if each row's gold were uniform over its offered "
            "letters): " + ", ".join(cells)
        )
        flagged = s["position_bias"]["flagged"]
        lines.append(
            "position bias: "
            + (", ".join(flagged) + " far over the uniform share" if flagged else "none")
            + f" (flagged when {s['position_bias']['rule']})"
        )
    verdict = "FAILED" if s["errors"] else "OK"
    strict = " (--strict: warnings count as errors)" if s["strict"] else ""
    lines.append(f"{verdict}: {s['errors']} error(s), {s['warnings']} warning(s){strict}")
    return lines


@click.command("validate")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path())
@click.option(
    "--max-findings",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Findings kept in the --format json document (0: every one; the summary counts and groups all).",
)
@MAX_SHOWN_OPTION
@click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 1 on any finding).")
@NO_VERIFY_OPTION
@regex_timeout_option(DEFAULT_REGEX_TIMEOUT)
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def validate_command(
    paths,
    max_findings,
    max_shown,
    strict,
    no_verify,
    regex_timeout,
    workers,
    engine,
    address,
    resume,
    fmt,
    quiet,
):
    """Check MCQA rows against the row schema and the semantic rules; report every problem with its address.

    PATH is a JSONL or Parquet file, a directory (searched recursively), a directory written by
    `mcqa-prep pull` (verified against its lock first), or - for stdin (JSONL).

    The text output groups the findings by rule and template (a bad template makes the same finding on
    every row it renders): each group's count, the rule's fix and one example, the largest first.
    --format json lists every finding.

    \b
    Each finding: file:line: $.json.path: severity: message [rule]   (rules: docs/design/validate.md)
    Exit codes: 0 no errors (warnings allowed), 1 any error, 2 usage error.

    \b
    Examples:
      mcqa-prep validate train.jsonl validation.parquet
      mcqa-prep validate mcqa-data/ --strict                 # a pulled directory; warnings fail too
      mcqa-prep validate rows/ --format json > report.json   # every finding, for machines
      cat rows.jsonl | mcqa-prep validate - --max-shown 0    # every group
    """
    for p in paths:
        if p != "-" and not Path(p).exists():
            raise click.BadParameter(f"{p}: no such file or directory", param_hint="PATH")
    if paths.count("-") > 1:
        raise click.BadParameter("'-' (stdin) can be given once", param_hint="PATH")
    report = validate_paths(
        paths,
        max_findings=max_findings if fmt == "json" else TEXT_KEPT,
        strict=strict,
        verify=not no_verify,
        progress=bar_factory(quiet),
        regex_timeout=regex_timeout,
        run=RunRequest(tuple(paths), **engine_settings(workers, engine, address, resume)),
    )
    for inp in report.summary["inputs"]:
        if inp["kind"] == "pulled" and not inp["verified"]:
            click.echo(
                f"warning: {inp['path']}: --no-verify: the files were not checked against mcqa-prep.lock.json; "
                "findings refer to whatever bytes are on disk",
                err=True,
            )
    if fmt == "json":
        s = report.summary
        error = (
            None
            if report.ok
            else report_error("invalid_rows", f"{s['errors']} error(s) in {s['rows_with_errors']} row(s)")
        )
        if error is not None:
            error["hint"] = repair_note(s)
        emit_json(report.to_dict(), error=error)
    else:
        for line in render_text(report, max_shown):
            click.echo(line)
    if not report.ok:
        click.get_current_context().exit(1)
