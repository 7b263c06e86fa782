"""`mcqa-prep audit`: contamination, duplicates, wrong keys and position bias, found before training."""

from __future__ import annotations

from typing import Any

import click

from ..io.paths import check_output
from ..passrates.positions import describe, rstd_text
from ..runs import RunRequest
from .audit_opts import CONTAMINATION_KWARGS, contamination_from_options, contamination_options
from .common import (
    ALLOW_STALE_OPTION,
    FORMAT_OPTION,
    MAX_SHOWN_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    fail,
    report_error,
    stale_warnings,
)
from .policy_opts import POLICY_KWARGS, policy_from_options, policy_options


@click.command("audit")
@click.argument("data", metavar="DATA...", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--against",
    "against",
    metavar="BENCH",
    multiple=True,
    type=click.Path(exists=True),
    help="A benchmark file or directory (any layout convert reads: its presets, or --bench-map); repeatable.",
)
@contamination_options
@click.option(
    "--no-duplicates", is_flag=True, help="Skip the duplicate index (memory then stays flat as rows grow)."
)
@click.option(
    "--dup-similarity",
    type=click.FloatRange(0.05, 1.0),
    default=0.7,
    show_default=True,
    metavar="X",
    help="Near-duplicate rows: estimated Jaccard similarity of their word pairs.",
)
@click.option(
    "--rollouts",
    metavar="R",
    multiple=True,
    type=click.Path(exists=True),
    help="Rollouts of these rows (raw, as NeMo Gym writes them, or rescored): wrong keys and answer-letter bias.",
)
@policy_options
@click.option("--contract", metavar="ID", help="Use only the rollouts graded under this contract id.")
@click.option("--model", "default_model", metavar="NAME", help="Model of the rollouts that name none.")
@click.option(
    "--key-by",
    type=click.Choice(["prompt", "uuid"]),
    default="prompt",
    show_default=True,
    help="prompt: rollouts of one rendered prompt (letters compare within one option order); uuid: every "
    "rendering of a question pooled.",
)
@click.option("--min-rollouts", type=click.IntRange(min=1), default=4, show_default=True, metavar="N",
              help="Rollouts a row needs before its key is judged.")  # fmt: skip
@click.option(
    "--min-agreement",
    type=click.FloatRange(0.05, 1.0),
    default=0.8,
    show_default=True,
    metavar="X",
    help="Share of a row's rollouts that must agree on one other letter to call its key wrong.",
)
@click.option(
    "--on-invalid",
    type=click.Choice(["fail", "reject"]),
    default="fail",
    show_default=True,
    help="An unreadable DATA line or a rollout that cannot be graded: fail (exit 1, no -o document) or reject it "
    "(counted in the document).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the audit document (JSON) here, atomically: `mcqa-prep report DATA --audit FILE` shows it.",
)
@MAX_SHOWN_OPTION
@click.option(
    "--fail-on-findings",
    is_flag=True,
    help="Exit 1 when any row is contaminated, duplicated or has a wrong key.",
)
@click.option(
    "--pass-rates",
    "pass_rates",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    metavar="TABLE",
    help="A pass-rate table (passrates.v3, repeatable, pooled as report pools them): per model the consistent "
    "rate against the plain one, the pass rate by gold position and the questions solved at one position only.",
)
@click.option(
    "--drift",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False),
    metavar="BEFORE AFTER",
    default=None,
    help="Two pass-rate tables of one model each (before and after training): the letter prior's drift.",
)
@ALLOW_STALE_OPTION
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def audit_command(data, against, no_duplicates, dup_similarity, rollouts, contract, default_model, key_by,
                  min_rollouts, min_agreement, on_invalid, output, max_shown, fail_on_findings, pass_rates, drift,
                  allow_stale, workers, engine, address, resume, fmt, quiet, **kw):  # fmt: skip
    """Audit DATA rows for benchmark contamination, duplicates, wrong answer keys and position bias.

    DATA is a dataset (JSONL or Parquet file, directory, pulled or prepared directory). Each check names the
    rows it flags (file:line and uuid) and why:

    \b
    - contamination (--against BENCH): a benchmark question in a row, found exactly (same question and
      options, in any order and under any letters), by shared word 13-grams (as lm-eval), or as a
      near-duplicate (MinHash LSH); case, punctuation, whitespace and option labels never count;
    - duplicates, within a split and across splits (train/validation leakage): exact, the same question with
      its options permuted, near-duplicates;
    - wrong keys (--rollouts R): rows whose rollouts agree, across rollouts and models, on another letter than
      the gold, ranked by self-confidence. Raw rollouts are graded under the policy options (as
      `passrates --rescore`), rescored ones read as graded; evidence under another contract is refused;
    - position bias: the gold letter's balance per option count, the option-count distribution against the
      benchmarks', and each model's answer-letter bias (per-letter recall and its spread, RStd);
    - across option orders (--pass-rates TABLE of rows prepared with --permute): consistent against plain
      rate, pass rate by gold position, questions solved at one position only; --drift BEFORE AFTER: the
      letter prior before and after training.

    Findings do not change the exit code unless --fail-on-findings. `prepare --decontaminate-against BENCH`
    drops contaminated rows while preparing.

    \b
    Examples:
      mcqa-prep audit train.jsonl validation.jsonl --against mmlu/ --against gpqa_diamond.csv
      mcqa-prep audit prepared/ --against mmlu_pro.parquet --bench-preset mmlu_pro -o audit.json
      mcqa-prep audit train.jsonl --rollouts rollouts.jsonl --final-answer-only --format json
      mcqa-prep audit data/ --against bench.csv --bench-map question=q --bench-map choices=opts \\
          --bench-map answer=gold --fail-on-findings
    Exit codes: 0 audited, 1 inputs unreadable (unreadable lines, unless --on-invalid reject) or rollouts refused
    (or findings, with --fail-on-findings), 2 usage error.
    """
    from ..audit import Request, audit
    from ..audit.keys import KeySettings

    if output is not None:
        check_output(output, [*data, *against, *rollouts, *pass_rates, *(drift or ())])
    mapping, settings = contamination_from_options(**{k: kw.pop(k) for k in CONTAMINATION_KWARGS})
    policy = policy_from_options(**{k: kw.pop(k) for k in POLICY_KWARGS})
    request = Request(
        against=tuple(against),
        mapping=mapping,
        contamination=settings,
        duplicates=not no_duplicates,
        dup_similarity=dup_similarity,
        rollouts=tuple(rollouts),
        policy=policy,
        contract=contract,
        default_model=default_model,
        keys=KeySettings(min_rollouts, min_agreement, key_by),
        on_invalid=on_invalid,
        pass_rates=tuple(pass_rates),
        drift=tuple(drift) if drift else None,
    )
    run = RunRequest(tuple(data), output, **engine_settings(workers, engine, address, resume))
    doc = audit(list(data), request, progress=bar_factory(quiet), run=run, allow_stale=allow_stale)
    for line in stale_warnings(doc.get("stale_preparations", [])):
        click.echo(line, err=True)
    unreadable = _unreadable_problem(doc) if on_invalid == "fail" else None
    written = output if unreadable is None else None
    if written is not None:
        from ..io.writers import write_atomic_json
        from ..records import displayed

        write_atomic_json(written, displayed(doc))
    problem = unreadable or (_findings_problem(doc) if fail_on_findings else None)
    if fmt == "json":
        emit_json(doc, error=problem)
    else:
        for line in text_lines(doc, max_shown, written):
            click.echo(line)
    if problem is not None:
        fail(problem["message"])


