"""Per model, from a passrates.v3 table: does the model know its questions, or the letters?

- **plain against consistent**: over the questions seen in two or more variants, the mean plain pass rate
  and the mean consistent rate (every variant passed). A model that answers by letter prior passes 1/k of its
  rotations and almost never all of them: the gap is what its plain accuracy owes to the option order;
- **pass rate by gold position**, per option count k: every rollout whose gold stood at position A, B, C, ...
  (0-based in the table, shown as letters), pooled over the questions with k options (a 10-option question is
  harder than a 4-option one wherever its gold stands); its spread is RStd (the standard deviation of the
  per-position rates, in percentage points: PriDe's measure of selection bias, on pass rates);
- **solved at one position only**: questions seen with their gold at two or more positions that were passed
  at exactly one of them (with examples): knowledge of the letter, not of the answer;
- **letter-prior drift** between two tables (before and after training, one model in each): the per-position
  rates side by side, their change, and RStd before and after.

Only what a v3 table records is used; a v1 or v2 table has no variants (`summary` says so: `variants: false`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ContractMismatch, InputError, UsageError
from ..labels import LETTERS
from .consistency import by_position
from .entries import Entry
from .table import PassRateTable, describe_models

EXAMPLES = 10


def letter(position: int) -> str:
    return LETTERS[position] if position < len(LETTERS) else str(position + 1)


def _rstd(rates: Iterable[float]) -> float | None:
    xs = list(rates)
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return round(100 * math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)), 2)


def position_rates(positions: Mapping[int, list[int]]) -> dict[str, dict[str, Any]]:
    """{letter: {samples, passes, rate}} in position order."""
    return {
        letter(p): {"samples": n, "passes": c, "rate": round(c / n, 4) if n else None}
        for p, (n, c) in sorted(positions.items())
    }


def summary(entries: Iterable[tuple[str, Entry]], examples: int = EXAMPLES) -> dict[str, Any]:
    """One model's entries (key, Entry) -> plain against consistent, rates by gold position per option count,
    one-position questions with examples, and the chance-corrected picture (at chance, mean corrected rate)."""
    t = _Tally()
    for key, e in entries:
        t.add(key, e, examples)
    rates = {str(k): position_rates(t.positions[k]) for k in sorted(t.positions)}
    multi = t.multi
    return {
        "questions": t.n,
        "variants": t.has_variants,
        "mean_pass_rate": round(t.plain / t.n, 4) if t.n else None,
        "questions_with_variants": multi,
        "plain_on_variants": round(t.plain_multi / multi, 4) if multi else None,
        "consistent_on_variants": round(t.consistent_multi / multi, 4) if multi else None,
        "by_position": rates,
        "rstd": {
            k: _rstd(r["rate"] for r in per.values() if r["rate"] is not None) for k, per in rates.items()
        },
        "one_position_only": t.one_count,
        "one_position_examples": t.one,
        "questions_with_k": t.with_k,
        "at_chance": t.at_chance,
        "mean_corrected": round(t.corrected / t.with_k, 4) if t.with_k else None,
    }


class _Tally:
    def __init__(self) -> None:
        self.n = self.multi = self.at_chance = self.with_k = self.one_count = 0
        self.plain = self.plain_multi = self.consistent_multi = self.corrected = 0.0
        self.positions: dict[int, dict[int, list[int]]] = {}  # k -> gold position -> [samples, passes]
        self.one: list[dict[str, Any]] = []
        self.has_variants = False

    def add(self, key: str, e: Entry, examples: int) -> None:
        self.n += 1
        self.plain += e.pass_rate
        if e.variants is None:
            return
        self.has_variants = True
        if e.k is not None:
            self.with_k += 1
            self.at_chance += bool(e.at_chance)
            self.corrected += e.corrected_mean or 0.0
        if len(e.variants) > 1:
            self.multi += 1
            self.plain_multi += e.pass_rate
            self.consistent_multi += e.consistent_rate or 0.0
        elif e.k is None:  # one variant and no option count: no position to count, never one of several
            return
        per = by_position(e.variants)
        if e.k is not None:
            for g, (n, c) in per.items():
                acc = self.positions.setdefault(e.k, {}).setdefault(g, [0, 0])
                acc[0] += n
                acc[1] += c
        solved = [g for g, (_, c) in per.items() if c]
        if len(per) >= 2 and len(solved) == 1:
            self.one_count += 1
            if len(self.one) < examples:
                self.one.append(
                    {
                        "key": key,
                        "position": letter(solved[0]),
                        "by_position": {letter(g): [n, c] for g, (n, c) in per.items()},
                    }
                )


def model_entries(entries: Mapping[str, Mapping[str, Entry]], model: str) -> list[tuple[str, Entry]]:
    return [(k, per[model]) for k, per in entries.items() if model in per]


def drift(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Two summaries (one model before training, one after) -> the change of their letter prior, per option
    count seen in both."""
    rows = []
    for k in sorted(set(before["by_position"]) & set(after["by_position"]), key=int):
        b_k, a_k = before["by_position"][k], after["by_position"][k]
        for L in sorted(set(b_k) | set(a_k), key=lambda x: (len(x), x)):
            b = b_k.get(L, {}).get("rate")
            a = a_k.get(L, {}).get("rate")
            change = None if a is None or b is None else round(a - b, 4)
            rows.append({"k": int(k), "position": L, "before": b, "after": a, "change": change})
    changes = [r["change"] for r in rows if r["change"] is not None]
    return {
        "by_position": rows,
        "rstd_before": before["rstd"],
        "rstd_after": after["rstd"],
        "largest_change": max(changes, key=abs) if changes else None,
        "plain_before": before["plain_on_variants"],
        "plain_after": after["plain_on_variants"],
        "consistent_before": before["consistent_on_variants"],
        "consistent_after": after["consistent_on_variants"],
    }


