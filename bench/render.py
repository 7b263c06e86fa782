"""Write the measured figures into README.md and docs/*.md from the committed results (bench/results/*.json).

Every figure the documentation states sits in a marked region that this script owns:

    <!-- bench:fig rescore/w1_vs_nemo_gym.cpu_x -->2.31–2.52x<!-- /bench -->     one figure, min–max
    <!-- bench:fig.median grader/multi.robust.x -->...<!-- /bench -->           its median (also .min, .max)
    <!-- bench:input rescore/requests_mb -->357<!-- /bench -->                  a value of the inputs
    <!-- bench:check rescore/same_reward_as_nemo_gym -->...<!-- /bench -->      a value of the checks
    <!-- bench:meta rescore -->...<!-- /bench -->                               how and when it was measured
    <!-- bench:table targets -->                                                a whole table (TABLES below)
    ...
    <!-- /bench -->

    python bench/render.py            # rewrite the regions in place
    python bench/render.py --check    # exit 1 and name the regions that differ (what tests/test_bench_docs.py runs)

A region names its figure by `bench/key` (the result file bench/results/<bench>.json, its figures' key). A name
that is not in the results is an error, so a figure cannot be stated that was not measured.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from run import ON_REQUEST
from run import ORDER as RUN_ORDER

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
REGION = re.compile(r"<!-- bench:(?P<spec>[^>]*?) -->(?P<body>.*?)<!-- /bench -->", re.S)
DASH = "–"

Results = dict[str, dict[str, Any]]


class Missing(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def doc_files(repo: Path = REPO) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def load(directory: Path = RESULTS) -> Results:
    out: Results = {}
    for path in sorted(directory.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        out[doc["bench"]] = doc
    return out


# ---- values -----------------------------------------------------------------------------------------------


def num(v: float, unit: str) -> str:
    if unit == "x":
        return f"{v:.2f}"
    if unit == "s":  # short times keep two significant digits or more (a warm load, a job's fixed cost)
        return f"{v:.4f}" if v < 0.01 else f"{v:.3f}" if v < 0.1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"
    if unit in ("ms", "µs"):
        return f"{v:.1f}"
    return f"{v:,.0f}"


def with_unit(text: str, unit: str) -> str:
    return f"{text}x" if unit == "x" else f"{text} {unit}"


def span(f: dict[str, Any], unit: bool = True) -> str:
    """min–max of a figure (one value when they are equal), with its unit."""
    lo, hi = num(f["min"], f["unit"]), num(f["max"], f["unit"])
    text = lo if lo == hi else f"{lo}{DASH}{hi}"
    return with_unit(text, f["unit"]) if unit else text


def figure(results: Results, name: str) -> dict[str, Any]:
    bench, _, key = name.partition("/")
    if bench not in results:
        raise Missing(f"no results for bench {bench!r} (bench/results/{bench}.json)")
    figures = results[bench]["figures"]
    if key not in figures:
        raise Missing(f"no figure {key!r} in bench/results/{bench}.json")
    return figures[key]


def value(results: Results, name: str, part: str) -> Any:
    bench, _, key = name.partition("/")
    if bench not in results or key not in results[bench].get(part, {}):
        raise Missing(f"no {part} value {key!r} in bench/results/{bench}.json")
    return results[bench][part][key]


def plain(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return f"{v:,}"
    return str(v)


def status(f: dict[str, Any]) -> str:
    t = f.get("target")
    if not t:
        return ""
    ok = [(x >= t["value"]) if t["op"] == ">=" else (x <= t["value"]) for x in f["samples"]]
    if all(ok):
        return "met"
    if not any(ok):
        return "**not met**"
    return f"met in {sum(ok)} of {len(ok)} rounds"


OTHER_WORK = 0.1  # share of the cores other work may use on average while a module runs


def provisional(ms: list[dict[str, Any]]) -> list[str]:
    """Why figures measured under these metas are provisional (empty when they are not)."""
    why = []
    scales = sorted({m.get("scale", 1) for m in ms})
    if scales != [1]:
        why.append("scale " + ", ".join(f"{x:g}" for x in scales))
    cores = min(m.get("cores") or 1 for m in ms)
    if all(m.get("other_cores") is not None for m in ms):
        # measured: the machine's busy CPU beside the module's own process tree (bench/run.py)
        other = max(m["other_cores"] for m in ms)
        if other > OTHER_WORK * cores:
            why.append(f"other work used {other:.2f} of {cores} cores")
    else:  # older results: only the load average, which counts the bench's own work too
        busy = max(max((m.get("load_before") or [0])[0], (m.get("load_after") or [0])[0]) for m in ms)
        if busy > 0.5 * cores:
            why.append(f"load average up to {busy:.1f} on {cores} cores")
    rounds = min(m.get("rounds", 3) for m in ms)
    if rounds < 3:
        why.append(f"{rounds} round(s)")
    if any(m.get("commit_dirty") for m in ms):
        why.append("uncommitted changes")
    return why


def meta_line(results: Results, *benches: str) -> str:
    """How and when: commit, date, machine, load, rounds; **provisional** with the reasons when it is."""
    ms = [results[b]["meta"] for b in benches if b in results and "meta" in results[b]]
    if not ms:
        raise Missing(f"no results for {', '.join(benches)}")
    m = ms[0]
    commits = sorted({x["commit"] for x in ms})
    dates = sorted({x["date"][:10] for x in ms})
    loads = [x["load_before"][0] for x in ms] + [x["load_after"][0] for x in ms]
    why = provisional(ms)
    others = [x["other_cores"] for x in ms if x.get("other_cores") is not None]
    other = f", other work {max(others):.2f} cores at most" if len(others) == len(ms) else ""
    text = (
        f"Measured by `make bench` ({', '.join('bench_' + b for b in benches)}) at {', '.join(commits)} on "
        f"{', '.join(dates)}; {m['cpu']}, {m['cores']} cores, load average {min(loads):.1f}{DASH}{max(loads):.1f}"
        f"{other}; min{DASH}max of {m['rounds']} interleaved rounds"
    )
    return text + (f". **Provisional** ({'; '.join(why)})." if why else ".")


# ---- tables ---------------------------------------------------------------------------------------------


def table(head: list[str], rows: list[list[str]], align: str) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


MODES = ("strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon", "lenient_answer_colon_md",
         "lenient_answer_colon_md+answer_prefix", "custom_regex")  # fmt: skip


def t_grader(r: Results) -> list[str]:
    g = r["grader"]["figures"]
    rows = []
    for lang, label in (("multi", "multilingual"), ("en", "English")):
        for mode in MODES:
            k = f"{lang}.{mode}"
            if f"{k}.extract" not in g:
                continue
            ng = lambda s, k=k: span(g[f"{k}.{s}"], False) if f"{k}.{s}" in g else "n/a"  # noqa: E731
            rows.append([f"`{mode}`, {label}", span(g[f"{k}.extract"], False), ng("ng_extract"),
                         ng("extract_x") + ("x" if f"{k}.extract_x" in g else ""), span(g[f"{k}.grade"], False),
                         ng("ng_grade"), ng("grade_x") + ("x" if f"{k}.grade_x" in g else "")])  # fmt: skip
    head = [
        "mode, responses",
        "extraction: ours",
        "NeMo Gym",
        "ratio",
        "grading decision: ours",
        "NeMo Gym",
        "ratio",
    ]
    return table(head, rows, "lrrrrrr") + ["", meta_line(r, "grader")]


def t_readme_modes(r: Results) -> list[str]:
    g = r["grader"]["figures"]
    rows = []
    for mode in MODES:
        cells = [f"`{mode}`"]
        for k in (f"en.{mode}.extract_x", f"multi.{mode}.extract_x", f"multi.{mode}.grade_x"):
            cells.append(span(g[k]) if k in g else "n/a")
        rows.append(cells)
    head = ["mode", "English, extraction", "multilingual, extraction", "multilingual, whole grading decision"]
    return table(head, rows, "lrrr") + ["", meta_line(r, "grader")]


# (bench, leg, label, baseline leg, baseline label, ratio figure, what the ratio is)
COMMANDS = (
    ("rescore", "w1", "`rescore --workers 1`", "nemo_gym", "NeMo Gym's verify path", "w1_vs_nemo_gym.wall_x",
     "NeMo Gym's time / ours"),
    ("rescore", "w1", "`rescore --workers 1`", "floor", "floor (orjson in and out)", "w1_vs_floor.wall_x", "ours / floor"),
    ("rescore", "w2", "`rescore --workers 2`", "w1", "`--workers 1`", "w2_vs_w1.x", "gain"),
    ("rescore", "grades_w1", "`rescore --workers 1 --output-shape grading`", "nemo_gym_grades",
     "NeMo Gym's verify path, same output size", "grades_w1_vs_nemo_gym.wall_x", "NeMo Gym's time / ours"),
    ("cluster", "ray2", "`rescore --engine ray --workers 2`", "w2", "`--workers 2`", "ray2_vs_w2.x", "Ray / local"),
    ("rescore", "join_w1", "`rescore --rows` (join), `--workers 1`", None, "", None, ""),
    ("rescore", "join_w2", "`rescore --rows` (join), `--workers 2`", None, "", None, ""),
    ("prepare", "w1", "`prepare --workers 1`", "floor", "floor (one core)", "w1_vs_floor.x", "ours / floor"),
    ("prepare", "w2", "`prepare --workers 2`", "floor", "floor (one core)", "w2_vs_floor.x", "ours / floor"),
    ("validate", "w1", "`validate --workers 1`", "read", "bare read", "w1_vs_read.x", "ours / read"),
    ("validate", "w2", "`validate --workers 2`", "floor", "floor (one core)", "w2_vs_floor.x", "ours / floor"),
    ("report", "report", "`report`", "validate_w1", "`validate --workers 1`", "report_vs_validate_w1.x",
     "report / validate"),  # results from before report ran on the engine (no report_w1 leg)
    ("report", "report_w1", "`report --workers 1`", "validate_w1", "`validate --workers 1`",
     "report_vs_validate_w1.x", "report / validate"),
    ("report", "report", "`report` (every core)", "validate", "`validate` (every core)", "report_vs_validate.x",
     "report / validate"),
    ("convert", "mmlu_pro.convert", "`convert` (MMLU-Pro layout)", "mmlu_pro.floor", "floor (one core)",
     "mmlu_pro.convert_vs_floor.x", "ours / floor"),
    ("audit", "audit", "`audit -j 2 --against` MMLU, MMLU-Pro, GPQA shapes", "datasketch",
     "datasketch LSH loop (near-duplicates only)", "datasketch_vs_audit.x", "loop's time / ours"),
)  # fmt: skip


def t_commands(r: Results) -> list[str]:
    """The commands, each a process tree: wall time, peak RSS, the baseline of the same rounds, the ratio; the
    full-size runs (`@full`) after the scaled ones where they were measured."""
    rows: list[list[str]] = []
    for suffix in ("", "@full"):
        for bench, leg, label, base, base_label, ratio, note in COMMANDS:
            f = r.get(bench, {}).get("figures", {})
            if f"{leg}.wall_s{suffix}" not in f:
                continue
            if (
                bench == "report"
                and leg == "report"
                and (label == "`report`") == (f"report_w1.wall_s{suffix}" in f)
            ):
                continue  # one of the two report rows: before and after report ran on the engine
            n = r[bench]["inputs"].get(f"rows{suffix}") or r[bench]["inputs"]["rows"]
            b = f"{base}.wall_s{suffix}" if base else None
            x = f"{ratio}{suffix}" if ratio else None
            rows.append([
                f"{label}, {n:,} rows", span(f[f"{leg}.wall_s{suffix}"]), span(f[f"{leg}.rss_mb{suffix}"]),
                f"{base_label}: {span(f[b])}" if b in f else "",
                f"{span(f[x])} ({note})" if x in f else "",
            ])  # fmt: skip
    head = ["command", "wall", "peak RSS (tree)", "baseline, same rounds", "ratio per round"]
    benches = [
        b for b in ("rescore", "cluster", "prepare", "validate", "report", "convert", "audit") if b in r
    ]
    return table(head, rows, "lrrrr") + ["", meta_line(r, *benches)]


# the order of the runner's full run, then the modules it runs only on request
ORDER = (*RUN_ORDER, *ON_REQUEST)


def t_targets(r: Results) -> list[str]:
    rows = []
    benches = sorted(r, key=lambda b: (ORDER.index(b) if b in ORDER else len(ORDER), b))
    for bench in benches:
        for key, f in r[bench]["figures"].items():
            t = f.get("target")
            if t:
                op = t["op"].replace(">=", "≥").replace("<=", "≤")
                full = r[bench]["inputs"].get("rows@full") if key.endswith("@full") else None
                what = f"{f['what']} ({full:,} rows)" if full else f["what"]
                rows.append([what, f"{op} {with_unit(num(t['value'], f['unit']), f['unit'])}", span(f),
                             status(f), f"`{bench}/{key}`"])  # fmt: skip
    with_targets = [b for b in benches if any(f.get("target") for f in r[b]["figures"].values())]
    return table(["figure", "target", "measured", "result", "figure's name"], rows, "lrrll") + [
        "",
        meta_line(r, *with_targets),
    ]


MEMORY = ("rescore", "prepare", "validate", "report", "convert", "audit")


def t_memory(r: Results) -> list[str]:
    rows = []
    for bench in MEMORY:
        if bench not in r:
            continue
        for key, f in r[bench]["figures"].items():
            name, _, suffix = key.partition("@")
            if not name.endswith(".rss_mb"):
                continue
            n = f.get("rows") or r[bench]["inputs"].get(f"rows@{suffix}" if suffix else "rows")
            what = f["what"].removesuffix(": peak RSS of the process tree")
            rows.append([f"{what}, {n:,} rows" if n else what, span(f), str(f.get("processes", "")),
                         f"{f.get('hwm_sum_mb', 0):,.0f} MB"])  # fmt: skip
    head = ["command", "peak RSS of the process tree", "processes", "sum of each process's own peak"]
    benches = [b for b in MEMORY if b in r]
    return table(head, rows, "lrrr") + ["", meta_line(r, *benches)]


def t_serve(r: Results) -> list[str]:
    s = r["serve"]["figures"]
    rows = []
    for c in (1, 16, 64):
        if f"c{c}.mcqa_prep.rps" not in s:
            continue
        cell = {}
        for name in ("mcqa_prep", "nemo_gym"):
            k = f"c{c}.{name}"
            cell[name] = (
                f"{span(s[k + '.rps'], False)} req/s; {span(s[k + '.p50_ms'], False)} / {span(s[k + '.p99_ms'])}; "
                f"{span(s[k + '.per_cpu_s'], False)}"
                if k + ".rps" in s else "n/a"
            )  # fmt: skip
        ratio = span(s[f"c{c}.per_cpu_x"]) if f"c{c}.per_cpu_x" in s else "n/a"
        rows.append([str(c), cell["mcqa_prep"], cell["nemo_gym"], ratio])
    head = ["clients", "mcqa-prep serve: req/s; p50 / p99; req per CPU s", "NeMo Gym 0.7.0 app: the same",
            "per core"]  # fmt: skip
    return table(head, rows, "rrrr") + ["", meta_line(r, "serve")]


def t_gym(r: Results) -> list[str]:
    """bench_gym: the mcqa server inside NeMo Gym (gym env start), stock and component, beside `serve` alone
    and bench_serve's stripped NeMo Gym app."""
    s = r["gym"]["figures"]
    names = ("gym_component", "gym_stock", "serve", "stripped")
    rows = []
    for c in (16, 64):
        if f"c{c}.gym_stock.rps" not in s:
            continue
        cells = []
        for name in names:
            k = f"c{c}.{name}"
            cells.append(
                f"{span(s[k + '.rps'], False)} req/s; p99 {span(s[k + '.p99_ms'])}; {span(s[k + '.per_cpu_s'], False)}"
                if k + ".rps" in s else "n/a"
            )  # fmt: skip
        ratio = span(s[f"c{c}.gym_component.per_cpu_x"]) if f"c{c}.gym_component.per_cpu_x" in s else "n/a"
        rows.append([str(c), *cells, ratio])
    head = ["clients", "mcqa-prep component, gym env start: req/s; p99; req per CPU s",
            "NeMo Gym 0.7.0 mcqa server, gym env start: the same", "mcqa-prep serve: the same",
            "NeMo Gym's app, middlewares stubbed: the same", "component / stock, per CPU s"]  # fmt: skip
    return table(head, rows, "rrrrrr") + ["", meta_line(r, "gym")]