def _unreadable_problem(doc: dict[str, Any]) -> dict[str, Any] | None:
    """An audit that could not read every DATA line is incomplete: a contaminated or duplicated row may be
    among the unread ones, so it is a failure unless the user said to reject them."""
    s = doc["summary"]
    if not s["unreadable_rows"]:
        return None
    return report_error(
        "unreadable_rows",
        f"{s['unreadable_rows']:,} DATA line(s) could not be read, so the audit does not cover them (first: "
        f"{s['unreadable_examples'][0]}); fix the lines, or pass --on-invalid reject to audit the rest",
    )


def _findings_problem(doc: dict[str, Any]) -> dict[str, Any] | None:
    s = doc["summary"]
    parts = [
        f"{s[k]} {what}"
        for k, what in (
            ("contaminated_rows", "contaminated"),
            ("duplicate_rows", "duplicated"),
            ("wrong_keys", "with a wrong key"),
        )
        if s.get(k)
    ]
    if not parts:
        return None
    return report_error("audit_findings", f"audit found rows: {', '.join(parts)}")


def _row(r: dict[str, Any]) -> str:
    uuid = f" ({r['uuid']})" if r.get("uuid") else ""
    return f"{r['file']}:{r['line']}{uuid}"


def text_lines(doc: dict[str, Any], shown: int, output: str | None) -> list[str]:
    s = doc["summary"]
    lines = [f"audited {s['rows']:,} row(s) from {len(doc['inputs'])} file(s)" + (
        f"; {s['unreadable_rows']:,} unreadable (first: {s['unreadable_examples'][0]})" if s["unreadable_rows"] else ""
    )]  # fmt: skip
    lines += _contamination_lines(doc, shown)
    lines += _duplicate_lines(doc, shown)
    lines += _key_lines(doc, shown)
    lines += _bias_lines(doc)
    lines += _order_lines(doc)
    if output is not None:
        lines.append(f"wrote {output}")
    return lines


