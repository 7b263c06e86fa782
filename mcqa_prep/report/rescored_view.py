"""A rescored section of the report document, built from a finished RescoredTally (numbers -> blocks)."""

from __future__ import annotations

from typing import Any

from ..evidence import RATE_BINS
from . import spec
from .bins import LENGTH_EDGES, length_labels, share
from .rescored import RECORDED, RESCORED, Group, RescoredTally

BLUE, RED, ORANGE, GREEN, GREY = "#4c72b0", "#c44e52", "#dd8452", "#55a868", "#8c8c8c"
TOP = 20
TOP_STATUSES = 6
STATUS_COLORS = {"ok": GREEN, "no_answer": ORANGE, "no_response": GREY, "invalid_row": RED}
_EXTRA_COLORS = ("#8172b3", "#937860", "#da8bc3", "#ccb974", "#64b5cd", "#4c72b0")


PLOT_MODELS = 8  # models with their own plot (the table lists all)


def section(sid: str, contract: str | None, t: RescoredTally) -> dict[str, Any]:
    agreement = {f"{r}->{c}": ex.to_dict() for (r, c), ex in sorted(t.agreement.items())}
    rates = t.pass_rates()
    mean = t.tally.mean_reward
    summary = {
        "rows": t.rows,
        "graded": t.graded,
        "invalid": t.tally.invalid,
        "mean_reward": round(mean, 4) if mean is not None else None,
        "statuses": dict(t.statuses.most_common()),
        "grader_versions": dict(t.grader_versions),
        "files": dict(t.files),
        "agreement": agreement,
        "recorded": t.tally.recorded,
        "changed": t.tally.changed,
        "compare_modes": dict(t.compare_modes),
        "format_misses": sum(m.misses.count for m in t.misses.values()),
        "pass_rates": rates,
    }
    p = sid + "-"
    blocks: list[dict[str, Any]] = []
    blocks += template_blocks(p, t)
    blocks += mode_blocks(p, t)
    blocks += agreement_blocks(p, t)
    blocks += miss_blocks(p, t)
    blocks += pass_rate_blocks(p, rates)
    blocks += length_blocks(p, t)
    title = (
        f"Rescored rows graded under contract {contract}" if contract else "Rescored rows with no contract"
    )
    return {
        "id": sid,
        "kind": "rescored",
        "contract": contract,
        "title": title,
        "inputs": sorted(t.files),
        "summary": summary,
        "alerts": alerts(t, summary),
        "blocks": blocks,
    }


def _changed(recorded: str, rescored: str) -> bool:
    """A matrix cell of changed rewards (shown first); the count itself is counts.Tally's."""
    return recorded in ("0", "1") and recorded != rescored


