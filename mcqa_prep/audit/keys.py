"""Wrong answer keys and the models' answer-letter bias, from rollouts measured under one grading contract.

The rollouts are read the way `passrates` reads them (passrates.measure.gather): a raw rollout (a row with a
`response`, as NeMo Gym writes it) is graded under the run's policy, joined with its dataset row by prompt
when it lacks the options; a rescored rollout (`metadata.grading.contract`) is read as graded; rollouts under
several contracts, without a model, or that cannot be graded are refused as `passrates` refuses them. The
pool kept per contract (`AnswerPool`) is the letter each rollout's answer was read as, per question and model.
Answers are read as `passrates` reads them (passrates.cells.answer_of): a rollout that was graded and gave no
answer counts as a rollout answering no letter ('none': it lowers the agreement and the self-confidence); a
rollout whose extracted answer is not recorded (UNKNOWN) is not evidence of any letter and is left out of
the histograms (counted as `answers_unknown`).

Per dataset row found in the pool (by evidence.row_keys: prompt key by default, since letters only compare
within one option order):

- wrong key: the rollouts agree on a letter other than the gold: at least `min_rollouts` rollouts, at least
  `min_agreement` of them on that letter, and, when several models answered, that letter is the most common
  answer of at least two of them. Ranked by self-confidence (as cleanlab's label quality score: the
  probability of the given label, here the answer histogram's share of the gold letter with add-one
  smoothing over the options), lowest first.
- answer-letter bias (PriDe): per model and option count, each letter's recall (rollouts answering it among
  those whose gold it is) and the standard deviation of the recalls (RStd, in percentage points), beside the
  share of answers naming each letter.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..evidence import row_keys
from ..grader.letters import normalize_gold
from ..passrates.cells import UNKNOWN

NO_ANSWER = "none"
CONFIDENCE_BINS = 10
KEPT = 1000  # wrong keys listed (the count is always complete)


def answer_letter(answer: str | None) -> str:
    """The letter an extracted answer names ('none' when it is not one letter A-Z)."""
    g = normalize_gold(answer) if answer is not None else ""
    return g if len(g) == 1 and "A" <= g <= "Z" else NO_ANSWER


class AnswerPool:
    """A contract's rollouts as passrates.measure.Measurement fills its pools: question key -> model ->
    how many rollouts gave each letter."""

    def __init__(self, grader_version: str | None = None) -> None:
        self.grader_version = grader_version
        self.rows = 0
        self.unknown = 0  # rollouts that do not record their extracted answer (not evidence of a letter)
        self.cells: dict[str, dict[str, Counter]] = {}

    def add(self, key: str, model: str, reward: float, answer: Any = UNKNOWN, where: Any = None) -> None:
        self.rows += 1
        if answer is UNKNOWN:
            self.unknown += 1
            return
        by_model = self.cells.get(key)
        if by_model is None:
            by_model = self.cells[key] = {}
        c = by_model.get(model)
        if c is None:
            c = by_model[model] = Counter()
        c[answer_letter(answer)] += 1

    def merge(self, other: AnswerPool) -> None:
        """Fold in the pool of the rollouts that follow this one's (a later chunk's), in order."""
        self.rows += other.rows
        self.unknown += other.unknown
        for key, theirs in other.cells.items():
            by_model = self.cells.get(key)
            if by_model is None:
                self.cells[key] = theirs
                continue
            for model, counts in theirs.items():
                mine = by_model.get(model)
                if mine is None:
                    by_model[model] = counts
                else:
                    mine.update(counts)


@dataclass(frozen=True)
class KeySettings:
    min_rollouts: int = 4
    min_agreement: float = 0.8
    key_by: str = "prompt"


@dataclass
class _Bias:
    """One model's letters at one option count: gold rollouts, answers naming it, gold rollouts answering it."""

    gold: Counter = field(default_factory=Counter)
    chosen: Counter = field(default_factory=Counter)
    hit: Counter = field(default_factory=Counter)


