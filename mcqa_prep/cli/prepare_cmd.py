"""`mcqa-prep prepare`, `verify` and `contract`: stamped preparations and their checks."""

from __future__ import annotations

import json
import os

import click

from ..errors import InputError, InvalidRows
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..policy import canonical_json
from ..prepare.run import DEFAULT_SHARD_ROWS, PrepareReport, prepare
from ..prepared.verify import verify_prepared
from ..runs import RunRequest
from .audit_opts import CONTAMINATION_KWARGS, contamination_from_options, contamination_options
from .common import (
    FORMAT_OPTION,
    MAX_SHOWN_OPTION,
    NO_VERIFY_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    regex_timeout_option,
)
from .difficulty_opts import DIFFICULTY_KWARGS, difficulty_from_options, difficulty_options
from .errors import describe, hint
from .findings_view import group_lines, more_line
from .permute_opts import PERMUTE_KWARGS, permute_from_options, permute_options
from .policy_opts import policy_from_options, policy_options

TEXT_KEPT = 1  # findings kept for the text output: it shows the groups (each carries its example)


@click.command("prepare")
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Output directory (created, reused when up to date, refused when stale).",
)
@policy_options
@click.option(
    "--split",
    help="Split for every input (default: from file names: train, validation, ...). "
    "For a pulled directory: prepare only this split.",
)
@click.option(
    "--shard-rows",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_ROWS,
    show_default=True,
    help="Rows per output shard.",
)
@click.option("--output-format", type=click.Choice(["jsonl", "parquet"]), default="jsonl", show_default=True)
@click.option(
    "--on-invalid",
    type=click.Choice(["fail", "reject"]),
    default="fail",
    show_default=True,
    help="fail: any invalid row -> exit 1, nothing written. reject: invalid rows go to rejects.jsonl.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing (stale) preparation atomically.")
