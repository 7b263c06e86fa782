"""`--permute K` and its settings, shared by `prepare` and `convert` (docs/design/prepare.md, "Option permutations").

Usage::

    @permute_options
    def command(..., **kw):
        spec = permute_from_options(**{k: kw.pop(k) for k in PERMUTE_KWARGS})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..convert.orders import MAX_VARIANTS, MODES, PermuteSpec

PERMUTE_KWARGS = ("permute", "permute_mode", "permute_seed", "permute_identity")


def permute_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--permute",
            "permute",
            type=click.IntRange(1, MAX_VARIANTS),
            default=None,
            metavar="K",
            help="Write each row as K option orders, each a complete row: options reordered, expected_answer "
            "moved with the gold text, the prompt's option block rewritten (a row whose block cannot be found "
            "exactly is rejected, saying why), anchored options ('All of the above', in every language of the "
            "phrase table) kept in place; metadata.mcqa_prep.permutation links each to its question.",
        ),
        click.option(
            "--permute-mode",
            type=click.Choice(MODES),
            default="rotation",
            show_default=True,
            help="rotation: cyclic shifts of the movable options (K >= the option count puts the gold at "
            "every position once, CircularEval's rotations); random: K distinct random orders.",
        ),
        click.option(
            "--permute-seed",
            type=int,
            default=0,
            show_default=True,
            help="Seed of the orders (per question).",
        ),
        click.option(
            "--permute-identity/--no-permute-identity",
            default=True,
            show_default=True,
            help="The row's own order is one of the K (the first).",
        ),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def permute_from_options(
    permute: int | None, permute_mode: str, permute_seed: int, permute_identity: bool
) -> PermuteSpec | None:
    """The request, or None without --permute (the other options then must be left at their defaults)."""
    if permute is None:
        if permute_mode != "rotation" or permute_seed != 0 or not permute_identity:
            raise click.UsageError(
                "--permute-mode, --permute-seed and --no-permute-identity need --permute K"
            )
        return None
    spec = PermuteSpec(permute, permute_mode, permute_seed, permute_identity)
    spec.check()
    return spec
