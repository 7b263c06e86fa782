"""One definition of every count the commands report about graded rows, so that `rescore` (as it grades),
`summarize`, `report` and `passrates` (reading what rescore wrote) give the same figures for the same rows
(tests/test_counts.py computes them with all four on one file).

- A row is *scored* when it carries a grading (rescore's outcome, or the `metadata.grading` it wrote).
- A scored row is *invalid* when its status is `invalid_row`: it was not graded (unreadable, no response, no
  dataset row to join, a prompt with two golds). It is counted, but never in a mean reward, never as a
  reward change, never as evidence of a pass.
- Every other scored row is *graded*. The mean reward (what `summarize` calls accuracy) is the sum of the
  graded rows' rewards over the number of graded rows.
- A graded row whose input carried a readable reward is *recorded*; it is *changed* when that reward
  differs from this grader's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import STATUS_INVALID_ROW


def is_graded(status: Any) -> bool:
    """Whether a scored row with this status was graded (its reward counts)."""
    return status != STATUS_INVALID_ROW


def is_change(status: Any, previous: float | None, reward: float) -> bool:
    """Whether a row's recorded reward was changed by this grader (never for a row it could not grade)."""
    return is_graded(status) and previous is not None and previous != reward


@dataclass
class Tally:
    """The counts of scored rows, in the one definition above."""

    scored: int = 0
    graded: int = 0
    invalid: int = 0
    reward_sum: float = 0.0
    recorded: int = 0
    changed: int = 0

    def add(self, status: Any, reward: float, previous: float | None = None) -> bool:
        """Count one scored row; True when it was graded (its reward counted)."""
        self.scored += 1
        if not is_graded(status):
            self.invalid += 1
            return False
        self.graded += 1
        self.reward_sum += reward
        if previous is not None:
            self.recorded += 1
            self.changed += previous != reward
        return True

    def merge(self, other: Tally) -> None:
        self.scored += other.scored
        self.graded += other.graded
        self.invalid += other.invalid
        self.reward_sum += other.reward_sum
        self.recorded += other.recorded
        self.changed += other.changed

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.graded if self.graded else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scored": self.scored,
            "graded": self.graded,
            "invalid": self.invalid,
            "mean_reward": self.mean_reward,
            "reward_sum": self.reward_sum,
            "recorded": self.recorded,
            "changed": self.changed,
        }