class KeyAudit:
    """The fold over dataset rows (in input order) against the answer pool."""

    def __init__(self, pool: AnswerPool, settings: KeySettings) -> None:
        self.pool = pool
        self.settings = settings
        self.seen: set[str] = set()
        self.rows_matched = 0
        self.rows_without_rollouts = 0
        self.too_few = 0
        self.flagged: list[dict[str, Any]] = []
        self.confidence = [0] * CONFIDENCE_BINS
        self.bias: dict[tuple[str, int], _Bias] = {}

    def keys_of(self, data: dict[str, Any]) -> list[str]:
        return row_keys(data, self.settings.key_by)

    def add(self, keys: list[str], gold: str | None, letters: list[str], where: dict[str, Any]) -> None:
        key = next((k for k in keys if k in self.pool.cells), None)
        if key is None:
            self.rows_without_rollouts += 1
            return
        if (
            key in self.seen or gold is None
        ):  # a question counts once (its first row); no gold, no key to check
            return
        self.seen.add(key)
        self.rows_matched += 1
        by_model = self.pool.cells[key]
        self._bias(by_model, gold, len(letters))
        total: Counter = Counter()
        for c in by_model.values():
            total.update(c)
        samples = sum(total.values())
        conf = (total[gold] + 1) / (samples + len(letters))
        self.confidence[min(CONFIDENCE_BINS - 1, int(conf * CONFIDENCE_BINS))] += 1
        if samples < self.settings.min_rollouts:
            self.too_few += 1
            return
        others = [(n, L) for L, n in total.items() if L not in (gold, NO_ANSWER)]
        if not others:
            return
        n_top, top = max(others)
        agreement = n_top / samples
        plural = {m: _plurality(c) for m, c in by_model.items() if any(L != NO_ANSWER for L in c)}
        agreeing = sorted(m for m, L in plural.items() if L == top)
        if agreement < self.settings.min_agreement or len(agreeing) < min(2, len(plural)):
            return
        self.flagged.append(
            {
                "row": where,
                "gold": gold,
                "suspected": top,
                "rollouts": samples,
                "agreement": round(agreement, 4),
                "self_confidence": round(conf, 4),
                "answers": dict(sorted(total.items())),
                "models": {
                    m: {"plurality": plural.get(m), "answers": dict(sorted(c.items()))}
                    for m, c in sorted(by_model.items())
                },
            }
        )

    def _bias(self, by_model: dict[str, Counter], gold: str, n: int) -> None:
        for model, c in by_model.items():
            b = self.bias.get((model, n))
            if b is None:
                b = self.bias[(model, n)] = _Bias()
            total = sum(c.values())
            b.gold[gold] += total
            b.hit[gold] += c[gold]
            for L, k in c.items():
                if L != NO_ANSWER:
                    b.chosen[L] += k

    def to_dict(self) -> dict[str, Any]:
        ranked = sorted(self.flagged, key=lambda f: (f["self_confidence"], -f["rollouts"], f["row"]["line"]))
        return {
            "settings": {
                "min_rollouts": self.settings.min_rollouts,
                "min_agreement": self.settings.min_agreement,
                "key_by": self.settings.key_by,
                "confidence": "self-confidence: (rollouts answering the gold + 1) / (rollouts + options)",
            },
            "rows_with_rollouts": self.rows_matched,
            "rows_without_rollouts": self.rows_without_rollouts,
            "rows_with_too_few_rollouts": self.too_few,
            "questions_in_rollouts": len(self.pool.cells),
            "answers_unknown": self.pool.unknown,
            "questions_matched": len(self.seen),
            "flagged": len(ranked),
            "wrong_keys": ranked[:KEPT],
            "self_confidence_histogram": self.confidence,
            "answer_bias": self._bias_doc(),
        }

    def _bias_doc(self) -> list[dict[str, Any]]:
        out = []
        for (model, n), b in sorted(self.bias.items()):
            letters = sorted(set(b.gold) | set(b.chosen))
            recall = {L: round(b.hit[L] / b.gold[L], 4) for L in letters if b.gold[L]}
            answered = sum(b.chosen.values())
            out.append(
                {
                    "model": model,
                    "options": n,
                    "rollouts": sum(b.gold.values()),
                    "gold": {L: b.gold[L] for L in letters},
                    "recall": recall,
                    "answer_share": {
                        L: round(b.chosen[L] / answered, 4) if answered else None for L in letters
                    },
                    "rstd": _rstd(list(recall.values())),
                }
            )
        return out


def _plurality(c: Counter) -> str | None:
    best = max(((n, L) for L, n in c.items() if L != NO_ANSWER), default=None)
    return best[1] if best is not None else None


def _rstd(recalls: list[float]) -> float | None:
    """PriDe's RStd: the standard deviation of per-letter recalls, in percentage points."""
    if len(recalls) < 2:
        return None
    mean = sum(recalls) / len(recalls)
    return round(100 * math.sqrt(sum((r - mean) ** 2 for r in recalls) / len(recalls)), 2)
