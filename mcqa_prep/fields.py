"""The fields of a row that every command reads, each read by one rule, with one "none" value.

- **The template id** (`template_id`): `template_metadata.template_id` when it is a non-empty string (the
  row schema's type: a string or null); None for anything else (absent, null, empty, a number). A rollout
  joined with its dataset row at rescore time carries it in its grading (`metadata.grading.template_id`),
  read when the row itself names none.
- **The contract stamp** (`contract_stamp`): `metadata.mcqa_prep.contract`, the id of the contract a row was prepared
  under. A row is stamped when it carries `metadata.mcqa_prep` at all; `Stamp.contract` is the id when the
  stamp holds a non-empty string, else None (an unstamped row, or a stamp that names no contract: `serve`
  refuses the latter, `verify` names what it holds, `report` and `curriculum` take the row as unstamped).
  The whole stamp (`stamp_of`: `metadata.mcqa_prep` when it is an object) is read by `binding.py`, which
  checks the row against the digests of its grading fields the stamp records (`bound`).
- **The grading** a rescored row carries (`grading_of`: `metadata.grading` when it is an object) and the
  contract it was graded under (`grading_contract`: its `contract` when a non-empty string, else None).
- **The recorded reward** (`recorded_reward`; `reward_of` for a value read elsewhere, such as a grading's
  `previous_reward`): the row's top-level `reward`, where rescore writes it and NeMo Gym's rollouts carry it,
  when it is a finite number and not a boolean (an integer beyond a float's range is none), as a float; None
  otherwise. Evidence of a pass asks more of it: a number in [0, 1] (`evidence.reward_problem`).
- **The option-order link** (`permutation_link`): `metadata.mcqa_prep.permutation` when it is an object
  (`prepare --permute` / `convert --permute`: the row is one option order of a question), with `question`
  (`permutation_question`: its value when a question key, `uuid:...` or `prompt:...`, else None), `order`,
  `variant` and `variants`.
- **The split** of a row is the split of its file (`records.Row.split`, from `io.paths.split_of`;
  `io.paths.DEFAULT_SPLIT` for stdin).

`NONE` is how a report or a count names the rows that have no value for a field it groups them by.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeGuard

NONE = "(none)"


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(x, Mapping), with the usual dict and None decided without the ABC's Python-level check."""
    return type(x) is dict or (x is not None and isinstance(x, Mapping))


def template_id_of(tm: Any) -> str | None:
    """The template id a `template_metadata` value names (a non-empty string under `template_id`), or None."""
    tid = tm.get("template_id") if _is_map(tm) else None
    return tid if type(tid) is str and tid else None


def template_id(row: Mapping[str, Any], grading: Mapping[str, Any] | None = None) -> str | None:
    """The row's template id (its `template_metadata`, else the `grading` a rescore joined it with), or None."""
    tid = template_id_of(row.get("template_metadata"))
    if tid is not None:
        return tid
    if grading is not None:
        tid = grading.get("template_id")
        if type(tid) is str and tid:
            return tid
    return None


def grading_of(row: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The grading a rescored row carries (`metadata.grading`), or None when it carries none."""
    md = row.get("metadata") if row is not None else None
    g = md.get("grading") if _is_map(md) else None
    return g if _is_map(g) else None


def grading_contract(grading: Mapping[str, Any] | None) -> str | None:
    """The contract a grading names (a non-empty string), else None."""
    c = grading.get("contract") if grading is not None else None
    return c if type(c) is str and c else None


class Stamp(NamedTuple):
    """A row's contract stamp: whether it carries `metadata.mcqa_prep`, and what its `contract` holds."""

    present: bool
    value: Any = None  # as found: None when absent or null

    @property
    def contract(self) -> str | None:
        """The contract id the stamp names (a non-empty string), else None."""
        v = self.value
        return v if type(v) is str and v else None


UNSTAMPED = Stamp(False)


def contract_stamp(row: Mapping[str, Any] | None) -> Stamp:
    """The row's contract stamp (UNSTAMPED for a row without `metadata.mcqa_prep`, or for no row)."""
    md = row.get("metadata") if row is not None else None
    if not _is_map(md) or "mcqa_prep" not in md:
        return UNSTAMPED
    s = md["mcqa_prep"]
    return Stamp(True, s.get("contract") if _is_map(s) else None)


def stamp_of(row: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The row's whole stamp (`metadata.mcqa_prep`) when it is an object, else None."""
    md = row.get("metadata") if row is not None else None
    s = md.get("mcqa_prep") if _is_map(md) else None
    return s if _is_map(s) else None


def permutation_link(row: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The row's option-order link (metadata.mcqa_prep.permutation), or None when it is not an order of a
    permuted question."""
    md = row.get("metadata") if row is not None else None
    mp = md.get("mcqa_prep") if _is_map(md) else None
    link = mp.get("permutation") if _is_map(mp) else None
    return link if _is_map(link) else None


def permutation_question(row: Mapping[str, Any] | None) -> str | None:
    """The question a row is one option order of (its link's `question`, when a question key), or None."""
    link = permutation_link(row)
    q = link.get("question") if link is not None else None
    return q if type(q) is str and q.startswith(("uuid:", "prompt:")) else None


def reward_of(value: Any) -> float | None:
    """A reward as a float: a finite number, not a boolean; None when the value is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:  # (an integer beyond a float's range)
        return None
    return f if math.isfinite(f) else None


def recorded_reward(row: Mapping[str, Any]) -> float | None:
    """The reward a row records (its top-level `reward`), or None when it records no readable one."""
    return reward_of(row.get("reward"))