@NO_VERIFY_OPTION
@click.option(
    "--runtime",
    type=click.Choice(["nemo-gym"]),
    default=None,
    help="The runtime that will grade the rows: nemo-gym (stock NeMo Gym 0.7.0) refuses a contract it cannot "
    "honour and rejects rows its request model refuses. Default: manifest.json records which runtimes can "
    "honour the contract, and one warning line says when stock NeMo Gym cannot.",
)
@click.option(
    "--repair-regexes",
    "repair_regexes",
    is_flag=True,
    help="Keep rows whose template output_regex misgrades ordinary prose (validate rule regex_audit): write "
    "the audit's fix (a case-sensitive option-letter class, anchored) in its place and record the original "
    "in metadata.mcqa_prep.repaired. A regex without a fix stays invalid; edge cases (regex_audit_edge) are "
    "left as they are. Another setting is another preparation.",
)
@regex_timeout_option(DEFAULT_REGEX_TIMEOUT)
@difficulty_options
@click.option(
    "--decontaminate-against",
    "decontaminate_against",
    metavar="BENCH",
    multiple=True,
    type=click.Path(exists=True),
    help="Drop the rows that hold a question of this benchmark file or directory (as `mcqa-prep audit "
    "--against` finds them; counted as dropped, reason contaminated); repeatable.",
)
@contamination_options
@permute_options
@MAX_SHOWN_OPTION
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def prepare_command(
    inputs,
    out_dir,
    split,
    shard_rows,
    output_format,
    on_invalid,
    overwrite,
    no_verify,
    runtime,
    repair_regexes,
    regex_timeout,
    decontaminate_against,
    max_shown,
    workers,
    engine,
    address,
    resume,
    fmt,
    quiet,
    **policy_kw,
):
    """Validate INPUT rows, stamp the grading contract and write shards + manifest.json to OUTPUT.

    INPUT is a JSONL or Parquet file, a directory of them, or a pulled directory. Every row is validated;
    options are normalised, grading fields made explicit and metadata.mcqa_prep records the contract id and
    the row's source. Writes are atomic: OUTPUT is either the previous state or a complete preparation.

    \b
    Cache rules: same contract and inputs -> "up to date" (hashes verified, nothing rewritten);
    another contract, other inputs or settings -> refused (exit 1) naming what differs;
    a directory without a valid manifest -> refused. --overwrite replaces atomically.

    \b
    Difficulty (docs/design/passrates.md): --pass-rates TABLE (from `mcqa-prep passrates`, measured under this
    preparation's contract, else refused) with --keep-pass-rate LO:HI, --drop-solved, --drop-unsolved
    drops rows by pass rate; --no-evidence keep|drop decides for rows the table does not know. Dropped
    rows are counted by reason in manifest.json; another table or threshold is another preparation.

    \b
    Runtime: stock NeMo Gym 0.7.0 honours a contract only when it would grade every row identically (no
    final-answer selection, no truncation gate, its own modes); `mcqa-prep serve` honours every contract.
    --runtime nemo-gym refuses the others up front, naming the setting.

    \b
    Template regexes: a row whose output_regex reads an option letter out of ordinary prose ("Answer:
    because C..." graded B) is invalid (validate rule regex_audit), as are most of NeMo Gym 0.7.0's shipped
    templates; --repair-regexes writes the audit's fix in its place instead (counted by template in
    manifest.json; the original kept in each row's stamp).

    \b
    Decontamination (docs/design/audit.md): --decontaminate-against BENCH drops every row holding a question of
    the benchmark files (exact, shared 13-grams, or a MinHash near-duplicate; --contamination-* thresholds),
    counted as dropped (contaminated); the manifest records each benchmark's sha256 and the thresholds, and
    another benchmark set or threshold is another preparation.

    \b
    Option orders (docs/design/prepare.md): --permute K writes each row as K option orders (rotation: every gold
    position once with K >= the option count; random), seeded per question, anchored options in place,
    each order a complete row checked by every row rule; the settings are part of the preparation.

    \b
    Examples:
      mcqa-prep prepare Nemotron-RL-knowledge-mcqa -o prepared/ --repair-regexes --on-invalid reject
      mcqa-prep prepare train.jsonl -o prepared/ --runtime nemo-gym
      mcqa-prep prepare train.jsonl validation.jsonl -o prepared/ --on-invalid reject
      mcqa-prep prepare data/ -o prepared/ --policy policy.json --final-answer-only
      mcqa-prep prepare train.jsonl -o prepared/ --pass-rates t.jsonl --drop-solved --drop-unsolved
      mcqa-prep prepare train.jsonl -o prepared/ --pass-rates t.jsonl --keep-pass-rate 0.1:0.9 --model org/m
      mcqa-prep prepare train.jsonl -o prepared/ --stamp-reward-profiles t.jsonl
      mcqa-prep prepare rows/ -o p/ --upstream-pass-rates --model openai/gpt-oss-120b --drop-solved
      mcqa-prep prepare train.jsonl -o prepared/ --decontaminate-against mmlu/ --decontaminate-against gpqa.csv
      mcqa-prep prepare train.jsonl -o permuted/ --permute 4 --permute-seed 7
    """
    permute = permute_from_options(**{k: policy_kw.pop(k) for k in PERMUTE_KWARGS})
    request = difficulty_from_options(**{k: policy_kw.pop(k) for k in DIFFICULTY_KWARGS})
    bench_mapping, bench_settings = contamination_from_options(
        **{k: policy_kw.pop(k) for k in CONTAMINATION_KWARGS}
    )
    decontaminate = None
    if decontaminate_against:
        from ..audit.decontaminate import DecontaminationRequest

        decontaminate = DecontaminationRequest(tuple(decontaminate_against), bench_mapping, bench_settings)
    policy = policy_from_options(**policy_kw)
    if no_verify:
        click.echo(
            "warning: --no-verify: pulled directories are not checked against their lock; their files are "
            "recorded as plain inputs (own sha256, no repo/commit provenance)",
            err=True,
        )
    try:
        report = prepare(
            list(inputs),
            out_dir,
            policy,
            split=split,
            shard_rows=shard_rows,
            output_format=output_format,
            on_invalid=on_invalid,
            overwrite=overwrite,
            regex_timeout=regex_timeout,
            run=RunRequest(tuple(inputs), out_dir, **engine_settings(workers, engine, address, resume)),
            progress=bar_factory(quiet),
            verify=not no_verify,
            difficulty=request,
            runtime=runtime,
            repair_regexes=repair_regexes,
            decontaminate=decontaminate,
            permute=permute,
            findings_kept=0 if fmt == "json" else TEXT_KEPT,
        )
    except (InvalidRows, InputError) as exc:
        if exc.details.get("finding_groups") is not None:  # about the rows: say what is wrong with them
            _refused(exc, out_dir, fmt, max_shown)
        raise
    _warn_runtime(report, out_dir, runtime)
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        _render_text(report, out_dir, max_shown)


def _refused(exc: InvalidRows | InputError, out_dir: str, fmt: str, max_shown: int) -> None:
    """A run that wrote nothing because of its rows: the remedy, then the findings by rule and template (the
    one-line error follows); with --format json the document with every finding."""
    groups = exc.details["finding_groups"]
    counts = exc.details.get("counts") or {}
    if fmt == "json":
        doc = {
            "out_dir": out_dir,
            "status": "failed",
            "counts": counts,
            "finding_groups": groups,
            "rejected": [f.to_dict() for f in getattr(exc, "findings", [])],
        }
        emit_json(
            doc, error={k: v for k, v in describe(exc).items() if k not in ("findings", "finding_groups")}
        )
        return
    if not groups:
        return
    remedy = hint(exc)
    if remedy:
        click.echo(f"what to do: {remedy}", err=True)
    click.echo(
        f"{counts.get('rejected', 0):,} invalid row(s) of {counts.get('read', 0):,}, nothing written; findings by "
        "rule and template:",
        err=True,
    )
    for line in group_lines(groups, max_shown):
        click.echo(line, err=True)