def t_ray(r: Results) -> list[str]:
    """`rescore --engine ray` against `--workers`, N = 1 and 2 (bench_cluster): whole commands, start-up
    included, their fixed cost, and a Ray session's split of it (start, first job, a later job) with the
    per-worker rate beyond it."""
    f = r["cluster"]["figures"]
    n_rows = r["cluster"]["inputs"]["rows"]
    cols = [(f"ray{n}", f"session{n}", f"w{n}") for n in (1, 2) if f"ray{n}.wall_s" in f]

    def cell(key: str, unit: bool = True) -> str:
        return span(f[key], unit) if key in f else ""

    def parts(s: str) -> str:
        keys = [f"{s}.fixed.{p}" for p in ("plan_s", "job_s", "end_s")]
        if not all(k in f for k in keys):
            return ""
        return " / ".join(span(f[k], False) for k in keys) + " s"

    lines = [
        (f"whole command on {n_rows:,} rows (start-up included)", lambda ray, s, w: cell(f"{ray}.wall_s"),
         lambda ray, s, w: cell(f"{w}.wall_s")),
        ("peak RSS of the command's process tree", lambda ray, s, w: cell(f"{ray}.rss_mb"),
         lambda ray, s, w: cell(f"{w}.rss_mb")),
        ("the command on 200 rows (its fixed cost)", lambda ray, s, w: cell(f"{ray}_small.wall_s"),
         lambda ray, s, w: cell(f"{w}_small.wall_s")),
        ("in a session: Ray's start (not ours)", lambda ray, s, w: cell(f"{s}.ray_start_s"), lambda *a: "–"),
        ("first job (200 rows; workers start and import)", lambda ray, s, w: cell(f"{s}.first_job_s"),
         lambda *a: "–"),
        ("**fixed cost of a job** (200 rows, whole, Ray running)", lambda ray, s, w: cell(f"{s}.fixed_s"),
         lambda *a: "–"),
        ("of which planning / running / commit", lambda ray, s, w: parts(s), lambda *a: ""),
        ("rows/s per worker beyond the fixed cost", lambda ray, s, w: cell(f"{s}.beyond_fixed.per_worker_rows_per_s", False),
         lambda ray, s, w: cell(f"{w}.beyond_fixed.per_worker_rows_per_s", False)),
        ("Ray's per-worker rate / a `--workers` worker's (target ≥ 0.8x)",
         lambda ray, s, w: cell(f"{s}_vs_{w}.per_worker_x"), lambda *a: ""),
    ]  # fmt: skip
    head = [f"{n_rows:,} verify requests, local instance"]
    for ray, _s, _w in cols:
        n = ray[-1]
        head += [f"Ray, {n} worker(s)", f"`--workers {n}`"]
    rows = []
    for label, ray_cell, w_cell in lines:
        row = [label]
        for ray, s, w in cols:
            row += [ray_cell(ray, s, w), w_cell(ray, s, w)]
        rows.append(row)
    return table(head, rows, "l" + "r" * (len(head) - 1)) + ["", meta_line(r, "cluster")]


