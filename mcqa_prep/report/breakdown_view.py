"""Breakdown tallies -> report sections: one section per (table group, model), never pooled across models."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..evidence import RATE_BINS, distribution
from ..passrates.kmetrics import describe_rule
from ..passrates.positions import summary as positions_summary
from ..passrates.table import PassRateTable
from . import positions_view, spec
from .breakdown import Breakdown
from .rescored_view import BLUE, RED

GROUP_ROWS = 200  # groups listed per column; the rest pooled as OTHER
GROUP_BARS = 15
OTHER = "(other values)"


def sections(breakdowns: Iterable[Breakdown], dataset_rows: bool) -> list[dict[str, Any]]:
    out = []
    for g, b in enumerate(breakdowns, 1):
        for i, model in enumerate(sorted(b.table.models), 1):
            out.append(_section(f"passrates-{g}-{i}", b, model, dataset_rows))
    return out


def _entries(t: PassRateTable, model: str) -> list[tuple[str, Any]]:
    return [(k, per[model]) for k, per in t.entries.items() if model in per]


def _group_rows(b: Breakdown, model: str, col: int) -> list[dict[str, Any]]:
    groups: dict[str, list[Any]] = {}
    for key, e in _entries(b.table, model):
        groups.setdefault(b.value(key, col), []).append(e)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if len(ordered) > GROUP_ROWS:
        rest = [e for _, es in ordered[GROUP_ROWS - 1 :] for e in es]
        ordered = [*ordered[: GROUP_ROWS - 1], (OTHER, rest)]
    rows = []
    for value, es in ordered:
        n = len(es)
        buckets = [0] * b.table.buckets
        for e in es:
            buckets[e.bucket] += 1
        rows.append(
            {
                "value": value,
                "questions": n,
                "mean_pass_rate": round(sum(e.pass_rate for e in es) / n, 4),
                "mean_posterior": round(sum(e.posterior_mean for e in es) / n, 4),
                "solved": round(sum(e.passes == e.samples for e in es) / n, 4),
                "unsolved": round(sum(e.passes == 0 for e in es) / n, 4),
                "buckets": buckets,
            }
        )
    return rows


def _summary(b: Breakdown, model: str) -> dict[str, Any]:
    t = b.table
    es = [e for _, e in _entries(t, model)]
    dist = distribution((e.samples, e.passes) for e in es)
    buckets = [0] * t.buckets
    for e in es:
        buckets[e.bucket] += 1
    return {
        "model": model,
        "contract": t.contract_id,
        "counting": t.counting,
        "no_answer_rule": describe_rule(t.no_answer),
        "tables": t.identities(),
        "prior": t.priors[model].to_dict(),
        "credible_level": t.level,
        "questions": dist["questions"],
        "mean_pass_rate": None if dist["mean_pass_rate"] is None else round(dist["mean_pass_rate"], 4),
        "mean_posterior": round(sum(e.posterior_mean for e in es) / len(es), 4) if es else None,
        "pass_rate": dist["pass_rate"],
        "histogram": dist["histogram"],
        "buckets": buckets,
        "positions": positions_summary(_entries(t, model)),
        "metrics": (t.header.get("metrics") or {}).get(model),
        "rows_seen": b.rows_seen,
        "rows_matched": b.rows_found_by.get(model, 0),
        "by_column": {c: _group_rows(b, model, i) for i, c in enumerate(b.columns)},
        "examples": _examples(b, model),
    }


def _examples(b: Breakdown, model: str) -> list[dict[str, Any]]:
    out = []
    for (m, bucket), keys in b.examples.items():
        if m != model:
            continue
        for key in keys:
            e = b.table.entries[key][model]
            responses = b.responses.get((model, key), [])
            out.append(
                {
                    "bucket": bucket,
                    "key": key,
                    "passes": e.passes,
                    "samples": e.samples,
                    "posterior_mean": e.posterior_mean,
                    "prompt": b.prompts.get(key) or None,
                    "responses": [
                        {"text": r[0], "reward": r[1], "extracted_answer": r[2]} for r in responses
                    ],
                }
            )
    return out


def _section(sid: str, b: Breakdown, model: str, dataset_rows: bool) -> dict[str, Any]:
    s = _summary(b, model)
    m = s["metrics"] or {}
    p = sid + "-"
    blocks = [
        _difficulty_block(p, s, b.table.buckets),
        *_k_blocks(p, m),
        *positions_view.blocks(p, s["positions"]),
    ]
    for i, col in enumerate(b.columns):
        if dataset_rows:
            blocks += _column_blocks(f"{p}by-{i}", col, s["by_column"][col])
    if not dataset_rows:
        blocks.append(
            spec.note(
                "Breakdowns by source and column",
                "No dataset rows among the inputs: give the dataset (or prepared directory) the table was "
                "measured on to break the questions down by source dataset and by --by columns.",
            )
        )
    blocks.append(_examples_block(p, s["examples"]))
    prior = s["prior"]
    pass1 = (m.get("pass_at_k") or {}).get("1", {}).get("value")
    return {
        "id": sid,
        "kind": "passrates",
        "contract": s["contract"],
        "title": f"Pass rates of {model}",
        "inputs": [t["path"] for t in s["tables"]],
        "summary": s,
        "facts": [
            ["questions", s["questions"]],
            ["mean pass rate", s["mean_pass_rate"]],
            ["pass@1", pass1],
            ["no_answer", m.get("no_answer")],
            ["prior", f"Beta({prior['alpha']:g}, {prior['beta']:g})"],
            ["counting", f"no_answer={(s['counting'] or {}).get('no_answer', 'unrecorded')}"],
            *positions_view.facts(s["positions"]),
            ["contract", s["contract"][:19] + "…"],
        ],
        "alerts": _alerts(s),
        "blocks": blocks,
    }


def _alerts(s: dict[str, Any]) -> list[dict[str, str]]:
    out = [spec.alert("info", f"Counting rule: {s['no_answer_rule']}.")]
    if s["rows_seen"] and not s["rows_matched"]:
        out.append(spec.alert("warn", "None of the dataset rows is in this table: a table of other rows?"))
    b = s["pass_rate"]
    if s["questions"] and (b["0%"] + b["100%"]) / s["questions"] > 0.5:
        out.append(
            spec.alert(
                "warn", f"{b['0%'] + b['100%']} of {s['questions']} questions are never or always solved."
            )
        )
    return out


def _difficulty_block(p: str, s: dict[str, Any], buckets: int) -> dict[str, Any]:
    return spec.bars(
        p + "difficulty",
        f"Difficulty of {s['questions']} questions",
        "Left: questions by observed pass rate (passes / samples, the bins every command uses). Right: "
        f"questions per difficulty bucket of the posterior mean (0 the easiest; {s['credible_level']:g} "
        "credible intervals in the table), which shrinks few-sample rates towards the model's fitted prior.",
        x_label="pass rate / bucket",
        y_label="questions",
        panels=[
            spec.panel(
                "observed pass rate", list(RATE_BINS), [spec.series("questions", s["histogram"], color=BLUE)]
            ),
            spec.panel(
                "posterior bucket",
                [str(i) for i in range(buckets)],
                [spec.series("questions", s["buckets"], color=BLUE)],
            ),
        ],
    )


def _k_blocks(p: str, m: dict[str, Any]) -> list[dict[str, Any]]:
    pk = m.get("pass_at_k") or {}
    if not pk:
        return [spec.note("pass@k and majority@k", "No metrics in the table (a passrates.v1 table).")]
    ks = list(pk)
    series = [spec.series("pass@k", [pk[k]["value"] for k in ks], draw="line", color=BLUE)]
    mk = m.get("majority_at_k")
    if mk:
        series.append(
            spec.series(
                "majority@k", [mk[k]["value"] if k in mk else None for k in ks], draw="line", color=RED
            )
        )
    caption = (
        "pass@k: the unbiased estimator 1 - C(n-c, k)/C(n, k) averaged over questions with at least k samples; "
        "majority@k: the expected majority-vote score of k samples (ties share the point)."
    )
    if not mk:
        caption += " majority@k is absent: the rollouts' extracted answers were not recorded."
    return [
        spec.bars(
            p + "at-k",
            "pass@k and majority@k",
            caption,
            x_label="k",
            y_label="score",
            panels=[spec.panel("", ks, series)],
            y_max=1.0,
        )
    ]


def _column_blocks(pid: str, col: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    name = "source dataset" if col == "source" else col
    top = rows[:GROUP_BARS]
    return [
        spec.bars(
            pid,
            f"Mean pass rate by {name}",
            f"The {len(top)} largest groups by {name} (questions of one value pooled; never pooled across "
            "models): observed mean pass rate (bars) and the posterior mean (markers).",
            x_label="pass rate",
            y_label=name,
            horizontal=True,
            y_max=1.0,
            panels=[
                spec.panel(
                    "",
                    [r["value"] for r in top],
                    [
                        spec.series("mean pass rate", [r["mean_pass_rate"] for r in top], color=BLUE),
                        spec.series(
                            "posterior mean", [r["mean_posterior"] for r in top], draw="marker", color=RED
                        ),
                    ],
                )
            ],
        ),
        spec.table(
            pid + "-table",
            f"Questions by {name}",
            "Per value: questions, observed mean pass rate, mean posterior, share always / never solved, and "
            "questions per bucket (0 the easiest). A question takes the value of its first row in the inputs.",
            [
                ("value", "text"),
                ("questions", "number"),
                ("mean pass rate", "number"),
                ("mean posterior", "number"),
                ("solved", "number"),
                ("unsolved", "number"),
                ("per bucket", "text"),
            ],  # fmt: skip
            [
                [
                    r["value"],
                    r["questions"],
                    r["mean_pass_rate"],
                    r["mean_posterior"],
                    r["solved"],
                    r["unsolved"],
                    " / ".join(map(str, r["buckets"])),
                ]  # fmt: skip
                for r in rows
            ],
        ),
    ]


def _examples_block(p: str, examples: list[dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for ex in examples:
        responses = ex["responses"] or [{"text": None, "reward": None, "extracted_answer": None}]
        for r in responses:
            rows.append(
                [
                    ex["bucket"],
                    ex["key"],
                    f"{ex['passes']}/{ex['samples']}",
                    ex["posterior_mean"],
                    ex["prompt"] or "",
                    r["text"] or "",
                    r["reward"],
                    r["extracted_answer"] or "",
                ]  # fmt: skip
            )
    return spec.table(
        p + "examples",
        "Example prompts and responses per bucket",
        "Questions chosen per difficulty bucket (repeatably, by a hash of the key), with their prompt from the "
        "dataset rows and responses from the rescored rollouts among the inputs (empty when none was given).",
        [
            ("bucket", "number"),
            ("question", "text"),
            ("passes", "text"),
            ("posterior mean", "number"),
            ("prompt", "text"),
            ("response", "text"),
            ("reward", "number"),
            ("answer", "text"),
        ],  # fmt: skip
        rows,
    )
