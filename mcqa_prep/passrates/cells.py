"""The rollouts of one grading contract as `passrates` counts them: per (question, model) cell, how many
rollouts, passes and rewards, which of them gave no answer, and the answer groups (votes) behind
majority@k, under a no_answer counting rule (kmetrics).

An extracted answer is one of three things: a letter (the answer the grader read), None (graded, and no
answer was found: the no_answer rule decides whether it counts as a failure or is left out), or UNKNOWN (the
rollout does not record what it answered, as NeMo Gym profile rows and rows without `extracted_answer`: it
counts as a sample under `fail`, is refused under `exclude`, and is never evidence of a letter).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..evidence import passed
from .consistency import VariantTally
from .estimate import Counts

UNKNOWN: Any = object()  # a rollout whose extracted answer is not known (not "no answer")


def answer_of(row: Mapping[str, Any]) -> Any:
    """The rollout's extracted answer: a letter, None (graded, no answer), or UNKNOWN (not recorded)."""
    if "extracted_answer" not in row:
        return UNKNOWN
    a = row["extracted_answer"]
    return a if isinstance(a, str) and a else None


@dataclass
class PassPool:
    """The rollouts graded under one contract: (key, model) -> [rollouts, passes, reward sum, unanswered,
    unanswered passes, unanswered reward sum, votes {(answer, passed): n} or None when an answer is unknown]."""

    grader_version: str | None = None
    rows: int = 0
    unknown: int = 0
    cells: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    variants: VariantTally = field(default_factory=VariantTally)  # the same rollouts by prompt (consistency)

    def add(
        self, key: str, model: str, reward: float, answer: Any = UNKNOWN, where: Any = None, n: int = 1
    ) -> None:
        """One graded rollout (`n` alike ones: only for a reward of 0 or 1, whose sums are exact in any
        order); `where` (consistency.variant_of: its prompt id, gold position, option count) counts it under
        its variant too."""
        self.add_all(key, model, where, ((reward, answer, n),))

    def add_all(self, key: str, model: str, where: Any, outcomes: Iterable[tuple[float, Any, int]]) -> None:
        """Rollouts of one (key, model) and variant `where` (None: not counted by variant), as (reward, answer,
        n) in reading order: the same counts as add() for each, the cell looked up once."""
        cell = self.cells.get((key, model))
        if cell is None:
            cell = self.cells[(key, model)] = [0, 0, 0.0, 0, 0, 0.0, {}]
        variant = self.variants.variant(key, model, where) if where is not None else None
        for reward, answer, n in outcomes:
            self.rows += n
            ok = passed(reward)
            passes, rewards = ok * n, reward * n  # (n = 1: the same numbers as `ok` and `reward`)
            if variant is not None:
                variant[3] += n
                variant[4] += passes
                if answer is None:
                    variant[5] += n
                    variant[6] += passes
            cell[0] += n
            cell[1] += passes
            cell[2] += rewards
            if answer is UNKNOWN:
                self.unknown += n
                cell[6] = None
            elif answer is None:
                cell[3] += n
                cell[4] += passes
                cell[5] += rewards
            elif cell[6] is not None:
                vote = (answer, ok)
                cell[6][vote] = cell[6].get(vote, 0) + n

    def merge(self, other: PassPool) -> None:
        """Fold in the pool of the rollouts that follow this one's (a later chunk's): the same cells, in the
        same order, as adding those rollouts one by one (a reward sum is added as the chunk's sum)."""
        self.rows += other.rows
        self.unknown += other.unknown
        self.variants.merge(other.variants)
        for km, theirs in other.cells.items():
            cell = self.cells.get(km)
            if cell is None:
                self.cells[km] = theirs
                continue
            for i in range(6):
                cell[i] += theirs[i]
            votes, more = cell[6], theirs[6]
            if votes is None or more is None:
                cell[6] = None
            else:
                for vote, n in more.items():
                    votes[vote] = votes.get(vote, 0) + n

    def counted(self, rule: str) -> tuple[dict[tuple[str, str], Counts], int]:
        """The cells as the rule counts them, and how many (question, model) pairs it leaves without a sample."""
        out: dict[tuple[str, str], Counts] = {}
        left = 0
        groups: dict[tuple[Any, ...], Any] = {}  # the answer groups of a votes dict, once per distinct one
        for km, (n, p, rs, u, up, ur, votes) in self.cells.items():
            if votes is None:  # answers unknown: only the `fail` rule can count (checked before)
                out[km] = Counts(n, n, p, rs, None, None)
                continue
            seen = tuple(votes.items())
            v = groups.get(seen)
            if v is None:
                v = groups[seen] = (
                    tuple(sorted((c for (_, ok), c in seen if ok), reverse=True)),
                    tuple(sorted((c for (_, ok), c in seen if not ok), reverse=True)),
                )
            if rule == "fail":
                out[km] = Counts(n, n, p - up, rs, u, v)
            elif n - u:
                out[km] = Counts(n, n - u, p - up, rs - ur, u, v)
            else:
                left += 1
        return out, left


def counted(pool: PassPool, rule: str) -> tuple[dict[tuple[str, str], Counts], int]:
    """The pool's cells under the no_answer rule, refusing what the rule cannot count."""
    if pool.unknown and rule == "exclude":
        raise InputError(
            f"{pool.unknown} rollout(s) do not record their extracted answer (extracted_answer): counting with "
            "no_answer=exclude needs to know which rollouts answered; rescore them (or count with "
            "no_answer=fail)",
            reason="answers_unknown",
            count=pool.unknown,
        )
    cells, left = pool.counted(rule)
    if not cells:
        raise InputError(
            f"no question has an answered rollout: with no_answer={rule} there is nothing to count "
            f"({left} question/model pair(s) left out)",
            reason="no_answered_rollouts",
        )
    return cells, left


def no_answer_shares(pool: PassPool) -> dict[str, float | None]:
    """Per model, the share of its rollouts without an extracted answer (None when an answer is unknown)."""
    acc: dict[str, list[Any]] = {}
    for (_, model), cell in pool.cells.items():
        a = acc.setdefault(model, [0, 0, True])
        a[0] += cell[3]
        a[1] += cell[0]
        a[2] = a[2] and cell[6] is not None
    return {m: round(u / n, 6) if known and n else None for m, (u, n, known) in acc.items()}