def t_load_prepared(r: Results) -> list[str]:
    """load_prepared against datasets.load_dataset("json") on the same shards (bench_cluster)."""
    f = r["cluster"]["figures"]
    i = r["cluster"]["inputs"]
    head = ["preparation (JSONL shards)", "`load_prepared` cold", '`datasets.load_dataset("json")` cold',
            "`load_prepared` warm", "`datasets` warm (its cache)", "`verify=True`", "`verify_prepared`",
            "imports: ours / `datasets`"]  # fmt: skip
    row = [f"{i['load.rows']:,} rows, {i['load.shards_mb']:,} MB"]
    row += [span(f[k]) for k in ("load.ours.cold_s", "load.datasets.cold_s", "load.ours.warm_s",
                                 "load.datasets.warm_s", "load.ours.verify_true_s", "load.ours.verify_prepared_s")]  # fmt: skip
    row.append(f"{span(f['load.ours.import_s'])} / {span(f['load.datasets.import_s'])}")
    return table(head, [row], "l" + "r" * (len(head) - 1)) + ["", meta_line(r, "cluster")]


def t_passrates(r: Results) -> list[str]:
    """passrates: measuring (the command) against parsing every rollout; reading a table against v1 and parsing."""
    f = r["passrates"]["figures"]
    i = r["passrates"]["inputs"]
    rows = [
        [f"`mcqa-prep passrates` on {i['rollouts']:,} rollouts: wall", span(f["measure.wall_s"]),
         f"orjson.loads of every line (a command): {span(f['floor.wall_s'])}", span(f["measure_vs_floor.x"])],
        ["the same: CPU of the process tree", span(f["measure.cpu_s"]), span(f["floor.cpu_s"]),
         span(f["measure_vs_floor.cpu_x"])],
        [f"`read_table`, v2 table of {i['entries']:,} entries (CPU)", span(f["read.v2.cpu_s"]),
         f"the same entries as a v1 table, read today: {span(f['read.v1.cpu_s'])}", span(f["read.v2_vs_v1.x"])],
        ["", "", f"that v1 table without the posterior (the reader before passrates.v2): {span(f['read.v1_bare.cpu_s'])}",
         span(f["read.v2_vs_v1_bare.x"])],
        ["", "", f"orjson.loads of every entry line: {span(f['read.floor.cpu_s'])}", span(f["read.v2_vs_floor.x"])],
        ["`read_table` per entry (CPU)", span(f["read.v2.us_per_entry"]), "", ""],
        ["the prior fit alone (`fit_prior`, CPU)", span(f["read.fit_prior.cpu_s"]), "", ""],
    ]  # fmt: skip
    head = ["what", "ours", "baseline, same rounds", "ours / baseline"]
    return table(head, rows, "lrrr") + ["", meta_line(r, "passrates")]