def _warn_runtime(report: PrepareReport, out_dir: str, runtime: str | None) -> None:
    """One line when stock NeMo Gym cannot honour the preparation and no runtime was asked for."""
    gym = (report.runtimes or {}).get("nemo-gym") or {}
    if runtime is None and gym.get("honours") is False:
        click.echo(
            f"warning: stock NeMo Gym 0.7.0 cannot honour this preparation's contract ({'; '.join(gym['why_not'])}): "
            f"serve it with `mcqa-prep serve --prepared {out_dir}` (or `mcqa-prep gym-component`)",
            err=True,
        )


def _render_text(report: PrepareReport, out_dir: str, max_shown: int) -> None:
    c = report.counts
    if report.status == "up_to_date":
        repaired = f"; {c['repaired']} with a repaired output_regex" if c.get("repaired") else ""
        click.echo(
            f"{out_dir}: up to date (contract {report.contract_id}; {c['written']} rows{repaired}; hashes verified)"
        )
        _echo_difficulty(report.difficulty, c)
        _echo_decontamination(report.decontamination, c)
        return
    if report.finding_groups:
        click.echo("findings by rule and template (rejected rows: errors; written rows: warnings):", err=True)
        for line in group_lines(report.finding_groups, max_shown):
            click.echo(line, err=True)
    splits = ", ".join(f"{sp}: {v['rows']} rows in {v['shards']} shard(s)" for sp, v in report.splits.items())
    click.echo(f"{out_dir}: {report.status} ({splits or 'no rows'})")
    click.echo(f"contract {report.contract_id}")
    line = f"read {c['read']}, written {c['written']}, rejected {c['rejected']}"
    if c["rejected"]:
        line += (
            " ("
            + ", ".join(f"{r}: {n}" for r, n in c["rejected_by_rule"].items())
            + f"; see {os.path.join(out_dir, 'rejects.jsonl')})"
        )
    if c["rows_with_warnings"]:
        line += f", {c['rows_with_warnings']} with warnings"
    click.echo(line)
    _echo_permutation(c)
    _echo_repairs(report, c, max_shown)
    _echo_difficulty(report.difficulty, c)
    _echo_decontamination(report.decontamination, c)


def _echo_permutation(counts) -> None:
    """What --permute wrote: questions, the orders written for them, and why some have fewer."""
    p = counts.get("permutation")
    if p is None:
        return
    by = ", ".join(f"{n} with {k}" for k, n in p["by_variants"].items())
    fewer = ", ".join(f"{why}: {n}" for why, n in p["fewer_orders"].items())
    click.echo(
        f"option orders: {p['variants']} row(s) for {p['questions']} question(s) ({by or 'none'}); "
        f"anchored options kept in place in {p['anchored_questions']}"
        + (f"; fewer orders than asked: {fewer}" if fewer else "")
    )


def _echo_decontamination(d, counts) -> None:
    """The decontamination line of the text report: rows dropped, against what."""
    if not d:
        return
    s = d["settings"]
    n_q = sum(b["questions"] for b in s["benchmarks"])
    click.echo(
        f"decontaminated against {len(s['benchmarks'])} benchmark file(s) ({n_q} question(s)): dropped "
        f"{d['evidence']['rows_dropped']} row(s)"
        + (f", e.g. {d['evidence']['examples'][0]}" if d["evidence"]["examples"] else "")
    )


def _echo_repairs(report: PrepareReport, counts, max_shown: int) -> None:
    """What --repair-regexes changed (by template, and the first repairs), or which rejects it would keep."""
    if "repaired" in counts:
        by = ", ".join(f"{t}: {n}" for t, n in counts["repaired_by_template"].items())
        click.echo(f"repaired the output_regex of {counts['repaired']} row(s)" + (f" ({by})" if by else ""))
        repairs = report.repairs or []
        for r in repairs if max_shown <= 0 else repairs[:max_shown]:
            who = f"template {r['template_id']!r}" if r["template_id"] else "output_regex"
            click.echo(
                f"  {who}: {json.dumps(r['output_regex'])} -> {json.dumps(r['repaired'])} ({r['rows']} row(s))"
            )
        if 0 < max_shown < len(repairs):
            click.echo("  " + more_line(len(repairs) - max_shown, "repair(s)", "manifest.json lists all"))
    if report.repairable:
        n, t = report.repairable["rows"], report.repairable["templates"]
        click.echo(
            f"note: {n} rejected row(s) of {t} template(s) have an output_regex the regex audit's fix repairs: "
            "--repair-regexes writes the fix in its place and keeps them (docs/design/prepare.md)",
            err=True,
        )


