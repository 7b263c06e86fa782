"""The audit document: every finding and every number behind the report's audit section (JSON-ready).

Layout (`audit_version` audit.v1): `inputs` (dataset files and their rows), `settings`, `benchmarks` (each
file's identity: sha256, bytes, questions, preset), `summary` (the counts), then one object per check:
`contamination` (each flagged row with its best benchmark matches), `duplicates` (each duplicate row with the
first row it repeats), `wrong_keys` (null without rollouts) and `position_bias` (gold balance per option
count, option counts against the benchmarks', the models' answer-letter bias). Names are in their display
form (records.display_name).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._version import __version__
from ..fields import NONE
from ..records import display_name
from . import duplicates as dp
from .benchmarks import benchmarks_of
from .contamination import METHODS
from .features import MAX_WORDS

CONTAINMENT_BINS = 10

AUDIT_VERSION = "audit.v1"  # the document format (report/audit_view.py reads these)


def build(request: Any, fold: Any, sources: list[Any], evidence: Any, text: Any) -> dict[str, Any]:

    dups = fold.dups.finish() if fold.dups is not None else None
    keys = fold.keys.to_dict() if fold.keys is not None else None
    if keys is not None:
        keys["evidence"] = _evidence(evidence)
    bias = _position_bias(fold, keys)
    doc = {
        "audit_version": AUDIT_VERSION,
        "tool_version": __version__,
        "inputs": [{"path": f, "split": sp, "rows": n} for (f, sp), n in fold.per_input.items()],
        "settings": _settings(request, text),
        "benchmarks": [f.to_dict() for f in fold.bench.files] if fold.bench is not None else [],
        "contamination": _contamination(fold) if fold.bench is not None else None,
        "duplicates": _duplicates(dups, fold) if dups is not None else None,
        "wrong_keys": keys,
        "position_bias": bias,
    }
    doc["summary"] = _summary(fold, doc)
    return doc


def _settings(request: Any, text: Any) -> dict[str, Any]:
    return {
        "contamination": {**request.contamination.to_dict(), "max_words": MAX_WORDS}
        if request.against
        else None,
        "duplicates": {"similarity": request.dup_similarity, "index_bytes_per_row": dp.BYTES_PER_ROW}
        if request.duplicates
        else None,
        "instruction_sentences_learned": sorted(text.boilerplate),
    }


def _contamination(fold: Any) -> dict[str, Any]:
    hist = [0] * CONTAINMENT_BINS
    for f in fold.contaminated:
        c = max(m["containment"] for m in f["matches"])
        hist[min(CONTAINMENT_BINS - 1, int(c * CONTAINMENT_BINS))] += 1
    by_bm: Counter = Counter()
    for f in fold.contaminated:
        for m in f["matches"]:
            for method in m["methods"]:
                for b in benchmarks_of(m["benchmark"]):
                    by_bm[(b, method)] += 1
    return {
        "rows": len(fold.contaminated),
        "by_method": {m: fold.by_method.get(m, 0) for m in METHODS},
        "by_benchmark": dict(sorted(fold.by_benchmark.items())),
        "by_benchmark_and_method": [
            {"benchmark": b, "method": m, "matches": n} for (b, m), n in sorted(by_bm.items())
        ],
        "containment_histogram": hist,
        "findings": fold.contaminated,
    }


def _duplicates(found: list[dict[str, Any]], fold: Any) -> dict[str, Any]:
    by_kind = Counter(f["kind"] for f in found)
    pairs: Counter = Counter()
    for f in found:
        pairs[(f["first"]["split"] or NONE, f["row"]["split"] or NONE, f["kind"])] += 1
    return {
        "rows_indexed": fold.dups.rows,
        "rows": len(found),
        "by_kind": {k: by_kind.get(k, 0) for k in dp.KINDS},
        "cross_split": sum(1 for f in found if f["cross_split"]),
        "same_uuid": sum(1 for f in found if f["same_uuid"]),
        "by_split_pair": [
            {"first_split": a, "split": b, "kind": k, "rows": n} for (a, b, k), n in sorted(pairs.items())
        ],
        "findings": found,
    }


def _evidence(got: Any) -> dict[str, Any]:
    run = got.run
    return {
        "contract_id": got.contract_id,
        "grader_version": got.pool.grader_version,
        "rollouts_read": run.rows,
        "rollouts_used": got.pool.rows,
        "invalid": run.invalid.to_dict(),
        "other_contracts": sum(p.rows for c, p in run.pools.items() if c != got.contract_id),
        "inputs": got.inputs,
        "join": run.index.summary() if run.index is not None else None,
    }


def _position_bias(fold: Any, keys: dict[str, Any] | None) -> dict[str, Any]:
    per_n = {}
    for n in sorted(fold.balance):
        cr = fold.balance[n]
        b = cr.position_bias()
        per_n[str(n)] = {
            "rows": sum(cr.gold_hist.values()),
            "gold": dict(sorted(cr.gold_hist.items())),
            "expected": b["expected"],
            "flagged": b["flagged"],
        }
    rule = next(iter(fold.balance.values())).position_bias()["rule"] if fold.balance else None
    dataset = {str(n): c for n, c in sorted(fold.option_counts.items())}
    bench: dict[str, dict[str, int]] = {}
    if fold.bench is not None:
        for f in fold.bench.files:
            acc = bench.setdefault(f.argument, {})
            for n, c in f.option_counts.items():
                acc[str(n)] = acc.get(str(n), 0) + c
    return {
        "rule": rule,
        "gold_by_options": per_n,
        "option_counts": {
            "dataset": dataset,
            "benchmarks": bench,
            "total_variation": {b: _tv(dataset, counts) for b, counts in bench.items()},
        },
        "answer_bias": keys["answer_bias"] if keys is not None else [],
    }


def _tv(a: dict[str, int], b: dict[str, int]) -> float | None:
    """Total variation distance between two option-count distributions (0: the same, 1: disjoint)."""
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return None
    return round(0.5 * sum(abs(a.get(k, 0) / ta - b.get(k, 0) / tb) for k in set(a) | set(b)), 4)


def _summary(fold: Any, doc: dict[str, Any]) -> dict[str, Any]:
    c, d, k, p = doc["contamination"], doc["duplicates"], doc["wrong_keys"], doc["position_bias"]
    return {
        "rows": fold.rows,
        "unreadable_rows": fold.unreadable,
        "unreadable_examples": fold.unreadable_examples,
        "contaminated_rows": c["rows"] if c is not None else None,
        "duplicate_rows": d["rows"] if d is not None else None,
        "cross_split_duplicates": d["cross_split"] if d is not None else None,
        "wrong_keys": k["flagged"] if k is not None else None,
        "position_bias_flagged": {n: v["flagged"] for n, v in p["gold_by_options"].items() if v["flagged"]},
        "answer_bias_rstd": {f"{b['model']} ({b['options']} options)": b["rstd"] for b in p["answer_bias"]},
    }


def display_inputs(sources: list[Any]) -> list[str]:
    return [display_name(s.path) for s in sources]