def t_report(r: Results) -> list[str]:
    f = r["report"]["figures"]
    rows = []
    for suffix in ("", "@full"):
        if f"report{suffix}.wall_s" not in f:
            continue
        n = r["report"]["inputs"][f"rows{suffix}"]
        legs = [("validate_w1", "`validate --workers 1`"), ("validate", "`validate` (every core)"),
                ("report_w1", "`report --workers 1`"), ("report", "`report` (every core)")]  # fmt: skip
        if f"report_w1{suffix}.wall_s" not in f:  # results from before report ran on the engine
            legs[-1] = ("report", "`report` (one process)")
        for leg, label in [(g, lab) for g, lab in legs if f"{g}{suffix}.wall_s" in f]:
            rows.append([f"{label}, {n:,} rows", span(f[f"{leg}{suffix}.wall_s"]), span(f[f"{leg}{suffix}.cpu_s"]),
                         span(f[f"{leg}{suffix}.rss_mb"])])  # fmt: skip
        one = "report" if f"report_w1{suffix}.wall_s" not in f else "report --workers 1"
        rows.append([f"{one} / `validate --workers 1`, {n:,} rows", span(f[f"report_vs_validate_w1.x{suffix}"]),
                     span(f[f"report_vs_validate_w1.cpu_x{suffix}"]), ""])  # fmt: skip
    return table(["command", "wall", "CPU (tree)", "peak RSS (tree)"], rows, "lrrr") + [
        "",
        meta_line(r, "report"),
    ]


