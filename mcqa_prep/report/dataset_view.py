"""A dataset section of the report document, built from a finished DatasetTally (numbers -> blocks)."""

from __future__ import annotations

from typing import Any

from ..evidence import RATE_BINS
from . import spec
from .bins import LENGTH_EDGES, length_labels, share
from .dataset import (
    CUSTOM_MODE,
    DUPLICATE_RULES,
    MAX_OPTIONS_BIN,
    REGEX_RULES,
    DatasetTally,
    iter_patterns,
    pattern_controls,
)

BLUE, GREY, RED, ORANGE, GREEN = "#4c72b0", "#8c8c8c", "#c44e52", "#dd8452", "#55a868"
TOP_TEMPLATES = 20
TOP_PANELS = 4
RULE_DOC = "docs/design/validate.md"


def section(
    sid: str, contract: str | None, tally: DatasetTally, provenance: dict[str, Any]
) -> dict[str, Any]:
    """The section dict: title, summary numbers for machines, verdicts and the blocks to draw."""
    v = tally.validator.summary()
    bias = v["position_bias"]
    summary = {
        "rows": tally.rows,
        "splits": dict(tally.splits.most_common()),
        "errors": v["errors"],
        "warnings": v["warnings"],
        "rows_with_errors": v["rows_with_errors"],
        "rows_with_warnings": v["rows_with_warnings"],
        "findings_by_rule": v["findings_by_rule"],
        "expected_answer_histogram": v["expected_answer_histogram"],
        "position_bias": bias,
        "custom_regex_rows": tally.custom_rows,
        "custom_regex_share": share(tally.custom_rows, tally.rows),
        "templates": len(tally.templates),
        "prompt_chars": tally.prompt_chars.stats(),
    }
    title = "Dataset rows " + (
        f"prepared under contract {contract}" if contract else "not prepared (no grading contract)"
    )
    p = sid + "-"
    blocks: list[dict[str, Any]] = []
    blocks += provenance_blocks(p, provenance)
    blocks += shape_blocks(p, tally)
    blocks += gold_blocks(p, tally, v)
    blocks += template_blocks(p, tally)
    blocks += finding_blocks(p, tally, v)
    blocks += regex_blocks(p, tally)
    blocks += length_blocks(p, tally)
    blocks += profile_blocks(p, tally)
    blocks += duplicate_blocks(p, tally, v)
    return {
        "id": sid,
        "kind": "dataset",
        "contract": contract,
        "title": title,
        "inputs": provenance.get("inputs", []),
        "summary": summary,
        "alerts": alerts(tally, v),
        "blocks": blocks,
    }


