"""`mcqa-prep rescore`: regrade verify requests / rollouts and explain disagreements."""

from __future__ import annotations

import os

import click

from ..grader import OVERRIDE_MODES
from ..policy import GradingPolicy
from ..rescore.rows import OUTPUT_SHAPES, SHAPE_FULL
from ..rescore.run import RescoreRequest
from ..runs import RunRequest
from .common import (
    FORMAT_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    fail,
    index_lines,
    note,
    report_error,
)
from .policy_opts import policy_from_options, policy_options


@click.command("rescore")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, allow_dash=True))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(allow_dash=False),
    help="Rescored JSONL: one row per input row, in input order (written atomically). With --engine ray: a "
    "directory of JSONL shards (in input order by name) plus summary.json.",
)
@click.option(
    "--rows",
    "rows_paths",
    multiple=True,
    type=click.Path(exists=True),
    help="Dataset rows (JSONL/Parquet/directory) to join rollouts that lack options, by prompt.",
)
@policy_options
@click.option(
    "--compare-policy",
    type=click.Path(exists=True, dir_okay=False),
    help="Also grade every row under this policy file and report rows whose reward differs.",
)
@click.option(
    "--compare-mode",
    type=click.Choice(OVERRIDE_MODES),
    help="Also extract with this mode (e.g. robust) and report format misses per template_id.",
)
@click.option(
    "--explain", is_flag=True, help="Add the deciding span and rejected candidates to metadata.grading."
)
@click.option(
    "--output-shape",
    type=click.Choice(OUTPUT_SHAPES),
    default=SHAPE_FULL,
    show_default=True,
    help="full: each input row with its grading added. grading: only the grading of each row (line, id, "
    "reward, extracted_answer, status, rule, contract), to join back by line or id; Parquet when the "
    "output is named *.parquet, else JSONL.",
)
@click.option(
    "--examples",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Example ids kept per summary bucket.",
)
@click.option("--fail-on-change", is_flag=True, help="Exit 1 when any recorded reward changed.")
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def rescore_command(
    input_path,
    output,
    rows_paths,
    compare_policy,
    compare_mode,
    explain,
    output_shape,
    examples,
    fail_on_change,
    resume,
    workers,
    fmt,
    quiet,
    engine,
    address,
    **policy_kw,
):
    """Regrade INPUT (JSONL verify requests or rollouts) with the bundled grader.

    Each output row is the input row with `reward`, `extracted_answer` and `expected_answer` set by this
    grader and `metadata.grading` saying why (status, mode, rule, grader version, contract, and the
    previously recorded reward when there was one). Rows that cannot be graded get reward 0 and status
    invalid_row; the run goes on and exits 1 at the end.

    \b
    Examples:
      mcqa-prep rescore verify_requests.jsonl -o rescored.jsonl
      mcqa-prep rescore rollouts.jsonl --rows train.jsonl -o rescored.jsonl --fail-on-change
      mcqa-prep rescore rollouts.jsonl --rows train.jsonl -o grades.parquet --output-shape grading
      mcqa-prep rescore rollouts.jsonl --rows prepared/ -o r.jsonl --compare-mode robust --format json
      mcqa-prep rescore /shared/rollouts/ --rows /shared/train.parquet --address auto -o /shared/out/
      mcqa-prep rescore /shared/rollouts/ --address auto -o /shared/out/ --resume  # after a failure
    """
    policy = policy_from_options(**policy_kw)
    other = GradingPolicy.from_file(compare_policy) if compare_policy else None
    how = engine_settings(workers, engine, address, resume)
    run = RunRequest((input_path,), output, progress=bar_factory(quiet), examples=examples, **how)
    request = RescoreRequest(run, policy, tuple(rows_paths), explain, other, compare_mode, output_shape)
    if how["engine"] == "ray":
        from ..rescore.shards import rescore_shards

        report, info = rescore_shards(request)
    else:
        for path, what in ((input_path, "INPUT"), (output, "--output")):
            if path != "-" and os.path.isdir(path):
                raise click.UsageError(f"{what} {path} is a directory (directories need --engine ray)")
        from .._perf import keep_freed_memory
        from ..rescore.run import rescore_run

        # This process is the command's own, not a user's: it keeps freed memory for the next chunk as the
        # workers do (with one worker the chunks run here, and glibc's trimming cost a fault per page)
        keep_freed_memory()
        report, info = rescore_run(request)
    if info.resumed and fmt != "json" and not quiet:
        note(f"resumed: {info.resumed} complete chunk(s) of an interrupted run reused")
    problem = None
    if report.invalid.count:
        problem = report_error(
            "invalid_rows",
            f"{report.invalid.count} row(s) could not be graded (status invalid_row); see the output",
        )
        if report.invalid_by_kind.get("no_options") and not rows_paths:
            problem["hint"] = (
                "rollouts do not repeat their options: pass --rows DATASET to join them by prompt"
            )
    elif fail_on_change and report.changed:
        problem = report_error(
            "rewards_changed", f"{report.changed} recorded reward(s) changed (--fail-on-change)"
        )
    if fmt == "json":
        emit_json(report.to_dict(), error=problem)
    else:
        _render_text(report)
    if problem is not None:
        fail(problem["message"] + (f"; {problem['hint']}" if problem["hint"] else ""))