def t_convert(r: Results) -> list[str]:
    f = r["convert"]["figures"]
    rows = []
    for key, label in (("mmlu_pro", "MMLU-Pro layout, 4-10 options, 70% `boxed` + 30% `final_choice`"),
                       ("mmlu_4", "MMLU layout, 4 options, `boxed`")):  # fmt: skip
        rows.append([label, span(f[f"{key}.convert.rows_per_s"], False), span(f[f"{key}.floor.rows_per_s"], False),
                     span(f[f"{key}.convert_vs_floor.x"]), span(f[f"{key}.convert.rss_mb"])])  # fmt: skip
    head = [
        "source",
        "convert, rows/s (wall, the whole command)",
        "floor, rows/s",
        "time vs floor",
        "peak RSS",
    ]
    return table(head, rows, "lrrrr") + ["", meta_line(r, "convert")]


def t_audit(r: Results) -> list[str]:
    """audit against the datasketch loop (bench_audit): time, CPU, memory at two sizes, what each side found of
    the planted benchmark rows; the full-size block after the scaled one where it was measured."""
    f, c, i = r["audit"]["figures"], r["audit"]["checks"], r["audit"]["inputs"]
    rows: list[list[str]] = []
    for sfx in ("", "@full"):
        if f"audit.wall_s{sfx}" not in f:
            continue
        n, small, q = i[f"rows{sfx}"], i[f"rows_small{sfx}"], i[f"benchmark_questions{sfx}"]

        def cells(*keys: str, sfx: str = sfx) -> list[str]:
            return [span(f[f"{k}{sfx}"]) if k and f"{k}{sfx}" in f else "" for k in keys]

        rows += [
            [f"**{n:,} rows** against {q:,} benchmark questions: wall", *cells("audit.wall_s", "audit_nodup.wall_s", "datasketch.wall_s")],
            ["CPU of the process tree", *cells("audit.cpu_s", "audit_nodup.cpu_s", "datasketch.cpu_s")],
            ["rows per wall second", *cells("audit.rows_per_s", "audit_nodup.rows_per_s", "datasketch.rows_per_s")],
            ["the loop's wall time / ours, per round", *cells("datasketch_vs_audit.x", "", "")],
            ["the loop's own clock: building its LSH / querying the rows", "", "",
             " / ".join(cells("datasketch.index_s", "datasketch.loop_s"))],
            [f"peak RSS of the process tree, {n:,} rows", *cells("audit.rss_mb", "audit_nodup.rss_mb", "datasketch.rss_mb")],
            [f"peak RSS of the process tree, {small:,} rows", *cells("audit_small.rss_mb", "audit_small_nodup.rss_mb", "")],
            [f"growth from {small:,} to {n:,} rows", *cells("audit.rss_growth_mb", "audit_nodup.rss_growth_mb", "")],
            [f"planted benchmark rows found (of {i[f'planted_rows{sfx}']:,})", c[f"audit.found_planted{sfx}"],
             f"the same rows: {plain(c[f'audit_nodup.same_contaminated_rows{sfx}'])}", c[f"datasketch.found_planted{sfx}"]],
            ["clean rows flagged", c[f"audit.flagged_clean{sfx}"], "", c[f"datasketch.flagged_clean{sfx}"]],
        ]  # fmt: skip
    if "fixed.wall_s" in f:
        rows.append([f"the command on {i['fixed_rows']:,} rows (its fixed cost: start-up, benchmark index)",
                     f"{span(f['fixed.wall_s'])}, {span(f['fixed.rss_mb'])}", "", ""])  # fmt: skip
    head = [
        "",
        "`audit -j 2` (every check but rollouts)",
        "`audit -j 2 --no-duplicates`",
        "datasketch LSH loop",
    ]
    return table(head, rows, "lrrr") + ["", meta_line(r, "audit")]