def _contamination_lines(doc: dict[str, Any], shown: int) -> list[str]:
    c = doc["contamination"]
    if c is None:
        return ["contamination: not checked (give --against BENCH)"]
    n_q = sum(b["questions"] for b in doc["benchmarks"])
    methods = ", ".join(f"{m} {n:,}" for m, n in c["by_method"].items())
    out = [f"contamination: {c['rows']:,} row(s) hold one of {n_q:,} benchmark question(s) from "
           f"{len(doc['benchmarks'])} file(s) ({methods})"]  # fmt: skip
    for b in doc["benchmarks"]:
        if b["rejected_by_reason"]:
            why = ", ".join(f"{k}: {n:,}" for k, n in b["rejected_by_reason"].items())
            out.append(
                f"  {b['path']}: {b['questions']:,} question(s) of {b['rows_read']:,} row(s); not used: {why}"
            )
    for f in _listed(c["findings"], shown):
        m = f["matches"][0]
        b = m["benchmark"]
        ident = f" id {b['id']}" if b.get("id") is not None else ""
        out.append(
            f"  {_row(f['row'])} ~ {b['file']}:{b['line']}{ident} [{', '.join(m['methods'])}; "
            f"{m['ngram_matches']} shared n-grams ({m['ngram_overlap']:.0%}), containment {m['containment']:.2f}]"
        )
    return out + _more(c["rows"], c["findings"], shown)


def _listed(items: list[Any], shown: int) -> list[Any]:
    return items if shown <= 0 else items[:shown]


def _more(total: int, items: list[Any], shown: int) -> list[str]:
    """'… and N more' after a list cut short (by --max-shown, or by the document's own cap)."""
    listed = len(_listed(items, shown))
    if total <= listed:
        return []
    return [f"  … and {total - listed:,} more (--max-shown 0 lists all the document keeps; -o FILE has them)"]


def _duplicate_lines(doc: dict[str, Any], shown: int) -> list[str]:
    d = doc["duplicates"]
    if d is None:
        return ["duplicates: not checked (--no-duplicates)"]
    kinds = ", ".join(f"{k} {n:,}" for k, n in d["by_kind"].items())
    out = [
        f"duplicates: {d['rows']:,} row(s) repeat an earlier row ({kinds}); {d['cross_split']:,} across splits"
        + (
            f"; {d['same_uuid']:,} share the earlier row's uuid (template variants?)"
            if d["same_uuid"]
            else ""
        )
    ]
    for f in _listed(d["findings"], shown):
        leak = f" [split {f['first']['split']} -> {f['row']['split']}: leakage]" if f["cross_split"] else ""
        out.append(
            f"  {_row(f['row'])} repeats {_row(f['first'])} ({f['kind']}, {f['similarity']:.2f}){leak}"
        )
    return out + _more(d["rows"], d["findings"], shown)


def _key_lines(doc: dict[str, Any], shown: int) -> list[str]:
    k = doc["wrong_keys"]
    if k is None:
        return ["wrong keys: not checked (give --rollouts R)"]
    e = k["evidence"]
    out = [
        f"wrong keys: {k['flagged']:,} of {k['rows_with_rollouts']:,} row(s) with rollouts (contract "
        f"{e['contract_id']}; {e['rollouts_used']:,} of {e['rollouts_read']:,} rollout(s) counted)"
    ]
    for f in _listed(k["wrong_keys"], shown):
        out.append(
            f"  {_row(f['row'])}: gold {f['gold']}, rollouts say {f['suspected']} ({f['agreement']:.0%} of "
            f"{f['rollouts']}, {len(f['models'])} model(s)); self-confidence {f['self_confidence']:.3f}"
        )
    return out + _more(k["flagged"], k["wrong_keys"], shown)


def _bias_lines(doc: dict[str, Any]) -> list[str]:
    p = doc["position_bias"]
    flagged = {n: v["flagged"] for n, v in p["gold_by_options"].items() if v["flagged"]}
    out = ["position bias: " + ("; ".join(f"{n} options: gold {', '.join(v)} over its share" for n, v in flagged.items())
                                or "no gold letter over its share")]  # fmt: skip
    oc = p["option_counts"]
    for b, tv in oc["total_variation"].items():
        out.append(f"  option counts vs {b}: total variation {tv}")
    for b in p["answer_bias"]:
        if b["rstd"] is not None:
            out.append(f"  {b['model']} ({b['options']} options): answer recall RStd {b['rstd']} points")
    return out


def _order_lines(doc: dict[str, Any]) -> list[str]:
    o = doc.get("option_orders")
    if o is None:
        return []
    out = []
    for model, s in o["models"].items():
        lines = describe(s) or ["across option orders: no question seen in two or more orders"]
        out.append(f"{model}: {lines[0]}")
        out += [f"  {x}" for x in lines[1:]]
        for ex in s["one_position_examples"][:3]:
            by = " ".join(f"{L}:{c}/{n}" for L, (n, c) in ex["by_position"].items())
            out.append(f"  solved only at {ex['position']}: {ex['key']} ({by})")
    d = o["drift"]
    if d is not None:
        dd = d["drift"]
        out.append(
            f"letter-prior drift {d['before']['model']} -> {d['after']['model']}: RStd by option count "
            f"{rstd_text(dd['rstd_before'])} -> {rstd_text(dd['rstd_after'])}; consistent "
            f"{dd['consistent_before']} -> {dd['consistent_after']}"
        )
    return out