def _render_text(report) -> None:
    d = report.to_dict()
    e = click.echo  # the report on stdout, as every command's (the rows go to -o, never to stdout)
    e(f"rescored {d['rows']} row(s) -> {d['output']}  (contract {d['contract'][:19]}…)")
    if d["mean_reward"] is not None:
        e(f"mean reward: {d['mean_reward']:.4f} over {d['graded']} graded row(s)")
    e("by status: " + ", ".join(f"{k}={v}" for k, v in d["by_status"].items()))
    e("by mode:   " + ", ".join(f"{k}={v}" for k, v in d["by_mode"].items()))
    j = d["join"]
    if j["dataset_prompts"] is not None:
        e(
            f"joined with dataset rows: {j['joined']}; not found: {j['not_found']['count']}"
            + _ex(j["not_found"])
        )
        for line in index_lines(j):
            e(line)
    a = d["agreement"]
    if a["recorded"]:
        e(
            f"recorded rewards: {a['recorded']}; unchanged {a['unchanged']['count']}, "
            f"0->1 {a['0->1']['count']}, 1->0 {a['1->0']['count']}"
        )
        for k in ("0->1", "1->0"):
            if a[k]["count"]:
                e(f"  {k}: " + ", ".join(a[k]["examples"]))
    if d["invalid_rows"]["count"]:
        e(f"invalid rows: {d['invalid_rows']['count']}" + _ex(d["invalid_rows"]))
    if d["values_written_as_null"]["count"]:
        e(
            "rows with NaN/Infinity or bytes written as null (listed in metadata.grading): "
            f"{d['values_written_as_null']['count']}" + _ex(d["values_written_as_null"])
        )
    if d["input_contracts"]:
        e(
            "input rows already graded under: "
            + ", ".join(f"{k} ({v})" for k, v in d["input_contracts"].items())
        )
    if "compare_policy" in d:
        c = d["compare_policy"]
        e(
            f"compare policy {c['contract'][:19]}…: same {c['same']}; "
            + ", ".join(f"{k} {v['count']}" for k, v in c["differ"].items())
        )
        for k, v in c["differ"].items():
            e(f"  {k}: " + ", ".join(v["examples"]))
    if "compare_mode" in d:
        c = d["compare_mode"]
        e(f"format misses (reward 0, but {c['mode']} reads the gold letter): {c['format_misses']}")
        for t, v in c["per_template"].items():
            e(f"  {t}: {v['format_misses']} of {v['rows']} rows; e.g. " + ", ".join(v["examples"]))


def _ex(bucket) -> str:
    return f" (e.g. {', '.join(bucket['examples'])})" if bucket["examples"] else ""