def t_serve_stacks(r: Results) -> list[str]:
    s = r["serve_stacks"]["figures"]
    labels = {"asgi": "plain ASGI (chosen)", "asgi-inline": "plain ASGI, all grading inline", "starlette": "Starlette",
              "fastapi": "FastAPI"}  # fmt: skip
    rows = []
    for stack, label in labels.items():
        cells = [label]
        for c in (16, 64):
            k = f"c{c}.{stack}"
            cells += [
                span(s[k + ".rps"], False),
                span(s[k + ".p99_ms"], False),
                span(s[k + ".per_cpu_s"], False),
            ]
        rows.append(cells)
    head = [
        "stack",
        "req/s, 16 clients",
        "p99 ms",
        "req per CPU s",
        "req/s, 64 clients",
        "p99 ms",
        "req per CPU s",
    ]
    return table(head, rows, "lrrrrrr") + ["", meta_line(r, "serve_stacks")]


def t_parents(r: Results) -> list[str]:
    """Where a multi-process command's CPU goes: its own process against its workers."""
    rows = []
    for bench, leg, suffix, label in (
        ("prepare", "w2", "", "`prepare --workers 2`"),
        ("prepare", "w2", "@full", "`prepare --workers 2`"),
        ("validate", "w2", "", "`validate --workers 2`"),
        ("rescore", "w2", "", "`rescore --workers 2`"),
        ("rescore", "join_w2", "", "`rescore --rows --workers 2`"),
        ("audit", "audit", "", "`audit -j 2`"),
        ("audit", "audit", "@full", "`audit -j 2`"),
    ):
        f = r.get(bench, {}).get("figures", {})
        if f"{leg}.parent_cpu_s{suffix}" not in f:
            continue
        n = r[bench]["inputs"].get(f"rows{suffix}", r[bench]["inputs"].get("rows"))
        rows.append(
            [f"{label}, {n:,} rows"]
            + [span(f[f"{leg}.{k}{suffix}"]) for k in ("wall_s", "cpu_s", "parent_cpu_s", "children_cpu_s")]
        )
    head = ["command", "wall", "CPU, whole tree", "CPU, its own process", "CPU, its workers"]
    return table(head, rows, "lrrrr")


