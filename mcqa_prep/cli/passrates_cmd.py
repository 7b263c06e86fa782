"""`mcqa-prep passrates`: per-question pass rates of graded rollouts, as a table that carries its contract."""

from __future__ import annotations

from typing import Any

import click

from ..evidence import BUCKETS, RATE_BINS_LEGEND
from ..passrates.kmetrics import DEFAULT_NO_ANSWER, NO_ANSWER_RULES
from ..passrates.measure import Estimate, measure
from ..passrates.positions import describe
from ..passrates.posterior import DEFAULT_BUCKETS, DEFAULT_LEVEL
from ..runs import RunRequest
from .common import (
    FORMAT_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
    index_lines,
)
from .policy_opts import policy_from_options, policy_options


@click.command("passrates")
@click.argument("rollouts", metavar="ROLLOUTS...", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The table: JSONL, a header line then one entry per question and model (written atomically).",
)
@click.option(
    "--rescore",
    is_flag=True,
    help="Grade every rollout here under the policy options (default: the rollouts come from `rescore` and "
    "carry their contract in metadata.grading).",
)
@click.option(
    "--contract",
    metavar="ID",
    help="Count only the rollouts graded under this contract id (needed when they carry several).",
)
@click.option(
    "--rows",
    "rows_paths",
    multiple=True,
    type=click.Path(exists=True),
    help="Dataset rows joined by prompt: their options grade rollouts with --rescore, their uuid keys "
    "rollouts that name none.",
)
@policy_options
@click.option(
    "--model",
    "default_model",
    metavar="NAME",
    help="Model of the rollouts that name none (responses_create_params.model, else response.model).",
)
@click.option(
    "--key-by",
    type=click.Choice(["prompt", "uuid"]),
    default="uuid",
    show_default=True,
    help="uuid: one rate per question, its renderings and option orders pooled (the prompt key where no uuid "
    "is known); prompt: one rate per rendered prompt (question x template x option order).",
)
@click.option(
    "--on-invalid",
    type=click.Choice(["fail", "reject"]),
    default="fail",
    show_default=True,
    help="fail: a rollout that cannot be graded -> exit 1, no table. reject: leave it out (counted in the table).",
)
@click.option(
    "--no-answer",
    type=click.Choice(NO_ANSWER_RULES),
    default=DEFAULT_NO_ANSWER,
    show_default=True,
    help="What a rollout without an extracted answer is: fail = a failed sample (and a vote for 'no answer' in "
    "majority@k); exclude = not a sample. Recorded in the table: tables that count differently are never pooled.",
)
@click.option(
    "--credible-level",
    type=click.FloatRange(0.5, 1.0, max_open=True),
    default=DEFAULT_LEVEL,
    show_default=True,
    help="Level of the posterior's equal-tailed credible interval (posterior_lower .. posterior_upper).",
)
@click.option(
    "--buckets",
    type=click.IntRange(2, 20),
    default=DEFAULT_BUCKETS,
    show_default=True,
    help="Difficulty buckets: equal-width bins of the posterior mean, 0 the easiest.",
)
@click.option(
    "--nemo-gym-profile",
    is_flag=True,
    help="ROLLOUTS are NeMo Gym `gym eval profile` rows (the original row under `sample`, one reward per "
    "rollout_infos item), graded by NeMo Gym: the policy options (default: the built-in policy, NeMo Gym's mcqa "
    "grading) state the contract they were graded under.",
)
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def passrates_command(
    rollouts,
    output,
    rescore,
    contract,
    rows_paths,
    default_model,
    key_by,
    on_invalid,
    no_answer,
    credible_level,
    buckets,
    nemo_gym_profile,
    workers,
    engine,
    address,
    resume,
    fmt,
    quiet,
    **policy_kw,
):
    """Measure per-question pass rates of graded ROLLOUTS, per model, into a table that carries its contract.

    A pass is a reward of 1 under the grading contract the rollouts were graded under: rollouts come from
    `mcqa-prep rescore` (metadata.grading.contract), or --rescore grades them here. Rollouts under several
    contracts are refused (each contract named with its row count) unless --contract picks one; rollouts
    without a contract or a model are refused. Without --rescore, policy options say which policy the
    rollouts were graded under, so that the table records the full contract (its id must match).

    \b
    The table is used by `prepare --pass-rates TABLE` (filter by difficulty) and
    `prepare --stamp-reward-profiles TABLE` (write the profiles into the rows); it is refused there when
    its contract is not the preparation's, or when it was edited after it was written.

    \b
    Per (question, model) the table also holds the posterior of the pass probability: a Beta prior fitted
    per model to the table (marginal maximum likelihood of the beta-binomial), the posterior mean, an
    equal-tailed credible interval (--credible-level) and a difficulty bucket (--buckets, 0 the easiest);
    per model pass@k (unbiased estimator), majority@k and no_answer, counted under --no-answer.

    \b
    Examples:
      mcqa-prep rescore rollouts.jsonl --rows train.jsonl -o rescored.jsonl
      mcqa-prep passrates rescored.jsonl -o train.passrates.jsonl
      mcqa-prep passrates rescored.jsonl -o t.jsonl --no-answer exclude --credible-level 0.95
      mcqa-prep passrates rollouts_reward_profiling.jsonl --nemo-gym-profile --model Qwen/Qwen3-8B -o t.jsonl
      mcqa-prep passrates rollouts.jsonl --rescore --rows train.jsonl -o train.passrates.jsonl --final-answer-only
      mcqa-prep passrates a.jsonl b.jsonl --contract sha256:0f3c... -o t.jsonl --format json
    """
    policy = policy_from_options(none_if_unset=not (rescore or nemo_gym_profile), **policy_kw)
    report = measure(
        list(rollouts),
        output,
        policy,
        rescore=rescore,
        contract=contract,
        rows_paths=list(rows_paths),
        default_model=default_model,
        key_by=key_by,
        on_invalid=on_invalid,
        estimate_with=Estimate(no_answer, credible_level, buckets, nemo_gym_profile),
        progress=bar_factory(quiet),
        how=RunRequest(tuple(rollouts), output, **engine_settings(workers, engine, address, resume)),
    )
    d = report.to_dict()
    if fmt == "json":
        emit_json(d)
        return
    _render_text(d)


