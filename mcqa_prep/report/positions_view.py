"""Report blocks of a model across option orders (passrates/positions.py): plain against consistent, the pass
rate by gold position, questions solved at one position only, and the letter-prior drift between two tables.
Used by the pass-rate sections (breakdown_view.py), the drift section and the audit section (audit_view.py)."""

from __future__ import annotations

from typing import Any

from ..passrates.positions import rstd_text
from . import spec
from .rescored_view import BLUE, RED

MAX_PANELS = 4  # option counts plotted (the smallest four; every one is in the section's summary)


def blocks(p: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of one model's positions summary (a note when the table records no variants)."""
    if not s["variants"]:
        return [
            spec.note(
                "Across option orders",
                "The table records no variants (a passrates.v1 or v2 table): measure it again with this "
                "mcqa-prep for the consistent rate and the pass rate by gold position.",
            )
        ]
    if not s["questions_with_variants"]:
        return [
            spec.note(
                "Across option orders",
                "No question was seen in two or more option orders: prepare the rows with --permute K (and "
                "measure their rollouts) for the consistent rate and the pass rate by gold position.",
            )
        ]
    rates = s["by_position"]
    ks = list(rates)[:MAX_PANELS]
    rstd = ", ".join(f"{k} options {s['rstd'][k]}" for k in ks if s["rstd"][k] is not None) or "—"
    caption = (
        f"First panel: over the {s['questions_with_variants']} question(s) seen in two or more option orders, the "
        "mean plain pass rate and the mean consistent rate (one rollout of every order passes: what the model "
        "knows whatever the letter). Then, per option count, the pass rate of every rollout whose gold stood at "
        f"each position (RStd in points: {rstd}; 0 when the position does not matter)."
    )
    panels = [
        spec.panel(
            "plain vs consistent",
            ["plain", "consistent"],
            [
                spec.series(
                    "questions in 2+ orders",
                    [s["plain_on_variants"], s["consistent_on_variants"]],
                    color=BLUE,
                )
            ],
        )
    ]
    for k in ks:
        letters = list(rates[k])
        panels.append(
            spec.panel(
                f"{k} options, by gold position",
                letters,
                [spec.series("pass rate", [rates[k][L]["rate"] for L in letters], color=RED)],
            )
        )
    out = [
        spec.bars(
            p + "orders",
            "Across option orders",
            caption,
            x_label="rate / gold position",
            y_label="pass rate",
            y_max=1.0,
            panels=panels,
        )
    ]
    out.append(_one_position_table(p, s))
    return out


def _one_position_table(p: str, s: dict[str, Any]) -> dict[str, Any]:
    rows = [
        [ex["key"], ex["position"], " ".join(f"{L}:{c}/{n}" for L, (n, c) in ex["by_position"].items())]
        for ex in s["one_position_examples"]
    ]
    return spec.table(
        p + "one-position",
        f"Solved at one gold position only: {s['one_position_only']} question(s)",
        "Questions seen with their gold at two or more positions and passed at exactly one of them (the first "
        f"{len(rows)} shown): passes/samples per gold position. Such a pass says more about the letter than about "
        "the answer.",
        [("question", "text"), ("solved at", "text"), ("passes by gold position", "text")],
        rows,
    )


def facts(s: dict[str, Any]) -> list[list[Any]]:
    if not s["variants"]:
        return []
    return [
        ["consistent (2+ orders)", s["consistent_on_variants"]],
        ["at chance", f"{s['at_chance']} of {s['questions_with_k']}"],
    ]


def drift_blocks(p: str, d: dict[str, Any], before: str, after: str) -> list[dict[str, Any]]:
    rows = d["by_position"]
    if not rows:  # (a plot of no panel divided by zero: tables whose rows were never seen in two orders)
        return [
            spec.note(
                f"Letter prior: {before} → {after}",
                "No option count has gold positions in both tables: measure rows prepared with --permute K.",
            )
        ]
    ks = sorted({r["k"] for r in rows})[:MAX_PANELS]
    panels = [
        spec.panel(
            f"{k} options",
            [r["position"] for r in rows if r["k"] == k],
            [
                spec.series(before, [r["before"] for r in rows if r["k"] == k], color=BLUE),
                spec.series(after, [r["after"] for r in rows if r["k"] == k], color=RED),
            ],
        )
        for k in ks
    ]
    return [
        spec.bars(
            p + "drift",
            f"Letter prior: {before} → {after}",
            "Pass rate by gold position before (blue) and after (red), per option count: a letter prior shows as "
            f"unequal bars; RStd in points by option count {rstd_text(d['rstd_before'])} → "
            f"{rstd_text(d['rstd_after'])}. Consistent rate over questions in "
            f"2+ orders: {d['consistent_before']} → {d['consistent_after']} (plain {d['plain_before']} → "
            f"{d['plain_after']}).",
            x_label="gold position",
            y_label="pass rate",
            y_max=1.0,
            panels=panels,
        ),
        spec.table(
            p + "drift-table",
            "Pass rate by gold position, before and after",
            "Per option count and gold position: the pass rate in each table and its change.",
            [("options", "number"), ("position", "text"), ("before", "number"), ("after", "number")]
            + [("change", "number")],
            [[r["k"], r["position"], r["before"], r["after"], r["change"]] for r in rows],
        ),
    ]


def drift_section(sid: str, doc: dict[str, Any]) -> dict[str, Any]:
    """A report section of positions.drift_of_tables' document."""
    b, a = doc["before"], doc["after"]
    d = doc["drift"]
    return {
        "id": sid,
        "kind": "drift",
        "contract": a["contract_id"],
        "title": f"Letter-prior drift: {b['model']} → {a['model']}",
        "inputs": [b["path"], a["path"]],
        "summary": doc,
        "facts": [
            ["RStd before", rstd_text(d["rstd_before"])],
            ["RStd after", rstd_text(d["rstd_after"])],
            ["largest change", d["largest_change"]],
            ["consistent before", d["consistent_before"]],
            ["consistent after", d["consistent_after"]],
        ],
        "alerts": [
            spec.alert("info", "Pass rate by gold position of two tables (before and after training).")
        ],
        "blocks": drift_blocks(sid + "-", d, b["model"], a["model"]),
    }