def t_ray_commands(r: Results) -> list[str]:
    """Every command on the engine with `--address` on a cluster kept up (bench_cluster's engine legs): its
    fixed cost (200 rows, whole command) against its local twin's, the whole command on the bench's rows, and
    Ray's per-worker rate beyond the fixed cost against a local worker's."""
    f = r["cluster"]["figures"]
    rows_n = r["cluster"]["inputs"].get("engine.rows")
    n = r["cluster"]["inputs"].get("engine.workers", 2)
    commands = [k.split(".")[1] for k in f if k.startswith("engine.") and k.endswith(".address_fixed_s")]

    def cell(key: str, unit: bool = True) -> str:
        return span(f[key], unit) if key in f else "n/a"

    rows = [
        [f"`{c}`", cell(f"engine.{c}.ray{n}_small.wall_s"), cell(f"engine.{c}.w{n}_small.wall_s"),
         cell(f"engine.{c}.ray{n}.wall_s"), cell(f"engine.{c}.w{n}.wall_s"),
         cell(f"engine.{c}.ray_vs_local.per_worker_x")]
        for c in commands
    ]  # fmt: skip
    head = ["command", "`--address`, 200 rows (target ≤ 3 s)", f"`--workers {n}`, 200 rows",
            f"`--address`, {rows_n:,} rows" if rows_n else "`--address`, the bench's rows",
            f"`--workers {n}`, the same", "Ray's per-worker rate / a local worker's (target ≥ 0.9x)"]  # fmt: skip
    return table(head, rows, "lrrrrr") + ["", meta_line(r, "cluster")]


