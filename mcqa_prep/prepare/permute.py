"""`prepare --permute K`: each valid row written as K option orders, each a complete prepared row.

In the workers (rows.py hands a stamped, valid row to `Permuter.outcome`): the row's variants are made
(convert/variants.py: orders, options, gold, the prompt's option block), **each variant is checked again by
every row rule of the validator** (the prompt-format check, the regex audit, the answer-format example: what
a variant must pass is what any row must pass), stamped like the row (its contract, grading mode and source, and
bound to its own options, gold and prompt: binding.py; `metadata.mcqa_prep.permutation` links it to its question) and serialised. A row that cannot be permuted is
rejected with the reason, never written in its own order only:

- `permute.option_block`: the prompt's option block cannot be found exactly (block.py says why), or the row
  is already one order of a permuted question;
- `permute.variant`: a variant fails a row rule (its first error is named).

In the parent (Router): the variants' lines are written as one run, and `PermuteTally` counts questions and
variants for the manifest (`counts.permutation`: read = questions + rejected + dropped, written = variants).
The settings enter the manifest as `settings.permute`, so another K, mode, seed or identity choice is another
preparation (manifest.decide: stale), and a run without it leaves the settings as they were (an unpermuted
preparation's bytes, and its fingerprint, do not change).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..binding import STAMP_KEY, digests
from ..convert.orders import PermuteSpec
from ..convert.variants import expand
from ..io.writers import WideInteger, row_line
from ..records import Finding, Row

RULE_BLOCK = "permute.option_block"
RULE_VARIANT = "permute.variant"
RULES = (RULE_BLOCK, RULE_VARIANT)


@dataclass(frozen=True)
class Variants:
    """What the parent needs of a permuted row: each variant's line length (the lines are the outcome's
    `line`, concatenated), why it has fewer orders than asked, and whether options were anchored."""

    sizes: list[int]
    short: str | None
    anchored: bool


class Permuter:
    """Makes, checks, stamps and serialises the variants of one row (a worker's job; picklable)."""

    def __init__(self, spec: PermuteSpec, checker: Any):
        self.spec = spec
        self.salt = spec.salt()
        self.checker = checker  # validate.engine.RowChecker

    def lines(self, rec: Row, wide_ints: bool) -> tuple[bytes, Variants] | tuple[None, tuple[str, str]]:
        """(the variants' lines, Variants) of a stamped valid row, or (None, (rule, why not))."""
        data: dict[str, Any] = rec.data  # type: ignore[assignment]
        exp = expand(data, self.spec, self.salt)
        if exp.rows is None:
            return None, (RULE_BLOCK, exp.problem or "the row cannot be permuted")
        out: list[bytes] = []
        for variant in exp.rows:
            stamp = variant["metadata"]["mcqa_prep"]  # (the variant's own copy of the row's stamp)
            if STAMP_KEY in stamp:  # bound to what grades this order, as any prepared row (binding.py)
                stamp[STAMP_KEY] = digests(variant)
            findings, _ = self.checker.check(dataclasses.replace(rec, data=variant, hint=None))
            errors = [f for f in findings if f.severity == "error"]
            if errors:
                order = variant["metadata"]["mcqa_prep"]["permutation"]["order"]
                first = errors[0]
                return None, (
                    RULE_VARIANT,
                    f"the order {order} fails {first.rule} at {first.path}: {first.message}",
                )
            try:
                out.append(row_line(variant, wide_ints=wide_ints))
            except WideInteger:
                return None, ("prepare.unwritable", "an integer beyond 64 bits cannot be stored in Parquet")
            except (TypeError, ValueError) as exc:
                return None, ("prepare.unwritable", f"the row cannot be written as JSON: {exc}")
        return b"".join(out), Variants([len(x) for x in out], exp.short, exp.anchored)


def finding(rec: Row, rule: str, message: str) -> Finding:
    return Finding(rec.file, rec.line, rec.index, "$", rule, "error", message)


class PermuteTally:
    """Questions and variants written (the parent's count for the manifest)."""

    def __init__(self, settings: dict[str, Any] | None):
        self.on = settings is not None
        self.questions = 0
        self.variants = 0
        self.by_variants: Counter[int] = Counter()
        self.short: Counter[str] = Counter()
        self.anchored = 0

    def add(self, v: Variants) -> None:
        self.questions += 1
        self.variants += len(v.sizes)
        self.by_variants[len(v.sizes)] += 1
        if v.short is not None:
            self.short[v.short] += 1
        self.anchored += v.anchored

    def counts(self) -> dict[str, Any]:
        if not self.on:
            return {}
        return {
            "permutation": {
                "questions": self.questions,
                "variants": self.variants,
                "by_variants": {str(k): n for k, n in sorted(self.by_variants.items())},
                "fewer_orders": dict(sorted(self.short.items())),
                "anchored_questions": self.anchored,
            }
        }


def settings_of(spec: PermuteSpec | None) -> dict[str, Any] | None:
    """The manifest's `settings.permute` (None: not asked, absent from the settings)."""
    if spec is None:
        return None
    spec.check()
    return dict(spec.doc())