def _render_text(d: dict[str, Any]) -> None:
    c = d["counts"]
    click.echo(
        f"{d['output']}: {d['entries']} entries ({c['questions']} question(s), {len(c['models'])} model(s)), "
        f"keyed by {d['key_by']}"
    )
    click.echo(
        f"contract {d['contract_id']} (grader {d['grader_version'] or 'unknown'}"
        + ("" if d["contract_known"] else "; the table records only the id: give the policy to record it all")
        + ")"
    )
    left = []
    if c["invalid"]:
        left.append(f"{c['invalid']} could not be graded ({_kinds(d['invalid']['by_kind'])})")
    if c["other_contracts"]:
        left.append(f"{c['other_contracts']} under other contracts")
    click.echo(
        f"rollouts: {c['rollouts']} read, {c['used']} counted"
        + (f", left out: {'; '.join(left)}" if left else "")
    )
    if d["join"] is not None:
        for line in index_lines(d["join"]):
            click.echo(line)
    kinds = c["keys_by_kind"]
    if d["key_by"] == "uuid" and kinds.get("prompt"):
        click.echo(
            f"note: {kinds['prompt']} question(s) keyed by prompt: their rollouts named no uuid "
            "(--rows DATASET gives them their dataset row's uuid)",
            err=True,
        )
    for model, dist in d["models"].items():
        b = dist["pass_rate"]
        click.echo(
            f"  {model}: {dist['questions']} question(s), mean pass rate {dist['mean_pass_rate']:.4f}; "
            + ", ".join(f"{k}: {b[k]}" for k in BUCKETS)
        )
        click.echo(f"    histogram ({RATE_BINS_LEGEND}): " + " ".join(str(n) for n in dist["histogram"]))
        _render_estimates(d, model)
        for line in describe(d["positions"].get(model) or {"variants": False}):
            click.echo(f"    {line}")
    click.echo(f"counting: no_answer={d['counting']['no_answer']}; content sha256 {d['content_sha256']}")


def _render_estimates(d: dict[str, Any], model: str) -> None:
    prior = d["posterior"]["priors"][model]
    m = d["metrics"][model]
    level = d["posterior"]["credible_level"]
    click.echo(
        f"    prior Beta({prior['alpha']:g}, {prior['beta']:g}) (mean {prior['mean']:.3f}, strength "
        f"{prior['strength']:g}, {prior['fit']}{', at ' + prior['at_bound'] if prior['at_bound'] else ''}); "
        f"{level:g} credible intervals"
    )
    parts = [f"pass@{k} {v['value']:.4f}" for k, v in m["pass_at_k"].items()]
    if m["majority_at_k"] is not None:
        parts += [f"majority@{k} {v['value']:.4f}" for k, v in m["majority_at_k"].items()]
    parts.append("no_answer " + (f"{m['no_answer']:.4f}" if m["no_answer"] is not None else "unknown"))
    click.echo("    " + ", ".join(parts))


def _kinds(by_kind: dict[str, int]) -> str:
    return ", ".join(f"{k}: {n}" for k, n in by_kind.items())