def alerts(t: RescoredTally, s: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    mean = s["mean_reward"]
    out.append(
        spec.alert(
            "info",
            f"Mean reward {mean:.4f} over {t.graded} graded row(s)"
            if mean is not None
            else "No graded row (every row is invalid_row).",
        )
    )
    invalid = t.statuses.get("invalid_row", 0)
    if invalid:
        out.append(spec.alert("warn", f"{invalid} row(s) could not be graded (status invalid_row)."))
    if s["changed"]:
        out.append(
            spec.alert(
                "warn", f"{s['changed']} recorded reward(s) differ from this grader's (see the matrix)."
            )
        )
    elif any(r in ("0", "1") for r, _ in t.agreement):
        out.append(spec.alert("ok", "Every recorded reward agrees with this grader."))
    if s["format_misses"]:
        out.append(
            spec.alert(
                "warn",
                f"{s['format_misses']} format miss(es): reward 0, but the comparison mode reads the gold letter.",
            )
        )
    return out


def _status_order(t: RescoredTally) -> list[str]:
    return [s for s, _ in t.statuses.most_common(TOP_STATUSES)]


def _status_series(groups: list[tuple[str, Group]], statuses: list[str]) -> list[dict[str, Any]]:
    """Stacked shares of rows per status (the rest pooled as 'other')."""
    out = []
    for i, st in enumerate(statuses):
        color = STATUS_COLORS.get(st, _EXTRA_COLORS[i % len(_EXTRA_COLORS)])
        out.append(
            spec.series(st, [share(g.statuses.get(st, 0), g.rows) or 0.0 for _, g in groups], color=color)
        )
    rest = [share(g.rows - sum(g.statuses.get(s, 0) for s in statuses), g.rows) or 0.0 for _, g in groups]
    if any(rest):
        out.append(spec.series("other", rest, color="#cccccc"))
    return out


def _group_rows(groups: list[tuple[str, Group]], misses: dict[str, Any] | None = None) -> list[list[Any]]:
    rows = []
    for key, g in groups:
        statuses = ", ".join(f"{s}={n}" for s, n in g.statuses.most_common())
        row = [key, g.rows, g.graded, g.mean, statuses]
        if misses is not None:
            m = misses.get(key)
            row.append(m.misses.count if m is not None else None)
        rows.append(row)
    return rows


def template_blocks(p: str, t: RescoredTally) -> list[dict[str, Any]]:
    groups = sorted(t.templates.items(), key=lambda kv: (-kv[1].rows, kv[0]))
    shown = groups[:TOP]
    cats = [f"{k} (n={g.rows})" for k, g in shown]
    statuses = _status_order(t)
    return [
        spec.bars(
            p + "template-reward",
            f"Mean reward per template (top {len(shown)} of {len(groups)} by rows)",
            "Mean rescored reward of the graded rows of each template_id (n = rows). A template far below "
            "the others is a format the model does not follow, or a grader that does not read it: compare "
            "with the format misses below.",
            x_label="mean reward",
            y_label="template_id",
            horizontal=True,
            y_max=1.0,
            panels=[spec.panel("", cats, [spec.series("mean reward", [g.mean or 0.0 for _, g in shown])])],
        ),
        spec.bars(
            p + "template-status",
            "Grading status per template",
            "Share of each template's rows by grading status: ok = a letter was extracted (right or wrong); "
            "no_answer = nothing the grader accepts; invalid_row = the row could not be graded.",
            x_label="share of rows",
            y_label="template_id",
            horizontal=True,
            stacked=True,
            y_max=1.0,
            panels=[spec.panel("", cats, _status_series(shown, statuses))],
        ),
        spec.table(
            p + "templates-table",
            "Per template",
            "Rows, graded rows, mean reward and status counts of every template_id; format misses when the "
            "rows were rescored with a comparison mode.",
            [
                ("template_id", "text"),
                ("rows", "number"),
                ("graded", "number"),
                ("mean reward", "number"),
                ("statuses", "text"),
                ("format misses", "number"),
            ],
            _group_rows(groups, t.misses),
        ),
    ]


def mode_blocks(p: str, t: RescoredTally) -> list[dict[str, Any]]:
    groups = sorted(t.modes.items(), key=lambda kv: (-kv[1].rows, kv[0]))
    cats = [f"{k} (mean {g.mean if g.mean is not None else 'n/a'})" for k, g in groups]
    return [
        spec.bars(
            p + "mode-status",
            "Grading status per grading mode",
            "Share of rows by grading status for each mode that decided (output_regex = the template's "
            "custom pattern); the label gives the mode's mean reward.",
            x_label="share of rows",
            y_label="grading mode",
            horizontal=True,
            stacked=True,
            y_max=1.0,
            panels=[spec.panel("", cats, _status_series(groups, _status_order(t)))],
        ),
        spec.table(
            p + "modes-table",
            "Per grading mode",
            "Rows, graded rows, mean reward and status counts of every grading mode.",
            [
                ("mode", "text"),
                ("rows", "number"),
                ("graded", "number"),
                ("mean reward", "number"),
                ("statuses", "text"),
            ],
            _group_rows(groups),
        ),
    ]


def agreement_blocks(p: str, t: RescoredTally) -> list[dict[str, Any]]:
    rows = [r for r in RECORDED if any((r, c) in t.agreement for c in RESCORED)]
    values = [[t.agreement[(r, c)].count if (r, c) in t.agreement else 0 for c in RESCORED] for r in rows]
    table_rows = [
        [f"{r} -> {c}", ex.count, ", ".join(ex.items)]
        for (r, c), ex in sorted(t.agreement.items(), key=lambda kv: (not _changed(*kv[0]), kv[0]))
    ]
    return [
        spec.matrix(
            p + "agreement",
            "Recorded reward vs. rescored reward",
            "Rows by the reward recorded at training time (metadata.grading.previous_reward) and the reward "
            "this grader gives. The diagonal agrees; off-diagonal cells are changed rewards (example ids in "
            "the table); 'not recorded': the input carried no reward.",
            x_label="rescored reward",
            y_label="recorded reward",
            rows=rows,
            columns=list(RESCORED),
            values=values,
        ),
        spec.table(
            p + "agreement-table",
            "Agreement cells with example ids",
            "Each cell of the matrix (recorded -> rescored) with its rows and first example ids (uuid, id, or "
            "file:line); changed cells first.",
            [("recorded -> rescored", "text"), ("rows", "number"), ("example ids", "text")],
            table_rows,
        ),
    ]


def miss_blocks(p: str, t: RescoredTally) -> list[dict[str, Any]]:
    if not t.misses:
        return [
            spec.note(
                "Format misses",
                "These rows were rescored without a comparison mode (rescore --compare-mode robust records "
                "format misses).",
            )
        ]
    items = sorted(t.misses.items(), key=lambda kv: (-kv[1].misses.count, -kv[1].rows, kv[0]))
    shown = items[:TOP]
    modes = ", ".join(sorted(t.compare_modes)) or "?"
    return [
        spec.bars(
            p + "format-misses",
            f"Format misses per template (comparison mode {modes})",
            "Rows per template: red = format misses (reward 0, but the comparison mode reads the gold letter: "
            "the model answered right in a format the template's grader does not accept); grey = the rest.",
            x_label="rows",
            y_label="template_id",
            horizontal=True,
            stacked=True,
            panels=[
                spec.panel(
                    "",
                    [k for k, _ in shown],
                    [
                        spec.series("format misses", [m.misses.count for _, m in shown], color=RED),
                        spec.series("other rows", [m.rows - m.misses.count for _, m in shown], color=GREY),
                    ],
                )
            ],
        ),
        spec.table(
            p + "format-misses-table",
            "Format misses with example ids",
            "Per template: rows compared, format misses, their share and the first example ids.",
            [
                ("template_id", "text"),
                ("rows compared", "number"),
                ("format misses", "number"),
                ("share", "number"),
                ("example ids", "text"),
            ],
            [
                [k, m.rows, m.misses.count, share(m.misses.count, m.rows), ", ".join(m.misses.items)]
                for k, m in items
            ],
        ),
    ]


def pass_rate_blocks(p: str, rates: dict[str, Any]) -> list[dict[str, Any]]:
    """One plot per model (a pass rate is about one model: never pooled across models), then a table of all."""
    by_model = rates["by_model"]
    if not by_model:
        return [spec.note("Per-prompt pass rates", "No graded row has a readable prompt.")]
    blocks = [
        _model_rates(f"{p}pass-rates-{i}", m, r)
        for i, (m, r) in enumerate(list(by_model.items())[:PLOT_MODELS])
    ]
    if len(by_model) > 1:
        blocks.append(
            spec.table(
                p + "pass-rates-models",
                "Per-prompt pass rates by model",
                "One row per model that generated the rollouts (responses_create_params.model, else "
                "response.model): its prompts never, partly and always solved, and its mean pass rate.",
                [
                    ("model", "text"),
                    ("prompts", "number"),
                    ("0", "number"),
                    ("partial", "number"),
                    ("1", "number"),
                    ("mean pass rate", "number"),
                ],  # fmt: skip
                [
                    [m, r["prompts"], r["zero"], r["partial"], r["one"], r["mean_pass_rate"]]
                    for m, r in by_model.items()
                ],
            )
        )
    return blocks


def _model_rates(pid: str, model: str, r: dict[str, Any]) -> dict[str, Any]:
    samples = ", ".join(f"{k}: {v}" for k, v in r["samples_per_prompt"].items())
    return spec.bars(
        pid,
        f"Per-prompt pass rate of {model} ({r['prompts']} prompts, mean {r['mean_pass_rate']})",
        "Left: prompts never solved (0), sometimes (partial) and always (1) across this model's graded rows; "
        "right: prompts by pass rate. Prompts at 0 or 1 give RL no signal. Rows per prompt: "
        f"{samples}.",
        x_label="pass rate",
        y_label="prompts",
        panels=[
            spec.panel(
                "solved",
                ["0", "partial", "1"],
                [spec.series("prompts", [r["zero"], r["partial"], r["one"]], color=BLUE)],
            ),
            spec.panel("histogram", list(RATE_BINS), [spec.series("prompts", r["histogram"], color=BLUE)]),
        ],
    )


def length_blocks(p: str, t: RescoredTally) -> list[dict[str, Any]]:
    h = t.response_chars
    if not h.total:
        return [spec.note("Reward vs. response length", "No graded row records response_chars.")]
    last = max(i for i, n in enumerate(h.counts) if n)
    labels = length_labels(LENGTH_EDGES)[: last + 1]
    means = h.means()[: last + 1]
    return [
        spec.bars(
            p + "reward-length",
            "Reward vs. response length",
            "Bars (left axis): graded rows per response length in characters (bins double in width). Line "
            "(right axis): their mean reward. A falling line at the right is truncation or rambling; a low "
            "first bin is empty or cut-off responses.",
            x_label="response characters",
            y_label="rows",
            y2_label="mean reward",
            panels=[
                spec.panel(
                    "",
                    labels,
                    [
                        spec.series("rows", h.counts[: last + 1], color="#a1b4d4"),
                        spec.series("mean reward", means, draw="line", axis="right", color=RED),
                    ],
                )
            ],
        )
    ]
