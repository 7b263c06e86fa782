"""`prepare`'s pass-rate options: filter rows by measured difficulty, stamp measured reward_profiles.

Usage::

    @click.command("prepare")
    @difficulty_options
    def prepare(..., **kw):
        request = difficulty_from_options(**{k: kw.pop(k) for k in DIFFICULTY_KWARGS})
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from ..passrates.difficulty import (
    EVIDENCE_TABLE,
    EVIDENCE_UPSTREAM,
    KEEP_ON,
    DifficultyRequest,
    PassRateFilter,
)

DIFFICULTY_KWARGS = (
    "pass_rates",
    "upstream_pass_rates",
    "keep_pass_rate",
    "drop_solved",
    "drop_unsolved",
    "model",
    "no_evidence",
    "stamp_reward_profiles",
    "keep_on",
    "stamp_blend_fields",
)


def parse_range(ctx: Any, param: Any, value: str | None) -> tuple[float, float] | None:
    """'LO:HI' (either side may be empty: 0 and 1) -> (lo, hi), inclusive, 0 <= lo <= hi <= 1."""
    if value is None:
        return None
    lo_text, sep, hi_text = value.partition(":")
    try:
        if not sep:
            raise ValueError
        lo = float(lo_text) if lo_text.strip() else 0.0
        hi = float(hi_text) if hi_text.strip() else 1.0
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: expected LO:HI, e.g. 0.1:0.9 (either side may be left empty)"
        ) from None
    if not (0.0 <= lo <= hi <= 1.0):
        raise click.BadParameter(f"{value!r}: need 0 <= LO <= HI <= 1")
    return lo, hi


def difficulty_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        click.option(
            "--pass-rates",
            "pass_rates",
            metavar="TABLE",
            type=click.Path(exists=True, dir_okay=False),
            help="Filter rows by the pass rates of TABLE (from `mcqa-prep passrates`; its contract must be "
            "this preparation's).",
        ),
        click.option(
            "--upstream-pass-rates",
            is_flag=True,
            help="Filter on the rows' own reward_profiles instead: legacy evidence of unknown grading contract "
            "(recorded as such in the manifest). Needs --model.",
        ),
        click.option(
            "--keep-pass-rate",
            metavar="LO:HI",
            callback=parse_range,
            help="Keep rows whose pass rate is within LO..HI (inclusive), e.g. 0.1:0.9 or 0.125: .",
        ),
        click.option(
            "--keep-on",
            type=click.Choice(KEEP_ON),
            default=None,
            help="What --keep-pass-rate reads: observed = passes/samples (default); mean = the table's posterior "
            "mean; lower / upper = its credible bound (lower: keep rows surely at least LO; upper: surely at most "
            "HI); corrected-* the same of the chance-corrected posterior ((p - 1/k)/(1 - 1/k); a row at chance is "
            "kept or dropped as --no-evidence says); consistent-* of the consistent one (every option order "
            "passed). corrected-* and consistent-* need a passrates.v3 table. Recorded in the manifest.",
        ),
        click.option("--drop-solved", is_flag=True, help="Drop rows the model always solves (pass rate 1)."),
        click.option("--drop-unsolved", is_flag=True, help="Drop rows the model never solves (pass rate 0)."),
        click.option(
            "--model",
            metavar="NAME",
            help="The model whose pass rate decides (needed when the evidence names several).",
        ),
        click.option(
            "--no-evidence",
            type=click.Choice(["keep", "drop"]),
            default=None,
            help="Rows without a pass rate for the model: keep (default) or drop.",
        ),
        click.option(
            "--stamp-reward-profiles",
            metavar="TABLE",
            type=click.Path(exists=True, dir_okay=False),
            help="Write TABLE's profiles (every model) into each row's reward_profiles with their contract id; "
            "the rows' own profiles are kept and marked source=upstream.",
        ),
        click.option(
            "--stamp-blend-fields",
            is_flag=True,
            help="With --stamp-reward-profiles: also write NVIDIA's blend fields pass_rate, pass_rate_total, "
            "pass_rate_passed for one model (--model, or the table's only one), with pass_rate_model and "
            "pass_rate_contract; values the row had are kept under pass_rate_upstream.",
        ),
    ]
    for deco in reversed(decorators):
        fn = deco(fn)
    return fn


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def difficulty_from_options(
    *,
    pass_rates: str | None,
    upstream_pass_rates: bool,
    keep_pass_rate: tuple[float, float] | None,
    drop_solved: bool,
    drop_unsolved: bool,
    model: str | None,
    no_evidence: str | None,
    stamp_reward_profiles: str | None,
    keep_on: str | None = None,
    stamp_blend_fields: bool = False,
) -> DifficultyRequest | None:
    """The request the options describe (usage errors for combinations that mean nothing)."""
    if pass_rates and upstream_pass_rates:
        raise click.UsageError(
            "--pass-rates TABLE and --upstream-pass-rates exclude each other: choose the evidence"
        )
    evidence = EVIDENCE_TABLE if pass_rates else EVIDENCE_UPSTREAM if upstream_pass_rates else None
    if stamp_blend_fields and not stamp_reward_profiles:
        raise click.UsageError("--stamp-blend-fields is written with --stamp-reward-profiles TABLE: add it")
    if keep_on is not None and keep_pass_rate is None:
        raise click.UsageError("--keep-on says what --keep-pass-rate LO:HI reads: add --keep-pass-rate")
    if keep_on not in (None, "observed") and upstream_pass_rates:
        raise click.UsageError(
            "--keep-on mean/lower/upper reads a table's posterior: use --pass-rates TABLE (the rows' own "
            "reward_profiles have an observed rate only)"
        )
    criteria = keep_pass_rate is not None or drop_solved or drop_unsolved or no_evidence is not None
    if evidence is not None and not criteria:
        raise click.UsageError(
            "pass-rate evidence without a criterion filters nothing: add --keep-pass-rate LO:HI, --drop-solved, "
            "--drop-unsolved or --no-evidence drop (or use --stamp-reward-profiles TABLE alone to stamp)"
        )
    if evidence is None and (criteria or (model is not None and not stamp_blend_fields)):
        raise click.UsageError(
            "--keep-pass-rate, --drop-solved, --drop-unsolved, --no-evidence and --model need evidence: "
            "--pass-rates TABLE (or --upstream-pass-rates)"
        )
    if pass_rates and stamp_reward_profiles and not _same_file(pass_rates, stamp_reward_profiles):
        raise click.UsageError(
            "--pass-rates and --stamp-reward-profiles name two tables: use one table for both"
        )
    if evidence is None and not stamp_reward_profiles:
        return None
    flt = None
    if evidence is not None:
        lo, hi = keep_pass_rate if keep_pass_rate is not None else (0.0, 1.0)
        flt = PassRateFilter(
            evidence, model, lo, hi, drop_solved, drop_unsolved, no_evidence or "keep", keep_on or "observed"
        )
    return DifficultyRequest(
        pass_rates or stamp_reward_profiles,
        flt,
        bool(stamp_reward_profiles),
        stamp_blend_fields,
        model if stamp_blend_fields else None,
    )
