"""`convert --permute K`: each converted row written as K option orders, each rendered by its template.

convert renders the prompt itself, so a variant's option block needs no rewriting: the template renders the
variant's texts in their new order (and the self-check and template controls run on every variant). The
orders are convert/orders.py's (rotation or random, seeded per question by its uuid, anchored options and
--pin texts in place) over the row's order after `--shuffle`, when it is asked for; each variant's
`metadata.convert.option_source_index` is its own order's, and `metadata.mcqa_prep.permutation` links it to
its question (`uuid:<the row's uuid>`), the same link `prepare --permute` writes (prepare keeps it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..evidence import UUID_PREFIX
from .orders import PermuteSpec, orders_for, rng_for

__all__ = ["ConvertOrders", "PermuteSpec"]


class ConvertOrders:
    """The orders of each converted row, and their counts for the report."""

    def __init__(self, spec: PermuteSpec, user_pins: frozenset[str]):
        spec.check()
        self.spec = spec
        self.salt = spec.salt()
        self.user_pins = user_pins
        self.questions = 0
        self.variants = 0
        self.by_variants: Counter[int] = Counter()
        self.short: Counter[str] = Counter()
        self.anchored = 0

    def orders(self, texts: Sequence[str], uuid: str) -> list[tuple[tuple[int, ...], dict[str, Any]]]:
        """(order, link) of every variant of the row with these texts (after --shuffle) and uuid."""
        question = UUID_PREFIX + uuid
        found = orders_for(texts, self.spec, rng_for(question, self.salt), self.user_pins)
        k = len(found.orders)
        self.questions += 1
        self.variants += k
        self.by_variants[k] += 1
        if found.short is not None:
            self.short[found.short] += 1
        self.anchored += bool(found.pinned)
        return [
            (order, {"question": question, "order": list(order), "variant": v, "variants": k})
            for v, order in enumerate(found.orders)
        ]

    def report(self) -> dict[str, Any]:
        return {
            **self.spec.doc(),
            "questions": self.questions,
            "rows": self.variants,
            "by_variants": {str(k): n for k, n in sorted(self.by_variants.items())},
            "fewer_orders": dict(sorted(self.short.items())),
            "anchored_questions": self.anchored,
        }
