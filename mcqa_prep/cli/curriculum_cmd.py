"""`mcqa-prep curriculum`: a sampling schedule over training steps, from pass-rate tables and dataset rows."""

from __future__ import annotations

from typing import Any

import click

from ..curriculum import KINDS, CurriculumRequest, ScheduleSpec, curriculum
from ..curriculum.schedule import DEFAULT_NO_EVIDENCE_WEIGHT, NO_EVIDENCE_KEY
from .common import FORMAT_OPTION, QUIET_OPTION, bar_factory, emit_json


def _ratios(ctx: Any, param: Any, values: tuple[str, ...]) -> dict[str, float] | None:
    if not values:
        return None
    out: dict[str, float] = {}
    for v in values:
        name, sep, w = v.rpartition("=")
        try:
            weight = float(w)
        except ValueError:
            weight = -1.0
        if not sep or not name or not weight >= 0:
            raise click.BadParameter(
                f"{v!r}: expected DOMAIN=WEIGHT with a weight >= 0 (or '*=WEIGHT' for the rest)"
            )
        if name in out:
            raise click.BadParameter(f"{name!r}: given twice")
        out[name] = weight
    return out


@click.command("curriculum")
@click.argument(
    "tables", metavar="TABLE...", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False)
)
@click.option(
    "--rows",
    "rows",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="The dataset rows to schedule (files, directories, a pulled or prepared directory).",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The schedule (JSONL).")
@click.option(
    "--rows-out",
    type=click.Path(dir_okay=False),
    help="Write every scheduled row with its difficulty column (posterior, bucket, domain, weight).",
)
@click.option(
    "--ordered-out",
    type=click.Path(dir_okay=False),
    help="Write the rows in schedule order, --prompts-per-step rows a step (for a trainer reading rows in order).",
)
@click.option(
    "--prompts-per-step",
    type=click.IntRange(min=1),
    help="Rows per training step in --ordered-out; --steps x this is at most 50,000,000 rows (checked before "
    "anything is read or written).",
)
@click.option(
    "--model", metavar="NAME", help="Whose pass rates decide (needed when the tables hold several models)."
)
@click.option(
    "--by",
    metavar="COLUMN",
    help="Domains: source (the upstream dataset), subject, or any column / dotted path (metadata.category).",
)
@click.option(
    "--domain-ratio",
    "ratios",
    multiple=True,
    callback=_ratios,
    metavar="DOMAIN=W",
    help="Fixed share of a domain in every range (repeatable; '*=W' for the domains not named). Default: "
    "proportional to the domains' rows.",
)
@click.option("--schedule", "kind", type=click.Choice(KINDS), default="gaussian", show_default=True)
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True, help="Training steps.")
@click.option(
    "--bootstrap-steps",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="First steps on easy rows (easy-first: the easiest --window buckets; gaussian: mean held at --start-rate).",
)
@click.option(
    "--ranges", type=click.IntRange(min=1), default=10, show_default=True, help="gaussian: step ranges."
)
@click.option("--window", type=click.IntRange(min=1), help="easy-first: buckets per range (default: half).")
@click.option(
    "--start-rate", type=click.FloatRange(0, 1), default=0.8, show_default=True, help="gaussian: first mean."
)
@click.option(
    "--end-rate", type=click.FloatRange(0, 1), default=0.2, show_default=True, help="gaussian: last mean."
)
@click.option("--sigma", type=click.FloatRange(min=0, min_open=True), default=0.15, show_default=True)
@click.option("--buckets", type=click.IntRange(2, 20), help="Difficulty buckets (default: the table's).")
@click.option("--drop-solved", is_flag=True, help="Leave out rows the model always solves.")
@click.option("--drop-unsolved", is_flag=True, help="Leave out rows the model never solves.")
@click.option(
    "--no-evidence",
    type=click.Choice(["keep", "drop"]),
    default="keep",
    show_default=True,
    help="Rows the table has no pass rate for: keep them as their own stream (--no-evidence-weight), or drop.",
)
@click.option(
    "--no-evidence-weight",
    type=click.FloatRange(0, 1),
    default=DEFAULT_NO_EVIDENCE_WEIGHT,
    show_default=True,
    metavar="W",
    help="Share of each domain's weight in every range drawn from its rows without evidence (unknown "
    "difficulty: no bucket); the measured buckets share the rest.",
)
@click.option(
    "--column", default="difficulty", show_default=True, help="Name of the per-row object (--rows-out)."
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of --ordered-out's draw order and of --epochs.",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Rows of `prepare --permute`: deal each question's option orders to N epochs (no order seen twice "
    "before every order was seen once); a question counts once in the schedule, --rows-out rows carry the "
    "epochs in which they are seen, --ordered-out shows a question's next order at each draw.",
)
@click.option(
    "--estimate",
    type=click.Choice(["plain", "corrected"]),
    default="plain",
    show_default=True,
    help="What places a row: plain = the posterior of the pass probability; corrected = the chance-corrected "
    "posterior ((p - 1/k)/(1 - 1/k), a passrates.v3 table), with the questions at chance (and rows without "
    "evidence) in a last bucket of their own. --start-rate/--end-rate are then corrected rates.",
)
@FORMAT_OPTION
@QUIET_OPTION
def curriculum_command(tables, rows, output, rows_out, ordered_out, prompts_per_step, model, by, ratios, kind,
                       steps, bootstrap_steps, ranges, window, start_rate, end_rate, sigma, buckets, drop_solved,
                       drop_unsolved, no_evidence, no_evidence_weight, column, seed, epochs, estimate, fmt,
                       quiet):  # fmt: skip
    """Export a curriculum: a schedule of sampling weights per difficulty bucket and domain over training steps.

    Rows are bucketed by the posterior mean of their pass probability under --model (from `mcqa-prep
    passrates` TABLEs; several tables are pooled when they share contract and counting rule), domains come
    from --by (source, subject, any column). --schedule gaussian: a Gaussian over pass rate whose mean falls
    from --start-rate to --end-rate over the steps (Nemotron 3 Nano's recipe); easy-first: a bootstrap on the
    easiest buckets, then a window shifting to harder ones; uniform: no curriculum.

    \b
    Outputs: -o the schedule (JSONL: a header, then one line per step range with weights per domain and
    bucket); --rows-out the rows with a `difficulty` object (open-instruct's field names: posterior_mean,
    bucket_index, bucket_count, expected_quantile; plus domain and a static weight); --ordered-out the rows
    in schedule order (NeMo RL with shuffling off). Guide: docs/design/curriculum.md.

    \b
    Examples:
      mcqa-prep curriculum train.passrates.jsonl --rows prepared/ -o schedule.jsonl --rows-out rows.jsonl
      mcqa-prep curriculum t.jsonl --rows train.jsonl --by subject --drop-solved -o s.jsonl --steps 500
      mcqa-prep curriculum t.jsonl --rows train.jsonl --schedule easy-first --bootstrap-steps 50 -o s.jsonl
      mcqa-prep curriculum t.jsonl --rows train.jsonl -o s.jsonl --ordered-out ordered.jsonl --prompts-per-step 128
      mcqa-prep curriculum t.jsonl --rows permuted/ -o s.jsonl --rows-out rows.jsonl --epochs 4
    """
    spec = ScheduleSpec(
        kind, steps, bootstrap_steps, ranges, window, start_rate, end_rate, sigma, no_evidence_weight
    )
    req = CurriculumRequest(
        tables=list(tables),
        rows=list(rows),
        output=output,
        rows_out=rows_out,
        ordered_out=ordered_out,
        prompts_per_step=prompts_per_step,
        model=model,
        by=by,
        ratios=ratios,
        spec=spec,
        buckets=buckets,
        drop_solved=drop_solved,
        drop_unsolved=drop_unsolved,
        no_evidence=no_evidence,
        column=column,
        seed=seed,
        epochs=epochs,
        estimate=estimate,
    )
    report = curriculum(req, progress=bar_factory(quiet))
    warning = dominance_warning(report)
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        emit_json(report)
        return
    _render_text(report, rows_out, ordered_out)


DOMINANT = 0.5  # rows without evidence "dominate" beyond this share of the rows or of a range's weight


def dominance_warning(report: dict[str, Any]) -> str | None:
    """One line when the rows without evidence dominate: most scheduled rows, or most of a range's weight."""
    h = report["header"]
    n, total = h["rows"]["without_evidence"], h["rows"]["scheduled"]
    top = max((rng["bucket_weights"].get(NO_EVIDENCE_KEY, 0.0) for rng in report["ranges"]), default=0.0)
    if n == 0 or (n <= DOMINANT * total and top <= DOMINANT):
        return None
    return (
        f"{n:,} of {total:,} scheduled rows ({n / total:.0%}) have no pass rate for {h['model']}: they are one "
        f"stream of unknown difficulty taking up to {top:.0%} of a range's weight "
        f"(--no-evidence-weight {h['schedule']['no_evidence_weight']:g}), and the curriculum orders only the "
        "other rows; measure them (mcqa-prep passrates on their rollouts) or leave them out (--no-evidence drop)"
    )


def _render_text(report: dict[str, Any], rows_out: str | None, ordered_out: str | None) -> None:
    h = report["header"]
    r = h["rows"]
    click.echo(
        f"{report['output']}: {h['schedule']['kind']} schedule over {h['schedule']['steps']} step(s) in "
        f"{h['ranges']} range(s), model {h['model']}, {h['buckets']['count']} buckets (0 = easiest)"
    )
    left = [f"{k}: {n}" for k, n in {**r["dropped"], **r["rejected"]}.items()]
    click.echo(
        f"rows: {r['read']} read, {r['scheduled']} scheduled ({r['without_evidence']} without evidence)"
        + (f", left out: {', '.join(left)}" if left else "")
    )
    chance = h["buckets"].get("chance_bucket")
    click.echo(
        "rows per bucket: "
        + " ".join(str(n) for n in h["buckets"]["rows"])
        + (f" (by the chance-corrected posterior; bucket {chance}: at chance)" if chance is not None else "")
        + f"; without evidence: {r['without_evidence']} ({NO_EVIDENCE_KEY}: their own stream, weight "
        f"{h['schedule']['no_evidence_weight']:g} of each domain that has measured rows too)"
    )
    d = h["domains"]
    if d["column"] is not None:
        shares = ", ".join(f"{k} {v:.3f}" for k, v in list(d["ratios"].items())[:8])
        more = f" … and {len(d['ratios']) - 8} more (--format json lists all)" if len(d["ratios"]) > 8 else ""
        click.echo(f"domains by {d['column']} ({d['ratio_source']}): {shares}{more}")
    for rng in report["ranges"]:
        b = " ".join(f"{k}:{v:.2f}" for k, v in rng["bucket_weights"].items())
        extra = f" mean {rng['gaussian_mean']:.3f}" if "gaussian_mean" in rng else ""
        extra += f" window {rng['window'][0]}-{rng['window'][1]}" if "window" in rng else ""
        click.echo(f"  steps {rng['step_start']}-{rng['step_end']} {rng['phase']}{extra}: {b}")
    e = h.get("epochs")
    if e is not None:
        by = ", ".join(f"{n} with {k}" for k, n in e["by_orders"].items())
        click.echo(
            f"epochs: {e['count']}; {e['questions']} question(s) in {e['orders']} row(s) ({by}); "
            f"{e['repeating']} question(s) have fewer orders than epochs (an order is seen again)"
        )
    if rows_out:
        click.echo(f"rows with their `{h['column']}` column: {rows_out}")
    if ordered_out:
        click.echo(f"rows in schedule order: {ordered_out} ({h['ordered']['rows']} rows)")