def alerts(tally: DatasetTally, v: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    if v["errors"]:
        out.append(
            spec.alert(
                "warn",
                f"{v['errors']} validation error(s) in {v['rows_with_errors']} row(s); see the findings below",
            )
        )
    else:
        out.append(spec.alert("ok", f"No validation errors in {tally.rows} row(s)."))
    flagged = v["position_bias"]["flagged"]
    if flagged:
        out.append(
            spec.alert(
                "warn",
                f"Position bias: gold letter {', '.join(flagged)} far over its uniform share "
                f"({v['position_bias']['rule']}).",
            )
        )
    else:
        out.append(spec.alert("ok", "No position bias: no gold letter far over its uniform share."))
    return out


def provenance_blocks(p: str, prov: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[list[Any]] = []
    for m in prov.get("manifests", []):
        man = m["manifest"]
        contract = man.get("contract", {})
        policy = contract.get("policy", {})
        sources = []
        for i in man.get("inputs", []):
            if i.get("repo"):
                sources.append(f"{i['repo']}@{i.get('commit', '?')}:{i.get('path', '')}")
            else:
                sources.append(f"{i.get('name') or i.get('path')} sha256:{str(i.get('sha256', ''))[:12]}")
        rows.append(
            [
                m["path"],
                "prepared",
                man.get("contract_id"),
                f"grader {contract.get('grader_version')}, default mode {policy.get('grading_mode_default')}"
                f", override {policy.get('grading_mode_override') or 'none'}",
                man.get("counts", {}).get("written"),
                "; ".join(sources),
                f"mcqa-prep {man.get('tool', {}).get('version')} at {man.get('created_at')}",
            ]
        )
    for lk in prov.get("locks", []):
        lock = lk["lock"]
        state = "verified against its lock" if lk["verified"] else "NOT verified against its lock"
        rows.append(
            [lk["path"], "pulled", None, state, None, f"{lock.get('repo')}@{lock.get('commit')}", None]
        )
    if not rows:
        return []
    return [
        spec.table(
            p + "provenance",
            "Provenance",
            "Prepared directories: the manifest's contract, inputs (sources) and tool; pulled directories: "
            "the hub repository and the exact commit recorded by pull.",
            [
                ("input", "text"),
                ("kind", "text"),
                ("contract id", "text"),
                ("grading", "text"),
                ("rows written", "number"),
                ("sources / commit", "text"),
                ("made by", "text"),
            ],
            rows,
        )
    ]


def shape_blocks(p: str, t: DatasetTally) -> list[dict[str, Any]]:
    splits = t.splits.most_common()
    counts = t.option_counts
    last = max((i for i, n in enumerate(counts) if n), default=1)
    first = min((i for i, n in enumerate(counts) if n), default=0)
    lo, hi = min(first, 2), max(last, 4)
    cats = [str(i) if i <= MAX_OPTIONS_BIN else f"{MAX_OPTIONS_BIN + 1}+" for i in range(lo, hi + 1)]
    return [
        spec.bars(
            p + "splits",
            "Rows per split",
            "One bar per split (from the file names, the pull lock or the manifest); the height is the number "
            "of rows read, malformed lines included.",
            x_label="split",
            y_label="rows",
            panels=[spec.panel("", [s for s, _ in splits], [spec.series("rows", [n for _, n in splits])])],
        ),
        spec.bars(
            p + "options",
            "Options per row",
            "How many options (letters with a text) each row offers. NeMo Gym rows usually have 4 or 10; a "
            "bar at 0 or 1 is a broken row (see the options_count finding).",
            x_label="number of options",
            y_label="rows",
            panels=[spec.panel("", cats, [spec.series("rows", counts[lo : hi + 1])])],
        ),
    ]


def gold_blocks(p: str, t: DatasetTally, v: dict[str, Any]) -> list[dict[str, Any]]:
    hist = v["expected_answer_histogram"]
    bias = v["position_bias"]
    exp = bias["expected"]
    if not hist:
        return [spec.note("Gold letters", "No row has an expected_answer that names one of its options.")]
    letters = sorted(set(hist) | set(exp))
    flagged = bias["flagged"]
    verdict = f"flagged: {', '.join(flagged)}" if flagged else "no letter flagged"
    out = [
        spec.bars(
            p + "gold",
            f"Gold letter vs. uniform expectation ({verdict})",
            "Bars: rows whose expected_answer is that letter. Black dash: rows expected if every row's gold "
            "were uniform over the letters it offers. Red dash: the position-bias threshold (2x the "
            f"expectation); a bar above it is flagged when the expectation is at least 20 rows. Rule: {bias['rule']}.",
            x_label="gold letter (expected_answer)",
            y_label="rows",
            panels=[
                spec.panel(
                    "",
                    letters,
                    [
                        spec.series("observed", [hist.get(L, 0) for L in letters], color=BLUE),
                        spec.series(
                            "uniform expectation",
                            [round(exp.get(L, 0.0), 2) for L in letters],
                            draw="marker",
                            color="#222222",
                        ),
                        spec.series(
                            "bias threshold (2x)",
                            [round(2 * exp.get(L, 0.0), 2) for L in letters],
                            draw="marker",
                            color=RED,
                        ),
                    ],
                )
            ],
        )
    ]
    expected = t.expected_by_n()
    per_n: dict[int, int] = {}
    for (n, _), rows in t.gold_by_n.items():
        per_n[n] = per_n.get(n, 0) + rows
    top = sorted(per_n, key=lambda n: (-per_n[n], n))[:TOP_PANELS]
    panels = []
    for n in sorted(top):
        ls = sorted({L for (k, L) in t.gold_by_n if k == n} | {L for (k, L) in expected if k == n})
        panels.append(
            spec.panel(
                f"{n} options ({per_n[n]} rows)",
                ls,
                [
                    spec.series("observed", [t.gold_by_n.get((n, L), 0) for L in ls], color=BLUE),
                    spec.series(
                        "uniform expectation",
                        [round(expected.get((n, L), 0.0), 2) for L in ls],
                        draw="marker",
                        color="#222222",
                    ),
                ],
            )
        )
    out.append(
        spec.bars(
            p + "gold-by-n",
            "Gold letter by number of options",
            "One panel per option count (the most common ones): a letter's bar far above its dash means "
            "rows with that many options put the answer there more often than chance.",
            x_label="gold letter",
            y_label="rows",
            panels=panels,
        )
    )
    return out


def template_blocks(p: str, t: DatasetTally) -> list[dict[str, Any]]:
    items = sorted(t.templates.items(), key=lambda kv: (-kv[1].rows, kv[0]))
    shown = items[:TOP_TEMPLATES]
    modes = t.modes.most_common()
    out = [
        spec.bars(
            p + "templates",
            f"Template mix (top {len(shown)} of {len(items)} template_id values)",
            "Rows per template_id (template_metadata.template_id; '(none)' for rows without one). Orange: "
            "rows graded by the template's custom output_regex; blue: by grading_mode.",
            x_label="rows",
            y_label="template_id",
            horizontal=True,
            stacked=True,
            panels=[
                spec.panel(
                    "",
                    [k for k, _ in shown],
                    [
                        spec.series("custom output_regex", [x.custom for _, x in shown], color=ORANGE),
                        spec.series("grading_mode", [x.rows - x.custom for _, x in shown], color=BLUE),
                    ],
                )
            ],
        ),
        spec.bars(
            p + "modes",
            f"Grading mode mix (custom regex share {_pct(t.custom_rows, t.rows)})",
            "Rows per effective grading: a custom output_regex takes priority over grading_mode; rows "
            "without either are graded by the policy's default mode.",
            x_label="rows",
            y_label="grading",
            horizontal=True,
            panels=[
                spec.panel(
                    "",
                    [k for k, _ in modes],
                    [
                        spec.series(
                            "rows",
                            [n for _, n in modes],
                            color=BLUE,
                        )
                    ],
                )
            ],
        ),
    ]
    rows = []
    for tid, x in items:
        top_rules = ", ".join(f"{r} ×{n}" for r, n in x.rules.most_common(4))
        top_rules += f" … and {len(x.rules) - 4} more" if len(x.rules) > 4 else ""
        rows.append([tid, x.rows, share(x.rows, t.rows), x.custom, x.error_rows, x.warning_rows, top_rules])
    out.append(
        spec.table(
            p + "templates-table",
            "Templates",
            "Every template_id with its rows, how many are graded by a custom regex, and the rows with "
            "findings (errors, warnings only) with the most frequent rules. Click a header to sort.",
            [
                ("template_id", "text"),
                ("rows", "number"),
                ("share", "number"),
                ("custom regex rows", "number"),
                ("rows with errors", "number"),
                ("rows with warnings only", "number"),
                ("findings", "text"),
            ],
            rows,
        )
    )
    return out


def finding_blocks(p: str, t: DatasetTally, v: dict[str, Any]) -> list[dict[str, Any]]:
    by_rule = v["findings_by_rule"]
    if not by_rule:
        return [spec.note("Validation findings", f"No findings: every rule of {RULE_DOC} passed.")]
    rules = sorted(by_rule, key=lambda r: (-by_rule[r], r))
    sev = [t.severity.get(r, "error") for r in rules]
    out = [
        spec.bars(
            p + "findings",
            "Validation findings per rule",
            f"Findings per rule (rules: {RULE_DOC}). Red: errors (the row is rejected by prepare); orange: "
            "warnings. A row can have several findings.",
            x_label="findings",
            y_label="rule",
            horizontal=True,
            stacked=True,
            panels=[
                spec.panel(
                    "",
                    rules,
                    [
                        spec.series(
                            "error",
                            [by_rule[r] if s == "error" else 0 for r, s in zip(rules, sev, strict=True)],
                            color=RED,
                        ),
                        spec.series(
                            "warning",
                            [by_rule[r] if s != "error" else 0 for r, s in zip(rules, sev, strict=True)],
                            color=ORANGE,
                        ),
                    ],
                )
            ],
        )
    ]
    rows = []
    for r, s in zip(rules, sev, strict=True):
        ex = t.rules.get(r)
        rows.append([r, s, by_rule[r], "\n".join(ex.items) if ex else ""])
    out.append(
        spec.table(
            p + "findings-table",
            "Findings with their first examples",
            "Each rule with its severity, count and first findings as file:line: $.path: message.",
            [("rule", "text"), ("severity", "text"), ("count", "number"), ("first examples", "text")],
            rows,
        )
    )
    return out


def regex_blocks(p: str, t: DatasetTally) -> list[dict[str, Any]]:
    if not t.patterns:
        return [spec.note("Custom regex controls", "No row carries a custom template_metadata.output_regex.")]
    rows = []
    for pattern, pt in iter_patterns(t):
        res = pattern_controls(pt)
        cells = [_control_cell(res[r], pt.fails.get(r, 0)) for r in REGEX_RULES]
        first = next((pt.messages[r] for r in REGEX_RULES if r in pt.messages), "")
        rows.append([pattern, pt.rows, ", ".join(pt.templates), *cells, first])
    return [
        spec.table(
            p + "regex",
            "Custom regex controls per pattern",
            "For each output_regex pattern: does it compile under Python's re, keep one capture group, "
            "finish on adversarial input (time bound), grade a compliant answer to the gold (positive), "
            "read every option letter (coverage), and leave the prompt and a refusal unscored (negative). "
            "'fail (n)': n rows got that finding; 'not run': an earlier control failed.",
            [
                ("pattern", "text"),
                ("rows", "number"),
                ("templates", "text"),
                ("compiles", "text"),
                ("one group", "text"),
                ("time bound", "text"),
                ("positive", "text"),
                ("coverage", "text"),
                ("negative", "text"),
                ("first finding", "text"),
            ],
            rows,
        )
    ]


def _control_cell(result: str, n: int) -> str:
    return f"fail ({n})" if result == "fail" else result


def length_blocks(p: str, t: DatasetTally) -> list[dict[str, Any]]:
    h = t.prompt_chars
    if not h.total:
        return [spec.note("Prompt length", "No row has a readable prompt.")]
    labels = length_labels(LENGTH_EDGES)
    st = h.stats()
    return [
        spec.bars(
            p + "prompt-length",
            f"Prompt length (mean {st['mean']:g}, max {st['max']} characters)",
            "Rows per prompt length in characters, in bins that double in width (each from its first bound up "
            "to, not including, its second); long tails cost context length and truncate responses.",
            x_label="prompt characters",
            y_label="rows",
            panels=[spec.panel("", labels, [spec.series("rows", list(h.counts), color=BLUE)])],
        )
    ]


def profile_blocks(p: str, t: DatasetTally) -> list[dict[str, Any]]:
    if not t.profiles:
        return [spec.note("reward_profiles pass rates", "No row carries reward_profiles.")]
    models = [m for m, _ in t.profile_models.most_common()]
    panels = [
        spec.panel(
            f"{m} ({t.profiles[m].total} rows)",
            list(RATE_BINS),
            [spec.series("rows", list(t.profiles[m].counts), color=GREEN)],
        )
        for m in models[:TOP_PANELS]
    ]
    rows = []
    for m in models:
        h = t.profiles[m]
        rows.append(
            [m, h.total, h.stats()["mean"], share(h.counts[0], h.total), share(h.counts[-1], h.total)]
        )
    return [
        spec.bars(
            p + "profiles",
            "reward_profiles pass rate per model",
            "One panel per model (the most frequent): rows by the pass rate recorded in reward_profiles. "
            "'0' never solved (no learning signal), '1' always solved (no signal either); RL learns from "
            "the middle.",
            x_label="pass rate",
            y_label="rows",
            panels=panels,
        ),
        spec.table(
            p + "profiles-table",
            "reward_profiles per model",
            "Rows with a pass rate for the model, the mean rate, and the shares never and always solved.",
            [
                ("model_hf_path", "text"),
                ("rows", "number"),
                ("mean pass rate", "number"),
                ("share 0", "number"),
                ("share 1", "number"),
            ],
            rows,
        ),
    ]


def duplicate_blocks(p: str, t: DatasetTally, v: dict[str, Any]) -> list[dict[str, Any]]:
    by_rule = v["findings_by_rule"]
    rows = [
        [r, by_rule.get(r, 0), "\n".join(t.rules[r].items) if r in t.rules else ""] for r in DUPLICATE_RULES
    ]
    if not any(by_rule.get(r) for r in DUPLICATE_RULES):
        return [spec.note("Duplicates", "No repeated row, uuid or prompt (fixed-size hashes of every row).")]
    return [
        spec.table(
            p + "duplicates",
            "Duplicates",
            "Repeated rows (same uuid and prompt), reused uuids and repeated prompts, found with fixed-size "
            "hashes of every row; a repeat across splits leaks evaluation into training.",
            [("rule", "text"), ("rows", "number"), ("first examples", "text")],
            rows,
        )
    ]


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "n/a"


__all__ = ["section", "CUSTOM_MODE"]
