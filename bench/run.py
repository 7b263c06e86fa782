"""`make bench`: every benchmark in its own process, on synthetic data shaped like the real dataset, every figure
next to a baseline measured in the same run.

Baselines: NeMo Gym 0.7.0's own functions for each grading mode and its verify path for `rescore` (loaded from
its wheel in bench/.cache/site, `make bench-deps`; bench/nemo_gym_ref.py), the read-serialise floor (same JSON
library) for rescore and prepare, the bare read for validate, and an earlier revision of this package with
--baseline-rev. Timing thresholds live here, never in unit tests.

    python bench/run.py [--scale 0.5] [--full] [--only bench_rescore] [--baseline-rev REV]
                        [--json] [--save results.json] [--markdown] [--from results.json]

--full adds the peak-memory runs at full size (685,573 rows; minutes). --markdown prints the README's performance
table (from this run, or from a saved --save file with --from).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FULL_ROWS = 685_573

BENCHES = [
    # (module, rows at scale 1.0, what it measures)
    ("bench_grader", 20_000, "grading modes vs NeMo Gym 0.7.0's functions, English and multilingual"),
    ("bench_rescore", 100_000, "rescore end to end vs NeMo Gym's verify path and the floor; workers"),
    ("bench_robust", 50_000, "robust mode, rows/s (target >= 20,000); NeMo Gym's md reader alongside"),
    ("bench_validate", 100_000, "validate, rows/s (target >= 20,000); the bare read alongside"),
    ("bench_prepare", 100_000, "prepare vs read-parse-serialise floor (target <= 3x), peak memory"),
    ("bench_convert", 100_000, "convert (Parquet in) vs read+serialise baseline, rows/s (target >= 20,000)"),
    ("bench_report", 100_000, "report (one pass + page) vs validate on the same data, peak memory"),
    (
        "bench_serve",
        2_000,
        "serve: HTTP /verify at 1/16/64 clients vs NeMo Gym's own mcqa app served the same way",
    ),
    (
        "bench_cluster",
        50_000,
        "rescore --engine ray (fixed cost, per-worker rate) vs --workers; load_prepared vs datasets",
    ),
    (
        "bench_audit",
        FULL_ROWS,
        "audit vs MMLU + MMLU-Pro + GPQA-shaped files (target <= 60 s on 2 cores), "
        "datasketch's LSH in a loop on the same rows, process-tree peak RSS at two sizes",
    ),
]

CHILD = """
import json, sys
sys.path.insert(0, {here!r})
import {module} as m
res = m.run({rows}, **json.loads({kwargs!r}))
with open("/proc/self/status") as fh:  # this process's own peak (ru_maxrss would include the parent's at fork)
    hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
res["_peak_rss_mb"] = round(hwm / 1024, 1)
print("@@RESULT@@" + json.dumps(res))
"""


def run_one(module: str, rows: int, kwargs: dict | None = None) -> dict:
    code = CHILD.format(here=str(HERE), module=module, rows=rows, kwargs=json.dumps(kwargs or {}))
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {
            "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed",
            "_wall_s": wall,
        }
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@"))
    res = json.loads(line[len("@@RESULT@@") :])
    res["_wall_s"] = round(wall, 1)
    return res


def machine() -> dict:
    """What the numbers were measured on, and how busy it was (load averages before and after)."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every benchmark's row count")
    ap.add_argument("--only", action="append", help="run only this benchmark module (repeatable)")
    ap.add_argument("--full", action="store_true", help=f"peak memory also at {FULL_ROWS:,} rows (minutes)")
    ap.add_argument("--baseline-rev", help="also time rescore on this git revision's package (before/after)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--save", help="write the results as JSON to this file")
    ap.add_argument("--markdown", action="store_true", help="print the README performance table")
    ap.add_argument("--from", dest="load", help="render --markdown from a saved results file; run nothing")
    args = ap.parse_args()
    if args.load:
        print(markdown(json.loads(Path(args.load).read_text())))
        return 0
    results: dict = {"_machine": machine()}
    for module, rows, what in BENCHES:
        if args.only and module not in args.only:
            continue
        n = max(1000, int(rows * args.scale))
        if args.full and module == "bench_prepare":
            n = FULL_ROWS  # its peak memory at full size (and at a quarter of it)
        kwargs = _kwargs(module, n, args)
        if not args.json:
            print(f"== {module} ({n} rows): {what}", flush=True)
        res = run_one(module, n, kwargs)
        results[module] = res
        if not args.json:
            print(json.dumps(res, indent=2), flush=True)
    results["_machine"]["load_after"] = os.getloadavg()
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=2) + "\n")
    if args.json:
        print(json.dumps(results, indent=2))
    elif args.markdown:
        print()
        print(markdown(results))
    else:
        print()
        print(summary_table(results))
    return 1 if any(isinstance(r, dict) and "error" in r for r in results.values()) else 0


