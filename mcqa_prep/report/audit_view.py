"""The audit section of the report: an audit document (`mcqa-prep audit -o FILE`) -> alerts, plots and tables.

`report PATH... --audit FILE` reads the document written by `audit` (it is not recomputed: an audit against
large benchmark sets is a job of its own) and shows it beside the dataset sections. Every plot's numbers are
in its block, so the page's embedded document carries them, as for every other section; the section's
`summary` is the audit's own.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InputError
from ..io.readers import document_problem, read_document
from ..records import display_name
from . import positions_view, spec

AUDIT_VERSIONS = ("audit.v1",)
ROWS_SHOWN = 200
TOP_PANELS = 4
BLUE, GREY, RED, ORANGE, GREEN = "#4c72b0", "#8c8c8c", "#c44e52", "#dd8452", "#55a868"


def load(path: str | os.PathLike) -> dict[str, Any]:
    """The audit document at `path`; InputError when it is not one (unreadable, another version)."""
    try:
        doc, problem = read_document(path)
    except OSError as exc:
        raise InputError(
            f"{display_name(path)}: cannot read the audit document: {exc.strerror or exc}",
            reason="audit_document",
        ) from None
    if problem is None and not (isinstance(doc, dict) and doc.get("audit_version") in AUDIT_VERSIONS):
        problem = f"not an audit document (audit_version {', '.join(AUDIT_VERSIONS)})"
    if problem is None:  # every field the section reads, typed, and every number finite
        problem = document_problem(doc, "audit") or _orders_problem(doc)
    if problem is not None:
        raise InputError(f"{display_name(path)}: {problem}", reason="audit_document")
    doc.pop("ok", None)  # written by --format json
    doc.pop("error", None)
    return doc


def _orders_problem(doc: dict[str, Any]) -> str | None:
    """What the schema cannot say of `option_orders`: each summary's RStd names every option count it rates."""
    o = doc.get("option_orders") or {}
    drift = o.get("drift") or {}
    summaries = [(f"$.option_orders.models.{m}", s) for m, s in o.get("models", {}).items()]
    summaries += [
        (f"$.option_orders.drift.{side}.summary", drift[side]["summary"])
        for side in ("before", "after")
        if side in drift
    ]
    for where, s in summaries:
        missing = sorted(set(s["by_position"]) - set(s["rstd"]), key=int)
        if missing:
            return f"{where}.rstd: no RStd for the option count(s) {', '.join(missing)} it rates [audit.v1]"
    return None


def section(sid: str, doc: dict[str, Any], path: str, report_inputs: list[str]) -> dict[str, Any]:
    p = sid + "-"
    blocks = _contamination(p, doc) + _duplicates(p, doc) + _keys(p, doc) + _bias(p, doc) + _orders(p, doc)
    return {
        "id": sid,
        "kind": "audit",
        "contract": (doc.get("wrong_keys") or {}).get("evidence", {}).get("contract_id"),
        "title": f"Audit of {len(doc['inputs'])} dataset file(s) ({display_name(path)})",
        "inputs": [i["path"] for i in doc["inputs"]],
        "summary": doc["summary"],
        "alerts": _alerts(doc, report_inputs),
        "blocks": blocks,
    }


