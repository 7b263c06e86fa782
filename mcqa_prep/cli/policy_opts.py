"""Grading-policy options shared by every command that grades or stamps (prepare, verify, contract, rescore).

Usage::

    @click.command("x")
    @policy_options
    def x(..., **policy_kw):
        policy = policy_from_options(**policy_kw)          # always a validated GradingPolicy
        maybe = policy_from_options(**policy_kw, none_if_unset=True)   # None when no policy option was given

The policy file is read and validated here, before any data is read; an invalid file or flag combination is
a usage error (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import click

from ..grader import OVERRIDE_MODES, ROW_MODES
from ..policy import GradingPolicy

# The kwargs that @policy_options adds to a command (policy_from_options consumes exactly these).
POLICY_KWARGS = (
    "policy_path",
    "grading_mode_default",
    "grading_mode_override",
    "final_answer_only",
    "reasoning_mode",
    "zero_truncated",
    "prompt_thinking",
)


def policy_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --policy FILE and one flag per single policy field; flags override the file's fields."""
    decorators = [
        click.option(
            "--policy",
            "policy_path",
            type=click.Path(dir_okay=False),
            help="Grading policy JSON (schemas/grading-policy.v1.schema.json). Default: the built-in policy.",
        ),
        click.option(
            "--grading-mode-default",
            type=click.Choice(ROW_MODES),
            help="Policy field: mode for rows without a grading_mode.",
        ),
        click.option(
            "--grading-mode-override",
            type=click.Choice(OVERRIDE_MODES + ("none",)),
            help="Policy field: mode replacing every row's grading_mode ('none' clears a file's override).",
        ),
        click.option(
            "--final-answer-only/--no-final-answer-only",
            default=None,
            help="Policy field: grade only the delivered response, never the thinking.",
        ),
        click.option(
            "--reasoning-mode",
            type=click.Choice(["required", "none"]),
            help="Policy field: whether generated text must hold a closed thinking section.",
        ),
        click.option(
            "--zero-truncated/--no-zero-truncated",
            default=None,
            help="Policy field: reward 0 for responses with status 'incomplete'.",
        ),
        click.option(
            "--prompt-thinking",
            type=click.Choice(["none", "open", "closed"]),
            help="Policy field: thinking state the chat template adds at the end of the prompt.",
        ),
    ]
    for deco in reversed(decorators):
        fn = deco(fn)
    return fn


def policy_given(**kw: Any) -> bool:
    """True when any policy option was given on the command line."""
    return any(kw.get(k) is not None for k in POLICY_KWARGS)


def _build(kw: dict[str, Any]) -> GradingPolicy:
    base = GradingPolicy.from_file(kw["policy_path"]) if kw.get("policy_path") else GradingPolicy()
    override = kw.get("grading_mode_override")
    fields: dict[str, Any] = {
        "grading_mode_default": kw.get("grading_mode_default"),
        "final_answer_only": kw.get("final_answer_only"),
        "reasoning_mode": kw.get("reasoning_mode"),
        "zero_truncated": kw.get("zero_truncated"),
        "prompt_thinking": kw.get("prompt_thinking"),
    }
    if override == "none":
        fields["clear_override"] = True
    elif override is not None:
        fields["grading_mode_override"] = override
    if all(v is None for v in fields.values()):
        return base
    return base.with_overrides(**fields)


@overload
def policy_from_options(*, none_if_unset: Literal[False] = False, **kw: Any) -> GradingPolicy: ...
@overload
def policy_from_options(*, none_if_unset: bool, **kw: Any) -> GradingPolicy | None: ...
def policy_from_options(*, none_if_unset: bool = False, **kw: Any) -> GradingPolicy | None:
    """The effective, validated policy from --policy and the field flags (a usage error if invalid).

    With none_if_unset, None when no policy option was given (e.g. verify: "compatible with this grader")."""
    unknown = set(kw) - set(POLICY_KWARGS)
    if unknown:
        raise TypeError(f"policy_from_options: unexpected options {sorted(unknown)}")
    if none_if_unset and not policy_given(**kw):
        return None
    return _build(kw)
