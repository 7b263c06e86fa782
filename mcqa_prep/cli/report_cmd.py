"""`mcqa-prep report`: one offline HTML page with plots for datasets and rescored files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..io.paths import check_output
from ..passrates.positions import describe, rstd_text
from ..report import build_report, write_html
from ..runs import RunRequest
from .common import (
    ALLOW_STALE_OPTION,
    FORMAT_OPTION,
    NO_VERIFY_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    stale_warnings,
)


@click.command("report")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path())
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="The HTML page to write, atomically ('-' for stdout). Required unless --format json.",
)
@click.option("--title", default=None, help="The page's title.  [default: mcqa-prep report]")
@click.option(
    "--examples",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Examples kept per finding rule, agreement cell and template.",
)
@NO_VERIFY_OPTION
@click.option(
    "--pass-rates",
    "pass_rates",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    metavar="TABLE",
    help="A pass-rate table (repeatable): one section per model, broken down by source dataset and --by "
    "columns, with pass@k/majority@k and example prompts/responses per difficulty bucket. Tables of one "
    "contract and counting rule are pooled; others get their own sections.",
)
@click.option(
    "--by",
    multiple=True,
    metavar="COLUMN",
    help="Also break the pass rates down by this column of the dataset rows (subject, category, a dotted path; "
    "repeatable). The source dataset is always one.",
)
@click.option(
    "--audit",
    "audits",
    metavar="FILE",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="An audit document (`mcqa-prep audit DATA -o FILE`), shown as a section beside the datasets.",
)
@click.option(
    "--drift",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False),
    metavar="BEFORE AFTER",
    default=None,
    help="Two pass-rate tables (passrates.v3, one model each, one contract), e.g. before and after training: "
    "a section with the pass rate by gold position of both (the letter prior's drift) and their consistent "
    "rates.",
)
@ALLOW_STALE_OPTION
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def report_command(
    paths, output, title, examples, no_verify, pass_rates, by, audits, drift, allow_stale,
    workers, engine, address, resume, fmt, quiet,
):  # fmt: skip
    """Write one offline HTML page with plots for datasets and rescored files; --format json gives the numbers.

    PATH is a dataset (JSONL or Parquet file, directory, pulled or prepared directory, - for stdin) or a
    rescored JSONL file (rows with metadata.grading, as `mcqa-prep rescore` writes them); a file is taken
    as rescored when its first readable row carries metadata.grading. Rows under different grading
    contracts get separate sections and are never pooled.

    The rows are read on the row engine, as `validate` reads them (--workers, --engine, --address,
    --resume): the document is the same for any number of workers and on either engine. Stdin or a pipe,
    and a report with --pass-rates, are read in one process.

    The page is one file that opens offline: plots are inline SVG, styles and its one script inline, and
    the numbers behind every plot are embedded. --format json prints that same document on stdout (with -o,
    the page is written too, from the same document). Validation findings do not change the exit code: use
    `mcqa-prep validate` to gate.

    \b
    Examples:
      mcqa-prep report data/train.jsonl data/validation.parquet -o report.html
      mcqa-prep report prepared/ rescored.jsonl -o report.html --title "run 42"
      mcqa-prep report rescored-a.jsonl rescored-b.jsonl --format json > report.json
      mcqa-prep report prepared/ rescored.jsonl --pass-rates t.jsonl --by subject -o report.html
      mcqa-prep audit train.jsonl --against mmlu/ -o audit.json
      mcqa-prep report train.jsonl --audit audit.json -o report.html
      mcqa-prep report permuted/ --pass-rates after.jsonl --drift before.jsonl after.jsonl -o report.html
    Exit codes: 0 report written, 1 inputs unreadable (nothing read), 2 usage error.
    """
    for p in paths:
        if p != "-" and not Path(p).exists():
            raise click.BadParameter(f"{p}: no such file or directory", param_hint="PATH")
    if paths.count("-") > 1:
        raise click.BadParameter("'-' (stdin) can be given once", param_hint="PATH")
    if output is None and fmt != "json":
        raise click.UsageError("give -o FILE for the HTML page (or --format json for the numbers)")
    if output == "-" and fmt == "json":
        raise click.UsageError("-o - and --format json both write to stdout; give -o FILE for the page")
    if by and not pass_rates:
        raise click.UsageError("--by breaks pass rates down: add --pass-rates TABLE")
    if output is not None:
        check_output(output, [*paths, *pass_rates, *audits, *(drift or ())])
    doc = build_report(
        paths,
        examples=examples,
        verify=not no_verify,
        progress=bar_factory(quiet),
        title=title,
        pass_rates=pass_rates,
        by=by,
        audits=audits,
        drift=tuple(drift) if drift else None,
        allow_stale=allow_stale,
        run=RunRequest(tuple(paths), **engine_settings(workers, engine, address, resume)),
    )
    for line in stale_warnings(doc.get("stale_preparations", [])):
        click.echo(line, err=True)
    if no_verify:
        for i in doc["inputs"]:
            if i["kind"] == "pulled":
                click.echo(
                    f"warning: {i['argument']}: --no-verify: the files were not checked against "
                    "mcqa-prep.lock.json",
                    err=True,
                )
                break
    size = write_html(doc, output) if output is not None else None
    if fmt == "json":
        emit_json(doc)
        return
    for line in summary_lines(doc, output, size):
        click.echo(line, err=output == "-")


def _n(v: Any) -> str:
    return "not checked" if v is None else f"{v:,}"


def summary_lines(doc: dict[str, Any], output: str, size: int | None) -> list[str]:
    """What was written, then one line per section."""
    kb = f"{(size or 0) / 1024:,.0f} KB"
    lines = [
        f"wrote {output} ({kb}): {len(doc['sections'])} section(s) from {len(doc['inputs'])} input file(s), "
        f"{doc['distinct_contracts']} grading contract(s)"
    ]
    for s in doc["sections"]:
        m = s["summary"]
        contract = (s["contract"] or "")[:19] + "…" if s["contract"] else "no contract"
        if s["kind"] == "audit":
            lines.append(
                f"  audit: {m['rows']:,} rows; contaminated {_n(m['contaminated_rows'])}, duplicates "
                f"{_n(m['duplicate_rows'])} ({_n(m['cross_split_duplicates'])} across splits), wrong keys "
                f"{_n(m['wrong_keys'])}"
            )
        elif s["kind"] == "passrates":
            rate = "n/a" if m["mean_pass_rate"] is None else f"{m['mean_pass_rate']:.4f}"
            lines.append(
                f"  pass rates of {m['model']} ({contract}): {m['questions']:,} question(s), mean pass rate {rate}, "
                f"{m['rows_matched']:,} dataset row(s) matched"
            )
            lines += [f"    {x}" for x in describe(m["positions"])]
        elif s["kind"] == "drift":
            d = m["drift"]
            lines.append(
                f"  letter-prior drift {m['before']['model']} -> {m['after']['model']}: RStd by option count "
                f"{rstd_text(d['rstd_before'])} -> {rstd_text(d['rstd_after'])}, consistent {d['consistent_before']} -> {d['consistent_after']}, largest "
                f"change by gold position {d['largest_change']}"
            )
        elif s["kind"] == "dataset":
            bias = ", ".join(m["position_bias"]["flagged"]) or "none"
            lines.append(
                f"  dataset ({contract}): {m['rows']:,} rows, {m['errors']:,} error(s), {m['warnings']:,} "
                f"warning(s), position bias: {bias}"
            )
        else:
            mean = "n/a" if m["mean_reward"] is None else f"{m['mean_reward']:.4f}"
            lines.append(
                f"  rescored ({contract}): {m['rows']:,} rows, mean reward {mean}, {m['changed']:,} changed "
                f"reward(s), {m['format_misses']:,} format miss(es)"
            )
    for i in doc["inputs"]:
        if i["error"]:
            lines.append(f"  unreadable: {i['error']}")
    return lines
