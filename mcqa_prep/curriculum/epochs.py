"""`curriculum --epochs N`: which option order of a permuted question a trainer sees in which epoch.

A question written by `prepare --permute K` is K rows (its orders), linked by
`metadata.mcqa_prep.permutation.question`. Training on all K in every epoch multiplies the question's weight by
K; training on one fixed order teaches that order's letter. So, per question, its orders are dealt to the
epochs in a seeded random order: epoch e sees order `deal[e mod m]` of its m orders, so no order repeats
before every order was seen (with N <= m, no epoch repeats an order at all), and a question counts once in
the schedule whatever its number of orders. A row that is not one order of a permuted question is a question
of its own with one order (the same row every epoch; counted as repeating when N > 1).

What a trainer reads: the `--rows-out` rows carry `epochs` (the epochs in which this order is seen: [] when
it is not) in their difficulty object; `--ordered-out` draws questions, and the r-th draw of a question is its
order for epoch r (every question once before any twice: the r-th draw is the r-th epoch of that question);
the schedule's header records the plan (`epochs`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ..fields import permutation_link, permutation_question


class EpochPlan:
    """The questions of the scheduled rows (by their index among the placed rows) and their deal."""

    def __init__(self, epochs: int, seed: int) -> None:
        self.epochs = epochs
        self.seed = seed
        self._orders: dict[str, list[tuple[int, int]]] = {}  # question -> [(variant, row index)]
        self._question: dict[int, str] = {}
        self._deal: dict[str, list[int]] = {}  # question -> row indices in epoch order (one cycle)

    def add(self, index: int, row: Mapping[str, Any]) -> None:
        q = permutation_question(row)
        link = permutation_link(row) if q else None
        variant = link.get("variant") if link is not None else None
        key = q if q is not None else f"row:{index}"
        self._question[index] = key
        self._orders.setdefault(key, []).append((variant if isinstance(variant, int) else 0, index))

    def finish(self) -> None:
        for q, rows in self._orders.items():
            deal = [i for _, i in sorted(rows)]
            random.Random(f"{self.seed}:epochs:{q}").shuffle(deal)
            self._deal[q] = deal

    def representative(self, index: int) -> bool:
        """The question's row that stands for it in the schedule (its epoch-0 order)."""
        return self._deal[self._question[index]][0] == index

    def order_for(self, index: int, draw: int) -> int:
        """The row of the question (given by any of its rows) to show at its `draw`-th draw (epoch)."""
        deal = self._deal[self._question[index]]
        return deal[draw % len(deal)]

    def epochs_of(self, index: int) -> list[int]:
        deal = self._deal[self._question[index]]
        at = deal.index(index)
        return list(range(at, self.epochs, len(deal)))

    def doc(self) -> dict[str, Any]:
        sizes = [len(d) for d in self._deal.values()]
        return {
            "count": self.epochs,
            "seed": self.seed,
            "questions": len(sizes),
            "orders": sum(sizes),
            "questions_with_orders": sum(n > 1 for n in sizes),
            "repeating": sum(n < self.epochs for n in sizes),
            "by_orders": {str(n): sizes.count(n) for n in sorted(set(sizes))},
        }