def _alerts(doc: dict[str, Any], report_inputs: list[str]) -> list[dict[str, str]]:
    s = doc["summary"]
    out = []
    others = [i["path"] for i in doc["inputs"] if i["path"] not in report_inputs]
    if others:
        more = f" … and {len(others) - 5} more" if len(others) > 5 else ""
        out.append(
            spec.alert("info", f"The audit read files this report did not: {', '.join(others[:5])}{more}.")
        )
    checks = (
        ("contaminated_rows", "contamination", "row(s) hold a benchmark question", "No row holds a benchmark question."),
        ("duplicate_rows", "duplicates", "row(s) repeat an earlier row", "No row repeats an earlier row."),
        ("wrong_keys", "wrong keys", "row(s) whose rollouts agree on another letter than the gold",
         "No row's rollouts agree on another letter than the gold."),
    )  # fmt: skip
    for key, name, some, none in checks:
        n = s.get(key)
        if n is None:
            out.append(spec.alert("info", f"Not checked: {name}."))
        elif n:
            out.append(spec.alert("warn", f"{n:,} {some}."))
        else:
            out.append(spec.alert("ok", none))
    if s.get("cross_split_duplicates"):
        out.append(
            spec.alert(
                "warn",
                f"{s['cross_split_duplicates']:,} duplicate(s) across splits: evaluation leaks into training.",
            )
        )
    flagged = s.get("position_bias_flagged") or {}
    if flagged:
        text = "; ".join(f"{n} options: {', '.join(v)}" for n, v in flagged.items())
        out.append(spec.alert("warn", f"Gold letter over its share: {text}."))
    return out


def _where(r: dict[str, Any]) -> str:
    return f"{r['file']}:{r['line']}"


