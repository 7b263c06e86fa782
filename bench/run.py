"""`make bench`: every benchmark in its own process, on synthetic data shaped like the real dataset.

Each benchmark module exposes run(rows) -> dict. They run one after the other in fresh processes (so each
peak RSS is its own), and the report puts each stage next to a baseline measured in the same run: the bare
read-parse-serialise floor for prepare, NeMo Gym's own per-mode speeds for the grader modes, the issue's
floor for validate and robust. Timing thresholds live here, never in unit tests.

    python bench/run.py [--scale 0.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES = [
    # (module, rows at scale 1.0, what it measures)
    ("bench_grader", 100_000, "grading modes, rows/s vs NeMo Gym 0.7.0 (issue 2 targets)"),
    ("bench_robust", 50_000, "robust mode, rows/s (target >= 20,000)"),
    ("bench_validate", 100_000, "validate, rows/s (target >= 20,000)"),
    ("bench_prepare", 100_000, "prepare vs read-parse-serialise floor (target <= 3x), peak memory"),
    ("bench_convert", 100_000, "convert (Parquet in) vs read+serialise baseline, rows/s (target >= 20,000)"),
    ("bench_report", 100_000, "report (one pass + page) vs validate on the same data, peak memory"),
]


def run_one(module: str, rows: int) -> dict:
    code = (
        "import json, sys, resource\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        f"import {module} as m\n"
        f"res = m.run({rows})\n"
        "res['_peak_rss_mb'] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)\n"
        "print('@@RESULT@@' + json.dumps(res))\n"
    )
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every benchmark's row count")
    ap.add_argument("--only", action="append", help="run only this benchmark module (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    results = {}
    for module, rows, what in BENCHES:
        if args.only and module not in args.only:
            continue
        n = max(1000, int(rows * args.scale))
        if not args.json:
            print(f"== {module} ({n} rows): {what}", flush=True)
        res = run_one(module, n)
        results[module] = res
        if not args.json:
            print(json.dumps(res, indent=2), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print()
        print(summary_table(results))
    return 1 if any("error" in r for r in results.values()) else 0


def _rate(res: dict, *keys: str):
    for k in keys:
        if isinstance(res.get(k), (int, float)):
            return res[k]
    return None


def summary_table(results: dict) -> str:
    """One line per measured stage: throughput, its baseline from the same run, the ratio, peak RSS."""
    lines = [f"{'stage':44} {'rows/s':>10} {'baseline':>10} {'ratio':>7}  baseline is"]
    g = results.get("bench_grader") or {}
    for mode, r in g.items():
        if isinstance(r, dict) and "rows_per_s" in r:
            rate, base = r["rows_per_s"], r["target_rows_per_s"]
            whole = r.get("grade_text_rows_per_s")
            extra = f" (whole grade_text call: {whole:,.0f} rows/s)" if whole else ""
            lines.append(
                f"{'grader ' + mode:44} {rate:>10,.0f} {base:>10,.0f} {rate / base:>6.2f}x  NeMo Gym 0.7.0{extra}"
            )
    rb = results.get("bench_robust") or {}
    rate = _rate(rb, "rows_per_cpu_s", "rows_per_s")
    if rate:
        lines.append(
            f"{'grader robust':44} {rate:>10,.0f} {20000:>10,.0f} {rate / 20000:>6.2f}x  issue 7 floor"
        )
    v = results.get("bench_validate") or {}
    rate = _rate(v, "rows_per_cpu_s", "rows_per_s")
    if rate:
        lines.append(
            f"{'validate (Parquet, 10 options)':44} {rate:>10,.0f} {20000:>10,.0f} {rate / 20000:>6.2f}x  issue 3 floor"
        )
    p = results.get("bench_prepare") or {}
    if "prepare_rows_per_s" in p:
        rate, base = p["prepare_rows_per_s"], p["floor_rows_per_s"]
        lines.append(
            f"{'prepare (Parquet in, JSONL out)':44} {rate:>10,.0f} {base:>10,.0f} {base / rate:>6.2f}x  "
            "read-parse-serialise floor (time ratio, target <= 3x)"
        )
    cv = results.get("bench_convert") or {}
    for label, x in (
        ("convert (Parquet, 4-10 options, 2 templates)", cv),
        ("convert (Parquet, MMLU 4 options)", cv.get("mmlu_4") or {}),
    ):
        if "convert_rows_per_cpu_s" not in x:
            continue
        # CPU seconds of this one-threaded process: on a shared machine, wall time also counts other jobs
        rate, base = x["convert_rows_per_cpu_s"], x["baseline_rows_per_cpu_s"]
        lines.append(
            f"{label:44} {rate:>10,.0f} {base:>10,.0f} {rate / base:>6.2f}x  read + orjson of the same file, "
            f"rows per CPU second (floor {cv['floor_rows_per_s']:,}: {rate / cv['floor_rows_per_s']:.2f}x; "
            f"wall {x['convert_rows_per_s']:,} vs {x['baseline_rows_per_s']:,} rows/s)"
        )
    r = results.get("bench_report") or {}
    if "report_rows_per_s" in r:
        lines.append(
            f"{'report (Parquet, one pass + HTML page)':44} {r['report_rows_per_s']:>10,} "
            f"{r['validate_rows_per_s']:>10,} {r['ratio']:>6.2f}x  validate on the same data, same run "
            f"(time ratio; page {r['page_bytes'] / 1024:,.0f} KB)"
        )
    mem = [(k, r.get("_peak_rss_mb")) for k, r in results.items() if isinstance(r, dict)]
    lines.append(
        "peak RSS per benchmark process, data generation included (MB): "
        + ", ".join(f"{k} {m}" for k, m in mem if m)
    )
    mems = p.get("memory") if isinstance(p, dict) else None
    if mems and len(mems) == 2:
        small, large = mems
        per_row = (
            (large["python_peak_mib"] - small["python_peak_mib"]) * 2**20 / (large["rows"] - small["rows"])
        )
        lines.append(
            f"prepare Python peak: {small['python_peak_mib']} MiB at {small['rows']:,} rows, "
            f"{large['python_peak_mib']} MiB at {large['rows']:,} rows: {per_row:.0f} bytes/row, mostly the "
            "duplicate index (one uuid hash and one prompt hash per row); rows themselves are streamed"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