def _echo_difficulty(d, counts) -> None:
    """The pass-rate lines of the text report: evidence used, rows dropped by reason, rows stamped."""
    if not d:
        return
    s, ev = d["settings"], d["evidence"]
    if s["table"] is not None:
        click.echo(
            f"pass-rate table {d['table_path']} (sha256 {s['table']['content_sha256'][:16]}..., contract "
            f"{s['table']['contract_id']}, keyed by {s['table']['key_by']}): "
            f"{ev.get('table_questions_matched', 0)} of {ev.get('table_questions', 0)} question(s) matched"
        )
    f = s["filter"]
    if f is not None:
        what = "upstream reward_profiles (legacy: contract unknown)" if f["legacy_evidence"] else "table"
        lo, hi = f["keep_pass_rate"]
        on = {
            "mean": " (posterior mean)",
            "lower": " (lower credible bound)",
            "upper": " (upper credible bound)",
            "corrected-mean": " (chance-corrected posterior mean)",
            "corrected-lower": " (chance-corrected lower bound)",
            "corrected-upper": " (chance-corrected upper bound)",
            "consistent-mean": " (consistent posterior mean)",
            "consistent-lower": " (consistent lower bound)",
            "consistent-upper": " (consistent upper bound)",
        }
        rules = [f"keep {lo:g}..{hi:g}{on.get(f.get('keep_on'), '')}"] if (lo, hi) != (0, 1) else []
        rules += ["drop solved"] * f["drop_solved"] + ["drop unsolved"] * f["drop_unsolved"]
        rules.append(f"rows without evidence: {f['no_evidence']}")
        click.echo(
            f"pass-rate filter on {what}, model {f['model']}: {', '.join(rules)}; "
            f"evidence for {ev['rows_with_evidence']} row(s), none for {ev['rows_without_evidence']}"
        )
        by = ", ".join(f"{r}: {n}" for r, n in counts.get("dropped_by_reason", {}).items())
        click.echo(f"dropped {counts.get('dropped', 0)}" + (f" ({by})" if by else ""))
    if s["stamp_reward_profiles"]:
        click.echo(f"reward_profiles stamped on {ev.get('rows_stamped', 0)} row(s)")
    if s.get("stamp_blend_fields"):
        click.echo(
            f"blend fields (pass_rate, pass_rate_total, pass_rate_passed) of {s['stamp_blend_fields']['model']}"
        )


@click.command("verify")
@click.argument("directory", metavar="DIR", type=click.Path(exists=True, file_okay=False))
@policy_options
@FORMAT_OPTION
@QUIET_OPTION
def verify_command(directory, fmt, quiet, **policy_kw):
    """Check a prepared DIR: manifest, every file's hash and row count, every row's contract stamp.

    Without policy options the contract must be this installed grader's (same grader, selector and schema
    versions); with --policy or policy flags the whole contract must equal that policy's.

    \b
    Examples:
      mcqa-prep verify prepared/
      mcqa-prep verify prepared/ --policy policy.json        # the whole contract must be this policy's
      mcqa-prep verify prepared/ --final-answer-only --format json
    Exit codes: 0 verified, 1 a file, stamp or contract does not match (the line says which), 2 usage error.
    """
    policy = policy_from_options(none_if_unset=True, **policy_kw)
    report = verify_prepared(directory, policy, progress=bar_factory(quiet))
    if fmt == "json":
        emit_json(report.to_dict())
        return
    splits = ", ".join(f"{sp}: {v['rows']}" for sp, v in report.splits.items())
    click.echo(f"{directory}: ok ({report.files} files, {report.rows} rows; {splits or 'no rows'})")
    click.echo(f"contract {report.contract_id} (grader {report.grader_version})")


@click.command("contract")
@policy_options
@FORMAT_OPTION
@QUIET_OPTION
def contract_command(fmt, quiet, **policy_kw):
    """Print the effective grading contract and its id (what `prepare` stamps and `verify` compares).

    The contract is the grading policy (the built-in one, --policy FILE, and the policy flags on top) with
    the grader's and schemas' versions; its id is the sha256 of its canonical JSON.

    \b
    Examples:
      mcqa-prep contract                                     # this installation's default contract
      mcqa-prep contract --final-answer-only --reasoning-mode required
      mcqa-prep contract --policy policy.json --format json | jq -r .contract_id
    """
    policy = policy_from_options(**policy_kw)
    contract = policy.contract()
    cid = policy.contract_id()
    if fmt == "json":
        emit_json(
            {"contract_id": cid, "contract": contract, "canonical": canonical_json(contract).decode("utf-8")}
        )
        return
    click.echo(f"contract {cid}")
    click.echo(json.dumps(contract, indent=2, sort_keys=True, ensure_ascii=False))