TABLES: dict[str, Callable[[Results], list[str]]] = {
    "grader": t_grader,
    "readme-modes": t_readme_modes,
    "commands": t_commands,
    "targets": t_targets,
    "memory": t_memory,
    "serve": t_serve,
    "gym": t_gym,
    "ray": t_ray,
    "ray-commands": t_ray_commands,
    "load-prepared": t_load_prepared,
    "passrates": t_passrates,
    "report": t_report,
    "convert": t_convert,
    "audit": t_audit,
    "serve-stacks": t_serve_stacks,
    "parents": t_parents,
}


# ---- regions --------------------------------------------------------------------------------------------


def render(spec: str, results: Results) -> str:
    kind, _, arg = spec.strip().partition(" ")
    arg = arg.strip()
    if kind == "fig":
        return span(figure(results, arg))
    if kind in ("fig.min", "fig.max", "fig.median"):
        f = figure(results, arg)
        return with_unit(num(f[kind[4:]], f["unit"]), f["unit"])
    if kind == "input":
        return plain(value(results, arg, "inputs"))
    if kind == "check":
        return plain(value(results, arg, "checks"))
    if kind == "meta":
        return meta_line(results, *arg.split())
    if kind == "table":
        if arg not in TABLES:
            raise Missing(f"no table {arg!r} (have: {', '.join(TABLES)})")
        try:
            return "\n" + "\n".join(TABLES[arg](results)) + "\n"
        except KeyError as exc:
            raise Missing(f"table {arg!r}: a figure it shows is missing from bench/results ({exc})") from exc
    raise Missing(f"unknown region kind {kind!r} in <!-- bench:{spec} -->")


def rewrite(text: str, results: Results) -> tuple[str, list[str]]:
    """(text with every region re-rendered, the problems: names missing from the results)."""
    problems: list[str] = []

    def sub(m: re.Match[str]) -> str:
        try:
            body = render(m.group("spec"), results)
        except Missing as exc:
            problems.append(f"<!-- bench:{m.group('spec')} -->: {exc}")
            return m.group(0)
        return f"<!-- bench:{m.group('spec')} -->{body}<!-- /bench -->"

    return REGION.sub(sub, text), problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 when a region is not up to date"
    )
    ap.add_argument("--results", default=str(RESULTS), help="directory of result files [bench/results]")
    args = ap.parse_args(argv)
    results = load(Path(args.results))
    stale, problems = [], []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        new, probs = rewrite(text, results)
        problems += [f"{path.relative_to(REPO)}: {p}" for p in probs]
        if new != text:
            stale.append(str(path.relative_to(REPO)))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for p in problems:
        print(p, file=sys.stderr)
    if args.check and stale:
        print(f"figures not as rendered from bench/results: {', '.join(stale)} (run: python bench/render.py)",
              file=sys.stderr)  # fmt: skip
    elif stale:
        print(f"rewrote {', '.join(stale)}")
    return 1 if problems or (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