def _kwargs(module: str, n: int, args: argparse.Namespace) -> dict:
    if module == "bench_grader" and args.baseline_rev:
        return {"baseline_rev": args.baseline_rev}
    if module == "bench_rescore":
        return {"baseline_rev": args.baseline_rev, "memory_rows": [n] + ([FULL_ROWS] if args.full else [])}
    if module == "bench_audit":
        return {"subset": max(1000, int(50_000 * args.scale))}
    return {}


# ---- rendering ------------------------------------------------------------------------------------------


def _x(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def _n(v: float | None) -> str:
    return f"{v:,.0f}" if isinstance(v, (int, float)) else "n/a"


def rows_of(results: dict) -> list[tuple[str, str, str, str, str]]:
    """(stage, ours, baseline, ratio, baseline is) for every measured stage."""
    out: list[tuple[str, str, str, str, str]] = []
    g = results.get("bench_grader") or {}
    for key, r in g.items():
        if key.startswith("_") or not isinstance(r, dict):
            continue
        lang, mode = key.split(":", 1)
        label = f"extract {mode} ({'multilingual' if lang == 'multi' else 'English'})"
        base = r.get("nemo_gym_rows_per_cpu_s")
        out.append((label, _n(r["rows_per_cpu_s"]), _n(base), _x(r["rows_per_cpu_s"], base),
                    f"NeMo Gym `{r.get('nemo_gym_function', 'n/a')}`"))  # fmt: skip
    b = g.get("_baseline") or {}
    for key, before in b.items():
        if ":" in key and isinstance(g.get(key), dict):
            lang, mode = key.split(":", 1)
            ours = g[key]["rows_per_cpu_s"]
            out.append((f"extract {mode} ({'multilingual' if lang == 'multi' else 'English'})", _n(ours),
                        _n(before), _x(ours, before), f"this package at {b['rev']} (before/after)"))  # fmt: skip
    for key, r in g.items():
        if key.startswith("_") or not isinstance(r, dict):
            continue
        lang, mode = key.split(":", 1)
        base = r.get("nemo_gym_grade_rows_per_cpu_s")
        out.append((f"whole grade_text, {mode} ({lang})", _n(r["grade_text_rows_per_cpu_s"]), _n(base),
                    _x(r["grade_text_rows_per_cpu_s"], base), "NeMo Gym verify() grading, models stubbed"))  # fmt: skip
    out += _rescore_rows(results.get("bench_rescore") or {})
    if (results.get("bench_serve") or {}).get("clients"):
        from bench_serve import serve_rows

        out += serve_rows(results["bench_serve"])
    rb = results.get("bench_robust") or {}
    if rb.get("rows_per_s"):
        out.append(("extract robust (all formats)", _n(rb["rows_per_s"]), _n(rb.get("nemo_gym_md_rows_per_s")),
                    _x(rb["rows_per_s"], rb.get("nemo_gym_md_rows_per_s")),
                    "NeMo Gym's md reader on the same texts (fewer formats); target 20,000"))  # fmt: skip
    v = results.get("bench_validate") or {}
    if v.get("rows_per_cpu_s"):
        out.append(("validate (Parquet, 10 options)", _n(v["rows_per_cpu_s"]), _n(v.get("read_floor_rows_per_cpu_s")),
                    _x(v["rows_per_cpu_s"], v.get("read_floor_rows_per_cpu_s")), "bare read of the same files; target 20,000"))  # fmt: skip
    p = results.get("bench_prepare") or {}
    if p.get("prepare_rows_per_s"):
        out.append(("prepare (Parquet in, JSONL out)", _n(p["prepare_rows_per_s"]), _n(p["floor_rows_per_s"]),
                    _x(p["prepare_rows_per_s"], p["floor_rows_per_s"]), "read-parse-serialise floor (target >= 0.33x)"))  # fmt: skip
    for w, x in (p.get("workers") or {}).items():
        n, floor = p["rows"], p["floor_seconds"]
        for what in ("prepare", "validate"):
            out.append((f"{what} --workers {w} (wall; Parquet in)", _n(n / x[f"{what}_seconds"]), _n(n / floor),
                        f"{x[f'{what}_vs_floor']:.2f}x time",
                        "one-core read + orjson serialise floor, same file (targets: prepare <= 1.2x, validate <= 0.6x "
                        "with 2 workers)"))  # fmt: skip
    cv = results.get("bench_convert") or {}
    for label, x in (
        ("convert (Parquet, 4-10 options, 2 templates)", cv),
        ("convert (Parquet, MMLU 4 options)", cv.get("mmlu_4") or {}),
    ):
        if "convert_rows_per_cpu_s" in x:
            out.append((label, _n(x["convert_rows_per_cpu_s"]), _n(x["baseline_rows_per_cpu_s"]),
                        _x(x["convert_rows_per_cpu_s"], x["baseline_rows_per_cpu_s"]),
                        "read + orjson of the same file; target 20,000 rows/s"))  # fmt: skip
    out += cluster_rows(results.get("bench_cluster") or {})
    out += _audit_rows(results.get("bench_audit") or {})
    rp = results.get("bench_report") or {}
    if "report_rows_per_s" in rp:
        out.append(("report (Parquet, one pass + HTML page)", _n(rp["report_rows_per_s"]), _n(rp["validate_rows_per_s"]),
                    _x(rp["report_rows_per_s"], rp["validate_rows_per_s"]), "validate on the same data"))  # fmt: skip
    return out


def _rescore_rows(r: dict) -> list[tuple[str, str, str, str, str]]:
    if not r.get("ours_rows_per_cpu_s"):
        return []
    ours = r["ours_rows_per_cpu_s"]
    out = [
        ("rescore end to end, 1 process", _n(ours), _n(r.get("nemo_gym_rows_per_cpu_s")),
         _x(ours, r.get("nemo_gym_rows_per_cpu_s")), "NeMo Gym request model + verify() + response JSON, no HTTP"),
        ("rescore end to end, 1 process", _n(ours), _n(r.get("floor_rows_per_cpu_s")),
         _x(ours, r.get("floor_rows_per_cpu_s")), "read + orjson loads/dumps + write floor"),
    ]  # fmt: skip
    b = r.get("baseline") or {}
    if b.get("rows_per_cpu_s"):
        out.append(("rescore end to end, 1 process", _n(ours), _n(b["rows_per_cpu_s"]), _x(ours, b["rows_per_cpu_s"]),
                    f"this package at {b['rev']} (before/after)"))  # fmt: skip
    wall = r.get("ours_rows_per_wall_s")
    w = r.get("workers")
    if isinstance(w, dict):
        for k, rate in w.items():
            out.append(
                (f"rescore --workers {k} (wall)", _n(rate), _n(wall), _x(rate, wall), "1 process, wall-clock")
            )
        if w.get("1") and w.get("2"):  # the target's own comparison: the command with 2 workers against 1
            out.append(("rescore --workers 2 (wall)", _n(w["2"]), _n(w["1"]), _x(w["2"], w["1"]),
                        "rescore --workers 1, the same command (start-up included); target 1.8x"))  # fmt: skip
    else:
        out.append(
            ("rescore --workers 2 (wall)", "n/a", _n(wall), "n/a", "no --workers option in this build")
        )
    return out


def cluster_rows(r: dict) -> list[tuple[str, str, str, str, str]]:
    """bench_cluster: Ray's per-worker rate beyond its fixed cost against a --workers worker's, its fixed
    costs (seconds, as "rows/s" columns cannot say them), and load_prepared against datasets."""
    out: list[tuple[str, str, str, str, str]] = []
    ray = r.get("ray") or {}
    for n in (1, 2):
        x, w = ray.get(f"ray_{n}") or {}, ray.get(f"workers_{n}") or {}
        if "error" in x:
            out.append((f"rescore --engine ray, {n} worker(s)", "error", "n/a", "n/a", x["error"][:80]))
        if not x.get("per_worker_rows_per_s"):
            continue
        out.append((f"rescore --engine ray, {n} worker(s): per worker, beyond the fixed cost",
                    _n(x["per_worker_rows_per_s"]), _n(w.get("per_worker_rows_per_s")),
                    _x(x["per_worker_rows_per_s"], w.get("per_worker_rows_per_s")),
                    f"rescore --workers {n}, per worker beyond its own fixed cost (target >= 0.8x)"))  # fmt: skip
        out.append((f"rescore --engine ray, {n} worker(s): fixed cost per job (s)", f"{x['fixed_s']:.2f}",
                    f"{w.get('fixed_s', 0):.2f}", _x(x["fixed_s"], w.get("fixed_s")),
                    f"--workers {n} command on 200 rows (s); Ray's start {x['ray_start_s']:.1f} s and first job "
                    f"{x['first_job_s']:.1f} s apart; whole ray command {x['command_s']:.1f} s vs "
                    f"{w.get('command_s', 0):.1f} s"))  # fmt: skip
    lp = r.get("load_prepared") or {}
    ds, ours = lp.get("datasets") or {}, lp.get("load_prepared") or {}
    if "warm_s" in ds and "warm_s" in ours:
        warm = min(ours["warm_s"], ours["warm2_s"])
        out.append((f"load_prepared warm ({lp['rows']:,} rows; s)", f"{warm:.4f}", f"{ds['warm_s']:.4f}",
                    _x(warm, ds["warm_s"]), "datasets.load_dataset('json') from its own cache (target <= 3x)"))  # fmt: skip
        out.append((f"load_prepared cold ({lp['rows']:,} rows; s)", f"{ours['cold_s']:.2f}", f"{ds['cold_s']:.2f}",
                    _x(ours["cold_s"], ds["cold_s"]),
                    "datasets.load_dataset('json'), empty cache (target < 1x); ours verifies every file too"))  # fmt: skip
    return out


def _audit_rows(a: dict) -> list[tuple[str, str, str, str, str]]:
    if not a.get("audit_rows_per_s"):
        return []
    full, sub = a["audit"], a["subset"]
    base = sub["datasketch_loop"]
    out = [(f"audit, {a['rows']:,} rows vs {a['benchmark_questions']:,} questions, -j {a['workers']} (wall)",
            _n(a["audit_rows_per_s"]), "n/a", "n/a",
            f"{full['wall_s']:.0f} s wall, {full['cpu_s']:.0f} s CPU (all checks but rollouts); target <= 60 s")]  # fmt: skip
    if base.get("rows_per_s"):
        ours = a["subset"]["rows"] / sub["ours_1_worker"]["wall_s"]
        theirs = a["subset"]["rows"] / base["wall_s"]
        out.append((f"audit -j 1, first {sub['rows']:,} rows, end to end (wall)", _n(ours), _n(theirs), _x(ours, theirs),
                    "datasketch MinHashLSH (64 perm.) built and queried in a loop, same rows and benchmark files; "
                    "near-duplicates only"))  # fmt: skip
        out.append((f"audit -j 1, first {sub['rows']:,} rows, rows after the index (wall)", _n(ours), _n(base["rows_per_s"]),
                    _x(ours, base["rows_per_s"]), "the same loop without its index build (ours includes it)"))  # fmt: skip
        if sub["ours_1_worker"].get("cpu_s") and base.get("cpu_s"):
            ours_cpu = a["subset"]["rows"] / sub["ours_1_worker"]["cpu_s"]
            theirs_cpu = a["subset"]["rows"] / base["cpu_s"]
            out.append((f"audit -j 1, first {sub['rows']:,} rows, end to end (per CPU second)", _n(ours_cpu), _n(theirs_cpu),
                        _x(ours_cpu, theirs_cpu), "the same loop, CPU time of each process tree (less moved by other load)"))  # fmt: skip
    return out


def summary_table(results: dict) -> str:
    lines = [f"{'stage':58} {'ours/s':>9} {'base/s':>9} {'ratio':>7}  baseline is"]
    for stage, ours, base, ratio, what in rows_of(results):
        lines.append(f"{stage:58} {ours:>9} {base:>9} {ratio:>7}  {what}")
    lines += _memory_lines(results)
    m = results.get("_machine") or {}
    lines.append(
        f"machine: {m.get('cpu')}, {m.get('cores')} cores, load {m.get('load')} -> {m.get('load_after')}"
    )
    return "\n".join(lines)


def _memory_lines(results: dict) -> list[str]:
    lines = []
    for mem in (results.get("bench_rescore") or {}).get("memory") or []:
        lines.append(
            f"rescore peak RSS at {mem['rows']:,} rows: {mem['requests_peak_rss_mb']} MB (verify requests), "
            f"{mem['rollouts_join_peak_rss_mb']} MB (rollouts joined with --rows: the join index grows with the dataset)"
        )
    am = (results.get("bench_audit") or {}).get("memory")
    if am:
        (a, b), (d1, d2), (c1, c2) = am["rows"], am["with_duplicates_mb"], am["contamination_only_mb"]
        lines.append(
            f"audit process-tree peak RSS at {a:,} / {b:,} rows: {d1} / {d2} MB (all checks; the duplicate index "
            f"grows with rows), {c1} / {c2} MB (--no-duplicates: benchmark index in memory, dataset streamed)"
        )
    p = results.get("bench_prepare") or {}
    for mem in p.get("memory") or []:
        lines.append(f"prepare Python peak at {mem['rows']:,} rows: {mem['python_peak_mib']} MiB")
    return lines


def markdown(results: dict) -> str:
    """The README's performance table: every figure next to its same-run baseline, and what produced it."""
    m = results.get("_machine") or {}
    busy = max((m.get("load") or [0])[0], (m.get("load_after") or [0])[0]) > (m.get("cores") or 1) * 0.5
    out = [
        "| stage | ours (rows/s) | baseline (rows/s) | ratio | baseline, measured in the same run |",
        "|---|---:|---:|---:|---|",
    ]
    out += [f"| {s} | {o} | {b} | {r} | {w} |" for s, o, b, r, w in rows_of(results)]
    out.append("")
    out += [f"- {line}" for line in _memory_lines(results)]
    out.append(
        f"- Produced by `make bench` (`python bench/run.py --markdown`) on {m.get('cpu')}, {m.get('cores')} cores, "
        f"Python {m.get('python')}; load average {_load(m.get('load'))} before, {_load(m.get('load_after'))} after"
        + (" — **the machine was busy: figures are noisy**." if busy else ".")
        + " Single-process rates are rows per CPU second of the measuring process; workers and Ray are wall-clock."
    )
    return "\n".join(out)


def _load(v) -> str:
    return f"{v[0]:.1f}" if v else "n/a"


if __name__ == "__main__":
    sys.exit(main())