def only_model(table: PassRateTable) -> str:
    models = table.models
    if len(models) != 1:
        raise UsageError(
            f"{table.path}: holds pass rates of {len(models)} models ({describe_models(models)}); a letter-prior "
            "drift compares one model before and after",
            reason="drift_models",
            models=models,
        )
    return next(iter(models))


def drift_of_tables(before: PassRateTable, after: PassRateTable) -> dict[str, Any]:
    """The letter-prior drift between two v3 tables of one model each, measured under one contract."""
    for t in (before, after):
        if t.version != "passrates.v3":
            raise InputError(
                f"{t.path}: a {t.version} table records no gold positions (measured before passrates.v3): "
                "measure the pass rates again",
                reason="table_version",
            )
    if before.contract_id != after.contract_id:
        raise ContractMismatch(
            f"refusing to compare pass rates of two grading contracts: {before.path} ({before.contract_id}) and "
            f"{after.path} ({after.contract_id})",
            expected=before.contract_id,
            found=after.contract_id,
            reason="tables_contract",
        )
    sides: dict[str, dict[str, Any]] = {}
    for name, t in (("before", before), ("after", after)):
        model = only_model(t)
        sides[name] = {
            "path": t.path,
            "model": model,
            "contract_id": t.contract_id,
            "content_sha256": t.content_sha256,
            "summary": summary(model_entries(t.entries, model)),
        }
    return {**sides, "drift": drift(sides["before"]["summary"], sides["after"]["summary"])}


def describe(s: Mapping[str, Any]) -> list[str]:
    """A summary as text lines (the commands' text output); none when no question was seen in two or more
    variants (a table of unpermuted rows says nothing across orders)."""
    if not s["variants"] or not s["questions_with_variants"]:
        return []
    out = [
        f"across option orders: {s['questions_with_variants']} question(s) in 2+ orders: plain "
        f"{_num(s['plain_on_variants'])}, consistent {_num(s['consistent_on_variants'])}; "
        f"solved at one gold position only: {s['one_position_only']}"
    ]
    for k, per in s["by_position"].items():
        rates = " ".join(f"{L} {r['rate']:.2f}" for L, r in per.items() if r["rate"] is not None)
        rstd = s["rstd"][k]
        out.append(
            f"pass rate by gold position, {k} options: {rates}" + (f" (RStd {rstd:.1f})" if rstd else "")
        )
    if s["questions_with_k"]:
        out.append(
            f"chance-corrected: mean {_num(s['mean_corrected'])}; at chance (cannot be told from guessing): "
            f"{s['at_chance']} of {s['questions_with_k']}"
        )
    return out


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def rstd_text(rstd: Mapping[str, float | None]) -> str:
    """{option count: RStd} as text: '4: 25.3, 10: 12.0'."""
    return ", ".join(f"{k}: {v}" for k, v in rstd.items() if v is not None) or "-"
