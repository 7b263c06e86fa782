"""Pooling pass-rate tables: several tables (say, one per model, or one per collection run) read as one.

Tables are pooled only when their numbers mean the same thing: the same grading contract, the same counting
rule (`counting.no_answer`: a passrates.v1 table records none, so it pools only with v1 tables), the same key
kind, and no rollout file measured twice (an input sha256 found in two tables would count its rollouts twice).
Anything else is refused in one line naming what differs. The counts of a (question, model) found in several
tables are added; its answer groups (votes) cannot be (their letters are not recorded), so they become
unknown for that entry. The prior, posterior and metrics are estimated again on the pooled counts, and so are
the fields across variants (passrates.v3: the variants' counts added by prompt; a question some table records
without variants, v1 and v2 tables, gets one variant of unknown prompt and gold).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ContractMismatch, InputError
from ..io.paths import distinct_inputs
from ..progress import Progress
from .consistency import header_doc, merge
from .estimate import Counts, estimated
from .kmetrics import describe_rule
from .posterior import settings_doc
from .table import PassRateTable, read_table

POOLED = "pooled"
SUMMED = ("rollouts", "used", "invalid", "other_contracts", "unanswered_only", "answers_unknown")


def read_tables(
    paths: Sequence[Any], progress: Progress | None = None, *, variants: bool = True
) -> PassRateTable:
    """Read and pool tables (one table is returned as it is; the same table twice is refused). `variants=False`
    (see read_table) applies to one table only: pooling adds the variants' counts."""
    distinct_inputs(paths, "pass-rate table")
    keep = variants or len(paths) > 1
    return pool_tables([read_table(p, progress, variants=keep) for p in paths])


def check_poolable(tables: Sequence[PassRateTable]) -> None:
    first = tables[0]
    for t in tables[1:]:
        if t.contract_id != first.contract_id:
            raise ContractMismatch(
                f"refusing to pool pass-rate tables of two grading contracts: {first.path} ({first.contract_id}) "
                f"and {t.path} ({t.contract_id})",
                expected=first.contract_id,
                found=t.contract_id,
                reason="tables_contract",
            )
        if t.no_answer != first.no_answer:
            raise InputError(
                f"refusing to pool pass-rate tables that count unanswered rollouts differently: {first.path} "
                f"counts {describe_rule(first.no_answer)}, {t.path} counts {describe_rule(t.no_answer)}",
                reason="counting_mixed",
                rules={first.path: first.no_answer, t.path: t.no_answer},
            )
        if t.key_by != first.key_by:
            raise InputError(
                f"refusing to pool a table keyed by {first.key_by} ({first.path}) with one keyed by {t.key_by} "
                f"({t.path}): their questions are not the same",
                reason="key_by_mixed",
            )
    seen: dict[str, tuple[int, str]] = {}
    for i, t in enumerate(tables):
        for f in t.header["inputs"]:
            other = seen.get(f["sha256"])
            if other is not None and other[0] != i:
                raise InputError(
                    f"refusing to pool {other[1]} and {t.path}: both measured the rollout file {f['name']} "
                    f"(sha256 {f['sha256'][:16]}...), whose rollouts would count twice",
                    reason="tables_overlap",
                )
            seen[f["sha256"]] = (i, t.path)


def pool_tables(tables: Sequence[PassRateTable]) -> PassRateTable:
    if len(tables) == 1:
        return tables[0]
    check_poolable(tables)
    first = tables[0]
    cells: dict[tuple[str, str], Counts] = {}
    variants: dict[tuple[str, str], Any] = {}
    for t in tables:
        for key, per in t.entries.items():
            for model, e in per.items():
                _add_variants(variants, (key, model), e)
                c = cells.get((key, model))
                rollouts = e.rollouts if e.rollouts is not None else e.samples
                reward_sum = e.mean_reward * e.samples
                if c is None:
                    cells[(key, model)] = Counts(
                        rollouts, e.samples, e.passes, reward_sum, e.unanswered, e.votes
                    )
                    continue
                c.rollouts += rollouts
                c.samples += e.samples
                c.passes += e.passes
                c.reward_sum += reward_sum
                c.unanswered = (
                    None if c.unanswered is None or e.unanswered is None else c.unanswered + e.unanswered
                )
                c.votes = None
    est = estimated(cells, variants, first.no_answer, first.level, first.buckets)
    by_key: dict[str, dict[str, Any]] = {}
    models: dict[str, int] = {}
    for key, model, e in est.entries:
        by_key.setdefault(key, {})[model] = e
        models[model] = models.get(model, 0) + 1
    header = {
        **first.header,
        "table_schema": POOLED,
        "content_sha256": None,
        "pooled_from": [{**t.identity(), "path": t.path} for t in tables],
        "inputs": [f for t in tables for f in t.header["inputs"]],
        "posterior": settings_doc(first.level, first.buckets, est.priors),
        "metrics": est.metrics,
        "counts": {
            **{k: sum(t.header["counts"].get(k, 0) for t in tables) for k in SUMMED},
            "models": dict(sorted(models.items())),
            "questions": len(by_key),
        },
        "entries": len(est.entries),
        "consistency": header_doc(est.entries, first.buckets, est.priors_by_k),
    }
    if first.counting is None:
        header.pop("counting", None)
    return PassRateTable(" + ".join(t.path for t in tables), header, by_key, est.priors)


def _add_variants(acc: dict[tuple[str, str], Any], km: tuple[str, str], e: Any) -> None:
    """Add an entry's variant counts to the pooled ones (by prompt); an entry without them (a v1 or v2 table)
    leaves the cell's option count only."""
    have = acc.get(km)
    if e.variants is None:
        acc[km] = (e.k if have is None or have[0] == e.k else None, ())
    elif have is None:
        acc[km] = (e.k, tuple(e.variants))
    elif not have[1]:
        acc[km] = (have[0] if have[0] == e.k else None, ())
    else:
        acc[km] = merge(have, (e.k, tuple(e.variants)))