def _contamination(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    c = doc.get("contamination")
    if c is None:
        return [
            spec.note("Contamination", "Not checked: the audit was run without benchmark files (--against).")
        ]
    out = _benchmark_table(p, doc) + _contamination_plots(p, c)
    out.append(_contaminated_table(p, c))
    return out


def _benchmark_table(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    bench_rows = [
        [
            b["path"],
            b["preset"],
            b["questions"],
            b["rows_read"],
            b["sha256"][:16],
            ", ".join(f"{k} {v}" for k, v in b["rejected_by_reason"].items()),
        ]
        for b in doc["benchmarks"]
    ]
    return [
        spec.table(
            p + "benchmarks",
            "Benchmark files",
            "Each benchmark file read by convert's readers: the preset it was read with, questions indexed, rows read, its sha256 (first 16 digits) and the rows that became no question.",
            [
                ("file", "text"),
                ("preset", "text"),
                ("questions", "number"),
                ("rows read", "number"),
                ("sha256", "text"),
                ("not a question", "text"),
            ],
            bench_rows,
        )
    ]


def _contamination_plots(p: str, c: dict[str, Any]) -> list[dict[str, Any]]:
    benches = sorted({x["benchmark"] for x in c["by_benchmark_and_method"]} | set(c["by_benchmark"]))
    methods = ("exact", "ngram", "minhash")
    counts = {(x["benchmark"], x["method"]): x["matches"] for x in c["by_benchmark_and_method"]}
    colors = {"exact": RED, "ngram": ORANGE, "minhash": BLUE}
    series = [spec.series(m, [counts.get((b, m), 0) for b in benches], color=colors[m]) for m in methods]
    out = [
        spec.bars(
            p + "contamination",
            f"Rows holding a benchmark question ({c['rows']:,} rows)",
            "Per benchmark file, the matches found each way (a match may be found several ways): exact (the question and the same options, in any order), ngram (shared word n-grams), minhash (near-duplicate, MinHash LSH then exact containment).",
            x_label="benchmark file",
            y_label="matches",
            panels=[spec.panel("", benches, series)],
        )
    ]
    bins = [f"{k / 10:.1f}-{(k + 1) / 10:.1f}" for k in range(len(c["containment_histogram"]))]
    out.append(
        spec.bars(
            p + "containment",
            "Containment of the best match",
            "Share of the benchmark question's word pairs found in the flagged row (1.0: all of them), for each flagged row's best match.",
            x_label="containment",
            y_label="rows",
            panels=[spec.panel("", bins, [spec.series("rows", c["containment_histogram"], color=BLUE)])],
        )
    )
    return out


def _contaminated_table(p: str, c: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for f in c["findings"][:ROWS_SHOWN]:
        m = f["matches"][0]
        b = m["benchmark"]
        rows.append(
            [
                _where(f["row"]),
                f["row"]["uuid"],
                _where(b),
                None if b["id"] is None else str(b["id"]),
                ", ".join(m["methods"]),
                m["ngram_matches"],
                m["containment"],
            ]
        )
    return spec.table(
        p + "contaminated",
        f"Contaminated rows (first {min(len(c['findings']), ROWS_SHOWN)} of {c['rows']:,})",
        "Each flagged row and its best benchmark match; the audit document lists every row and up to three matches.",
        [
            ("row", "text"),
            ("uuid", "text"),
            ("benchmark question", "text"),
            ("id", "text"),
            ("found by", "text"),
            ("shared n-grams", "number"),
            ("containment", "number"),
        ],
        rows,
    )


def _duplicates(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    d = doc.get("duplicates")
    if d is None:
        return [spec.note("Duplicates", "Not checked (--no-duplicates).")]
    kinds = list(d["by_kind"])
    within = {k: 0 for k in kinds}
    across = {k: 0 for k in kinds}
    for x in d["by_split_pair"]:
        (across if x["first_split"] != x["split"] else within)[x["kind"]] += x["rows"]
    out = [
        spec.bars(
            p + "duplicates",
            f"Duplicate rows ({d['rows']:,} of {d['rows_indexed']:,})",
            "Rows repeating an earlier row: exactly, with the options permuted, or as a near-duplicate; stacked by whether the earlier row is in the same split or another one (leakage).",
            x_label="kind",
            y_label="rows",
            stacked=True,
            panels=[
                spec.panel(
                    "",
                    kinds,
                    [
                        spec.series("same split", [within[k] for k in kinds], color=GREY),
                        spec.series("across splits", [across[k] for k in kinds], color=RED),
                    ],
                )
            ],
        )
    ]
    rows = [
        [
            _where(f["row"]),
            f["row"]["split"],
            _where(f["first"]),
            f["first"]["split"],
            f["kind"],
            f["similarity"],
        ]
        for f in d["findings"][:ROWS_SHOWN]
    ]
    out.append(
        spec.table(
            p + "duplicate-rows",
            f"Duplicate rows (first {len(rows)} of {d['rows']:,})",
            "Each duplicate row with the first row it repeats (estimated similarity for near-duplicates).",
            [
                ("row", "text"),
                ("split", "text"),
                ("repeats", "text"),
                ("its split", "text"),
                ("kind", "text"),
                ("similarity", "number"),
            ],
            rows,
        )
    )
    return out


def _keys(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    k = doc.get("wrong_keys")
    if k is None:
        return [
            spec.note("Wrong answer keys", "Not checked: the audit was run without rollouts (--rollouts).")
        ]
    hist = k["self_confidence_histogram"]
    bins = [f"{i / len(hist):.1f}-{(i + 1) / len(hist):.1f}" for i in range(len(hist))]
    out = [
        spec.bars(
            p + "confidence",
            "Self-confidence of the gold letter",
            f"For each row with rollouts (under contract {k['evidence']['contract_id']}), the share of its rollouts answering the gold letter, add-one smoothed; a wrong key sits at the left.",
            x_label="self-confidence",
            y_label="rows",
            panels=[spec.panel("", bins, [spec.series("rows", hist, color=BLUE)])],
        )
    ]
    rows = [
        [
            _where(f["row"]),
            f["row"]["uuid"],
            f["gold"],
            f["suspected"],
            f["rollouts"],
            f["agreement"],
            len(f["models"]),
            f["self_confidence"],
        ]
        for f in k["wrong_keys"][:ROWS_SHOWN]
    ]
    out.append(
        spec.table(
            p + "wrong-keys",
            f"Suspected wrong keys ({k['flagged']:,}), lowest self-confidence first",
            "Rows whose rollouts agree, across rollouts and models, on another letter than the gold.",
            [
                ("row", "text"),
                ("uuid", "text"),
                ("gold", "text"),
                ("rollouts say", "text"),
                ("rollouts", "number"),
                ("agreement", "number"),
                ("models", "number"),
                ("self-confidence", "number"),
            ],
            rows,
        )
    )
    return out


def _bias(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    pb = doc["position_bias"]
    return _gold_by_n(p, pb) + _option_counts(p, pb) + _answer_bias(p, pb)


def _gold_by_n(p: str, pb: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    per_n = pb["gold_by_options"]
    top = sorted(per_n, key=lambda n: -per_n[n]["rows"])[:TOP_PANELS]
    panels = []
    for n in sorted(top, key=int):
        v = per_n[n]
        letters = sorted(set(v["gold"]) | set(v["expected"]))
        flag = f", flagged {', '.join(v['flagged'])}" if v["flagged"] else ""
        panels.append(
            spec.panel(
                f"{n} options ({v['rows']} rows{flag})",
                letters,
                [
                    spec.series("observed", [v["gold"].get(L, 0) for L in letters], color=BLUE),
                    spec.series(
                        "uniform expectation",
                        [v["expected"].get(L, 0) for L in letters],
                        draw="marker",
                        color="#222222",
                    ),
                ],
            )
        )
    if panels:
        out.append(
            spec.bars(
                p + "gold-by-n",
                "Gold letter by number of options",
                f"Validate's position-bias rule per option count: {pb['rule']}.",
                x_label="gold letter",
                y_label="rows",
                panels=panels,
            )
        )
    return out


def _option_counts(p: str, pb: dict[str, Any]) -> list[dict[str, Any]]:
    oc = pb["option_counts"]
    dists = {"dataset": oc["dataset"], **oc["benchmarks"]}
    cats = sorted({n for d in dists.values() for n in d}, key=int)
    series = []
    for name, d in dists.items():
        total = sum(d.values()) or 1
        series.append(spec.series(name, [round(d.get(n, 0) / total, 4) for n in cats]))
    tv = ", ".join(f"{b}: {x}" for b, x in oc["total_variation"].items()) or "no benchmark"
    return [
        spec.bars(
            p + "option-counts",
            "Options per question: dataset and benchmarks",
            f"Share of questions with each number of options; total variation distance to each benchmark: {tv}.",
            x_label="number of options",
            y_label="share",
            panels=[spec.panel("", cats, series)],
        )
    ]


def _answer_bias(p: str, pb: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    bias = pb["answer_bias"]
    if bias:
        panels = []
        for b in bias[: TOP_PANELS * 2]:
            letters = sorted(b["recall"])
            panels.append(
                spec.panel(
                    f"{b['model']}, {b['options']} options (RStd {b['rstd']})",
                    letters,
                    [
                        spec.series("recall", [b["recall"][L] for L in letters], color=GREEN),
                        spec.series(
                            "answer share",
                            [b["answer_share"].get(L) or 0 for L in letters],
                            draw="marker",
                            color="#222222",
                        ),
                    ],
                )
            )
        out.append(
            spec.bars(
                p + "answer-bias",
                "Answer-letter bias of the models (PriDe)",
                "Per model and option count: each letter's recall (rollouts answering it among those whose gold it is) and the share of answers naming it; RStd is the recalls' standard deviation in points.",
                x_label="letter",
                y_label="recall / share",
                panels=panels,
            )
        )
    return out


def _orders(p: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Across option orders (`audit --pass-rates`, `--drift`): the blocks of report/positions_view.py."""
    o = doc.get("option_orders")
    if o is None:
        return []
    out = []
    for i, (model, s) in enumerate(o["models"].items(), 1):
        for b in positions_view.blocks(f"{p}orders-{i}-", s):
            out.append({**b, "title": f"{b['title']} ({model})"})
    d = o["drift"]
    if d is not None:
        out += positions_view.drift_blocks(p, d["drift"], d["before"]["model"], d["after"]["model"])
    return out
